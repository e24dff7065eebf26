// sglang_v2.cu — the `sglang-v2` baseline arm: our own implementation of the
// SGLang DeepSeek-V4 top-K "v2" design (plan + transform), written from the
// description in docs/notes-sglang.md. Raw indices out (no page-table
// transform).
//
// One call is up to three launches on one stream, all of them timed:
//   1. sglang_v2_plan (one CTA): the per-batch plan in the workspace: the
//      long-row threshold (the smallest of 64K, 96K, 128K, 192K, 256K with at
//      most SG_POOL rows longer; 256K when none is), the (row, n) list of the
//      rows longer than it, and the fallback counter reset to 0;
//   2. sglang_v2_cluster8, only when the host routes long rows to clusters
//      (max n > 65536 and B <= 128): persistent clusters of 8 CTAs, grid
//      (min(B, 30), 8), loop over the long rows; each CTA histograms its
//      eighth of the row on 10-bit coarse bins, a one-shot DSMEM all-reduce
//      sums the eight histograms (rank r owns bins [128r, 128r + 128)),
//      every CTA collects its chunk (winner slots and tie slots reserved in
//      rank 0's counters through DSMEM atomics, ties pushed into rank 0's
//      buffer) and rank 0 resolves the ties;
//   3. the per-row kernel, one 1024-thread CTA per row, specialised by max n:
//      sglang_v2_reg2 (n <= 8192: 2 float4 per thread held in registers, the
//      row is read once), sglang_v2_reg4 (n <= 16384: 4 float4), else
//      sglang_v2_stream (a histogram pass and a collect pass over the row,
//      the next float4 prefetched in registers). With `skip_long` it leaves
//      the rows longer than the plan's threshold to the cluster kernel.
//
// Selection, every path: a histogram of the coarse key (the top 12 bits of
// the fp16 ordered key, 4096 bins; 10 bits in the cluster), the threshold
// bin B with `above` elements in higher bins (need = k - above of B's
// elements are selected), a collect pass that emits every element above B
// and puts B's elements (the ties) into a buffer of SG_TIE_CAP (key, index)
// pairs, then sg_handle_tie: all ties needed → emit them all; at most
// SG_RANK_MAX ties → rank each by (key desc, index asc) with warp ballots;
// otherwise 8-bit radix rounds over the full fp32 key of the tie set, equal
// full keys taking the last slots in atomic order.
//
// The exact fallback (not in the published design, which drops the ties
// beyond its buffer and can leave slots unwritten): when B holds more than
// SG_TIE_CAP elements, the row first narrows its candidate set with 8-bit
// rounds over the fp32 key (over its registers, its row, or the cluster's
// chunks with a DSMEM all-reduce per round) until the set fits the buffer,
// is needed whole, or is a single key; the same collect then runs with the
// narrowed test, and handle_tie on what it buffered. Every such row adds 1
// to workspace word SG_WS_FALLBACK, which the host reads after the call.
//
// Positions >= n are never read: full float4s are loaded as vectors, the
// n & 3 tail with scalar loads.

#include "prim/common.cuh"

#define SG_BLK 1024
#define SG_NW 32                  // warps per CTA
#define SG_BINS 4096              // per-row coarse bins (12-bit key)
#define SG_CL_BINS 1024           // cluster coarse bins (10-bit key)
#define SG_CL_SIZE 8              // CTAs per cluster
#define SG_DIGIT_BINS 256         // 8-bit rounds (fallback narrowing, tie radix)
#define SG_TIE_CAP 1024           // tie buffer: (key, index) pairs
#define SG_RANK_MAX 128           // ties ranked by ballots up to this many
#define SG_SMEM_BYTES 24832       // dynamic shared memory of every entry
#define SG_WS_FALLBACK 0          // workspace word: rows that took the fallback
#define SG_WS_META 4              // workspace words: {threshold, long rows}, then (row, n) each
#define SG_POOL 30                // cluster pool: long rows the threshold aims for
#define SG_NCAND 5                // threshold candidates

// Path trace for the host emulator (tests/ss_emu/sglang_main.cpp); nothing
// on the GPU.
#define SG_TR_TRIVIAL 1u      // n <= k: identity then -1
#define SG_TR_REG 2u          // register path
#define SG_TR_STREAM 4u       // streaming path
#define SG_TR_CLUSTER 8u      // cluster path
#define SG_TR_FALLBACK 16u    // threshold bin > SG_TIE_CAP: the exact fallback
#define SG_TR_TIE_ALL 32u     // handle_tie: every tie needed
#define SG_TR_TIE_RANK 64u    // handle_tie: ballot ranks
#define SG_TR_TIE_RADIX 128u  // handle_tie: radix rounds
#define SG_TR_TIE_EQUAL 256u  // radix rounds ended on equal full keys
#define SG_TR_DIRECT_ALL 512u    // fallback: the narrowed set needed whole
#define SG_TR_DIRECT_EQUAL 1024u // fallback: the narrowed set is one key
#define SG_TR_NARROW 2048u    // fallback: at least one narrowing round
#ifdef SS_EMULATION
#define SG_TRACE(row, bit)                            \
    do {                                              \
        if (threadIdx.x == 0u) ss_emu_trace(row, bit); \
    } while (0)
#define SG_SMEM() (emu_cluster_smem())
template <class T>
inline T* sg_map(T* p, u32 rank) {
    return cluster_map_ptr(p, rank);
}
#else
#define SG_TRACE(row, bit) \
    do {                   \
    } while (0)
extern __shared__ __align__(16) u32 sg_dyn[];
#define SG_SMEM() (sg_dyn)
// Generic address of the same shared object in CTA `rank` of the cluster:
// loads, stores and atomics through it reach that CTA's shared memory.
template <class T>
__device__ __forceinline__ T* sg_map(T* p, u32 rank) {
    u64 remote;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(remote) : "l"(reinterpret_cast<u64>(p)), "r"(rank));
    return reinterpret_cast<T*>(remote);
}
#endif

// ---------------------------------------------------------------------------
// Keys. sg_key is THE float → order mapping of this file (ascending: a larger
// value has a larger key; -0 < +0; every NaN the top key, above +inf, as the
// NaN contract wants). sg_key16 is the 16-bit coarse key, the fp16 (round to
// nearest) ordered key, which is monotone in sg_key: prim's half_key maps any
// NaN to 0xffff, the top, as fkey does.
// ---------------------------------------------------------------------------
__device__ __forceinline__ u32 sg_key(float x) { return fkey(x); }

__device__ __forceinline__ u32 sg_key16(float x) { return half_key(x); }

struct SgCross {
    u32 bin;    // the threshold bin
    u32 above;  // elements in higher bins
    u32 count;  // elements in the bin
};

// The candidate set after the coarse pass and any narrowing rounds: coarse
// bin == bin and, once shift < 32, sg_key >> shift == prefix.
struct SgCut {
    u32 bin;
    u32 shift;
    u32 prefix;
};

// Everything a CTA keeps in shared memory (SG_SMEM_BYTES).
struct SgShared {
    u32 hist[SG_BINS];  // per-row: the coarse histogram; cluster: [0, 1024) this CTA's, [1024, 2048) the sum
    u32 tie_key[SG_TIE_CAP];
    i32 tie_idx[SG_TIE_CAP];
    u32 scan[SG_NW];
    SgCross cross;
    u32 win;      // winner slots handed out
    u32 ntie;     // ties buffered (direct modes: tie slots handed out)
    u32 tie_win;  // handle_tie: slots of the radix rounds' winners
    u32 tie_eq;   // handle_tie: slots of the equal final keys
    u32 cnt[8];   // plan: rows longer than each candidate
    u32 item;     // cluster: the long row this cluster works on
    u32 geo[4];   // cluster: n, f0, f1 of this CTA's chunk of the row, the row
    SgCut cut;    // fallback: the narrowed candidate set
    u32 fb_m;     // fallback: candidates in it
    u32 fb_need;  // fallback: of them selected
};
static_assert(sizeof(SgShared) <= SG_SMEM_BYTES, "SG_SMEM_BYTES must hold SgShared");

// +1: above the cut (selected), 0: in it (a tie), -1: below. CSHIFT: coarse
// key = sg_key16 >> CSHIFT (4: 12 bits, 6: 10 bits).
template <int CSHIFT>
__device__ __forceinline__ int sg_classify(float x, const SgCut& cut) {
    const u32 c = sg_key16(x) >> CSHIFT;
    if (c != cut.bin) return c > cut.bin ? 1 : -1;
    if (cut.shift >= 32u) return 0;
    const u32 p = sg_key(x) >> cut.shift;
    return p > cut.prefix ? 1 : (p == cut.prefix ? 0 : -1);
}

// ---------------------------------------------------------------------------
// Block primitives (SG_BLK threads, all of them call).
// ---------------------------------------------------------------------------
// Inclusive scan of v over the block, the total in *total; ends with a
// barrier, so `scan` may be reused at once.
__device__ __forceinline__ u32 sg_block_scan(u32 v, u32* scan, u32* total) {
    const u32 incl = warp_incl_scan(v);
    if (lane_id() == 31u) scan[warp_id()] = incl;
    __syncthreads();
    if (warp_id() == 0u) scan[lane_id()] = warp_incl_scan(scan[lane_id()]);
    __syncthreads();
    const u32 base = warp_id() == 0u ? 0u : scan[warp_id() - 1u];
    *total = scan[SG_NW - 1];
    __syncthreads();
    return base + incl;
}

// The threshold bin of an ascending histogram of NB bins for target t
// (1 <= t <= total): above < t <= above + count. Thread i owns NB / SG_BLK
// contiguous bins (or one, or none); a block scan gives each the count in
// the bins of higher threads, and the one thread whose bins hold the t-th
// largest walks them down. Result in *res; ends with a barrier.
template <int NB>
__device__ __forceinline__ void sg_crossing(const u32* hist, u32 t, u32* scan, SgCross* res) {
    constexpr u32 SPAN = (NB + SG_BLK - 1) / SG_BLK;
    const u32 first = threadIdx.x * SPAN;
    u32 mine = 0u;
#pragma unroll
    for (u32 j = 0; j < SPAN; ++j)
        if (first + j < (u32)NB) mine += hist[first + j];
    u32 total;
    const u32 incl = sg_block_scan(mine, scan, &total);
    const u32 above = total - incl;  // in the bins of higher threads
    if (above < t && (above + mine >= t || (threadIdx.x == 0u && total < t))) {
        u32 run = above;
        u32 bin = first, count = 0u, at = above;
        for (int j = (int)SPAN - 1; j >= 0; --j) {
            const u32 b = first + (u32)j;
            if (b >= (u32)NB) continue;
            const u32 h = hist[b];
            if (run + h >= t) {
                bin = b;
                count = h;
                at = run;
                break;
            }
            run += h;
        }
        res->bin = bin;
        res->above = at;
        res->count = count;
    }
    __syncthreads();
}

// ---------------------------------------------------------------------------
// Element sources: each calls f(x, position, valid) for every element it
// owns, with a trip count uniform over the block (f may hold warp
// collectives); x is meaningless where !valid.
// ---------------------------------------------------------------------------
__device__ __forceinline__ u32 sg_min(u32 a, u32 b) { return a < b ? a : b; }

__device__ __forceinline__ float sg_f4(const float4& v, u32 c) {
    return c == 0u ? v.x : (c == 1u ? v.y : (c == 2u ? v.z : v.w));
}

__device__ __forceinline__ float4 sg_zero4() {
    float4 z;
    z.x = 0.f;
    z.y = 0.f;
    z.z = 0.f;
    z.w = 0.f;
    return z;
}

// Float4 number i4 of a row of n held in registers: a vector load below
// n >> 2, scalar loads of the n & 3 tail at i4 == n >> 2, zeros beyond
// (masked by position when used).
__device__ __forceinline__ float4 sg_load_reg4(const float* X, u32 i4, u32 n) {
    const u32 nf = n >> 2;
    if (i4 < nf) return ldg_nc_f4(X + (u64)i4 * 4u);
    float4 v = sg_zero4();
    const u32 tail = i4 == nf ? (n & 3u) : 0u;
    const float* p = X + (u64)nf * 4u;
    if (tail > 0u) v.x = ldg_nc_f(p);
    if (tail > 1u) v.y = ldg_nc_f(p + 1);
    if (tail > 2u) v.z = ldg_nc_f(p + 2);
    return v;
}

// A value the compiler must recompute instead of keeping it from an earlier
// use (an empty volatile asm on the GPU).
#ifdef SS_EMULATION
inline u32 sg_opaque(u32 v) { return v; }
#else
__device__ __forceinline__ u32 sg_opaque(u32 v) {
    asm volatile("" : "+r"(v));
    return v;
}
#endif

// Register row: float4 u * SG_BLK + thread of the row, u < VPT. The
// positions are recomputed at every pass: kept from one pass to the next,
// 4·VPT of them beside the 4·VPT values exceed the 32-register budget.
template <int VPT, class F>
__device__ __forceinline__ void sg_reg_each(const float4* v, u32 n, F&& f) {
    const u32 t = sg_opaque(threadIdx.x);
#pragma unroll
    for (u32 u = 0; u < (u32)VPT; ++u) {
        const u32 e = (u * SG_BLK + t) * 4u;
#pragma unroll
        for (u32 c = 0; c < 4u; ++c) f(sg_f4(v[u], c), e + c, e + c < n);
    }
}

// Streaming: the full float4s [f0, f1) of row X, thread-strided (with
// PREFETCH the next float4 is loaded before the current one is used); then,
// with `tail`, the n & 3 elements past the last full float4 (scalar loads,
// threads 0..2).
template <bool PREFETCH, class F>
__device__ __forceinline__ void sg_stream_each(const float* X, u32 n, u32 f0, u32 f1, bool tail, F&& f) {
    if constexpr (PREFETCH) {
        u32 i4 = f0 + threadIdx.x;
        float4 cur = i4 < f1 ? ldg_nc_f4(X + (u64)i4 * 4u) : sg_zero4();
        for (u32 b = f0; b < f1; b += SG_BLK) {  // block-uniform trips
            const u32 i4n = i4 + SG_BLK;
            const float4 nxt = i4n < f1 ? ldg_nc_f4(X + (u64)i4n * 4u) : sg_zero4();
            const bool ok = i4 < f1;
#pragma unroll
            for (u32 c = 0; c < 4u; ++c) f(sg_f4(cur, c), i4 * 4u + c, ok);
            cur = nxt;
            i4 = i4n;
        }
    } else {
        const u32 trips = (f1 - f0 + SG_BLK - 1u) / SG_BLK;
        for (u32 t = 0; t < trips; ++t) {  // block-uniform trips
            const u32 i4 = f0 + t * SG_BLK + threadIdx.x;
            const bool ok = i4 < f1;
            const float4 cur = ok ? ldg_nc_f4(X + (u64)i4 * 4u) : sg_zero4();
#pragma unroll
            for (u32 c = 0; c < 4u; ++c) f(sg_f4(cur, c), i4 * 4u + c, ok);
        }
    }
    if (tail && (n & 3u) != 0u) {  // block-uniform
        const u32 e = (n & ~3u) + threadIdx.x;
        const bool ok = e < n && threadIdx.x < 4u;
        f(ok ? ldg_nc_f(X + e) : 0.f, e, ok);
    }
}

// Streaming as above (no prefetch) over a chunk whose geometry {n, f0, f1}
// is read from shared memory at each use instead of held in registers (the
// cluster's loop state otherwise exceeds the 32-register budget).
template <class F>
__device__ __forceinline__ void sg_stream_each_geo(const float* X, const volatile u32* geo, bool tail, F&& f) {
    const u32 trips = (geo[2] - geo[1] + SG_BLK - 1u) / SG_BLK;
    for (u32 t = 0; t < trips; ++t) {  // block-uniform trips
        const u32 i4 = geo[1] + t * SG_BLK + threadIdx.x;
        const bool ok = i4 < geo[2];
        const float4 cur = ok ? ldg_nc_f4(X + (u64)i4 * 4u) : sg_zero4();
#pragma unroll
        for (u32 c = 0; c < 4u; ++c) f(sg_f4(cur, c), i4 * 4u + c, ok);
    }
    const u32 n = geo[0];
    if (tail && (n & 3u) != 0u) {  // block-uniform
        const u32 e = (n & ~3u) + threadIdx.x;
        const bool ok = e < n && threadIdx.x < 4u;
        f(ok ? ldg_nc_f(X + e) : 0.f, e, ok);
    }
}

// ---------------------------------------------------------------------------
// Collect: one element against the cut. Modes: BUF buffers the ties (at most
// SG_TIE_CAP by construction); ALL takes every tie (the narrowed set is
// needed whole); EQUAL hands the ties the last `need` slots in atomic order
// (the narrowed set is one key). Counters and the tie buffer may be a peer
// CTA's (DSMEM).
// ---------------------------------------------------------------------------
#define SG_BUF 0u
#define SG_ALL 1u
#define SG_EQUAL 2u

__device__ __forceinline__ u32 sg_mode(u32 m, u32 need) {
    return m <= SG_TIE_CAP ? SG_BUF : (m == need ? SG_ALL : SG_EQUAL);
}

__device__ __forceinline__ void sg_emit(int cls, float x, u32 pos, u32 mode, u32 need, u32 k, i32* O, u32* win,
                                        u32* ntie, u32* tkey, i32* tidx) {
    const bool w = cls > 0 || (mode == SG_ALL && cls == 0);
    const u32 s = warp_reserve(w, win);
    if (w && s < k) O[s] = (i32)pos;
    if (mode == SG_ALL) return;
    const bool t = cls == 0;
    const u32 q = warp_reserve(t, ntie);
    if (!t) return;
    if (mode == SG_BUF) {
        if (q < SG_TIE_CAP) {
            tkey[q] = sg_key(x);
            tidx[q] = (i32)pos;
        }
    } else if (q < need) {
        O[k - need + q] = (i32)pos;
    }
}

// ---------------------------------------------------------------------------
// handle_tie: `m` buffered ties (sh.tie_key / sh.tie_idx), `need` of them
// selected into slots [k - need, k). sh.tie_win and sh.tie_eq start at 0.
// ---------------------------------------------------------------------------
__device__ __forceinline__ void sg_handle_tie(SgShared& sh, u32 m, u32 need, u32 k, i32* O, u32 row) {
    const u32 base = k - need;
    if (m == need) {  // every tie fits the remaining slots
        SG_TRACE(row, SG_TR_TIE_ALL);
        for (u32 t = threadIdx.x; t < m; t += SG_BLK) O[base + t] = sh.tie_idx[t];
        return;
    }
    if (m <= SG_RANK_MAX) {
        // Rank of tie t = ties before it in (key desc, index asc); one warp
        // per tie, 32 comparisons per ballot. Ranks are distinct.
        SG_TRACE(row, SG_TR_TIE_RANK);
        for (u32 t = warp_id(); t < m; t += SG_NW) {
            const u32 kt = sh.tie_key[t];
            const i32 it = sh.tie_idx[t];
            u32 rank = 0u;
            for (u32 j0 = 0; j0 < m; j0 += 32u) {
                const u32 j = j0 + lane_id();
                bool before = false;
                if (j < m) {
                    const u32 kj = sh.tie_key[j];
                    before = kj > kt || (kj == kt && sh.tie_idx[j] < it);
                }
                rank += (u32)__popc(__ballot_sync(GVR_FULL_MASK, before));
            }
            if (lane_id() == 0u && rank < need) O[base + rank] = it;
        }
        return;
    }
    // 8-bit radix rounds over the full key; thread t holds tie t (m <= SG_BLK).
    SG_TRACE(row, SG_TR_TIE_RADIX);
    const bool mine = threadIdx.x < m;
    const u32 key = mine ? sh.tie_key[threadIdx.x] : 0u;
    const i32 idx = mine ? sh.tie_idx[threadIdx.x] : -1;
    bool live = mine;
    u32 rneed = need;
    for (u32 shift = 24u;; shift -= 8u) {
        if (threadIdx.x < SG_DIGIT_BINS) sh.hist[threadIdx.x] = 0u;
        __syncthreads();
        const u32 d = (key >> shift) & 0xffu;
        if (live) red_shared_add(&sh.hist[d], 1u);
        __syncthreads();
        sg_crossing<SG_DIGIT_BINS>(sh.hist, rneed, sh.scan, &sh.cross);
        const u32 bin = sh.cross.bin;
        const u32 here = rneed - sh.cross.above;  // still needed from `bin`
        const bool all = sh.cross.count == here;
        const bool w = live && (d > bin || (all && d == bin));
        const u32 s = warp_reserve(w, &sh.tie_win);
        if (w) O[base + s] = idx;
        if (all) return;
        live = live && d == bin;
        if (shift == 0u) {  // equal full keys: any `here` of them
            SG_TRACE(row, SG_TR_TIE_EQUAL);
            const u32 q = warp_reserve(live, &sh.tie_eq);
            if (live && q < here) O[k - here + q] = idx;
            return;
        }
        rneed = here;
    }
}

// ---------------------------------------------------------------------------
// Cluster all-reduce: the sum of every rank's `local` histogram of NB bins
// into every rank's `global`; rank r gathers bins [r·NB/8, (r+1)·NB/8) from
// the 8 CTAs and scatters their sums. Between two cluster barriers.
// ---------------------------------------------------------------------------
template <int NB>
__device__ __forceinline__ void sg_cl_allreduce(u32* local, u32* global, u32 rank) {
    constexpr u32 OWN = NB / SG_CL_SIZE;
    for (u32 b = threadIdx.x; b < OWN; b += SG_BLK) {
        const u32 bin = rank * OWN + b;
        u32 s = 0u;
#pragma unroll
        for (u32 q = 0; q < SG_CL_SIZE; ++q) s += *sg_map(&local[bin], q);
#pragma unroll
        for (u32 q = 0; q < SG_CL_SIZE; ++q) *sg_map(&global[bin], q) = s;
    }
}

// ---------------------------------------------------------------------------
// A stretch of row X that one CTA streams: full float4s [f0, f1), and with
// `tail` the n & 3 elements past the last full float4. PREFETCH: see
// sg_stream_each (the cluster streams without: its loop state beside the
// next float4 exceeds the 32-register budget).
// ---------------------------------------------------------------------------
template <bool PREFETCH>
struct SgChunk {
    const float* X;
    u32 n;
    u32 f0;
    u32 f1;
    bool tail;
    template <class F>
    __device__ __forceinline__ void each(F&& f) const {
        sg_stream_each<PREFETCH>(X, n, f0, f1, tail, f);
    }
};

// A cluster CTA's chunk of row geo[3], its geometry in shared memory
// (sg_stream_each_geo).
struct SgGeoChunk {
    const float* logits;
    u32 npad;
    const volatile u32* geo;
    template <class F>
    __device__ __forceinline__ void each(F&& f) const {
        sg_stream_each_geo(logits + (u64)geo[3] * npad, geo, cluster_ctarank() == SG_CL_SIZE - 1u, f);
    }
};

// Where a collect puts its winners and ties: this CTA's counters and tie
// buffer (SgHere), or rank 0's through DSMEM (SgLead: the mapping is redone
// at each use, one instruction, rather than held in two registers).
struct SgHere {
    SgShared* sh;
    __device__ __forceinline__ SgShared* get() const { return sh; }
};
struct SgLead {
    SgShared* sh;
    __device__ __forceinline__ SgShared* get() const { return sg_map(sh, 0u); }
};

// What handle_tie gets: m ties in the buffer (when mode is SG_BUF), need of
// them selected.
struct SgTies {
    u32 m;
    u32 need;
    u32 mode;
};

// The collect of the ordinary path: coarse bin above B → winner, == B → tie
// buffer (B holds at most SG_TIE_CAP).
template <int CSHIFT, class Src, class Dst>
__device__ __forceinline__ void sg_collect(const Src& src, u32 bin, u32 k, i32* O, const Dst& dst) {
    src.each([&](float x, u32 pos, bool ok) {
        const u32 c = sg_key16(x) >> CSHIFT;
        const int cls = !ok ? -1 : (c > bin ? 1 : (c == bin ? 0 : -1));
        SgShared* d = dst.get();
        sg_emit(cls, x, pos, SG_BUF, 0u, k, O, &d->win, &d->ntie, d->tie_key, d->tie_idx);
    });
}

// The exact fallback of a row whose threshold bin B holds m > SG_TIE_CAP
// elements: 8-bit rounds over the fp32 key narrow the candidate set (B's
// elements with the key prefix chosen so far) until it fits the buffer, is
// needed whole or is a single key; then the collect with the narrowed test.
// `hist`: this CTA's 256 counts; `sum`: where the round's counts of the
// whole row land (with CL, a DSMEM all-reduce of every rank's `hist`; else
// `hist` itself). Reads the row (this CTA's chunk) once per round and once
// for the collect, whatever the path that called it. The narrowing state
// lives in shared memory (sh.cut, sh.fb_m, sh.fb_need; thread 0 updates it
// between barriers): it is a cold path, and registers are short.
template <int CSHIFT, bool CL, class Src, class Dst>
__device__ __forceinline__ SgTies sg_fallback(SgShared& sh, const Src& src, u32* hist, u32* sum, u32 bin, u32 m,
                                              u32 need, u32 k, i32* O, const Dst& dst, u32 row) {
    volatile SgCut* vcut = &sh.cut;
    const volatile u32* vm = &sh.fb_m;
    const volatile u32* vneed = &sh.fb_need;
    if (threadIdx.x == 0u) {
        sh.cut.bin = bin;
        sh.cut.shift = 32u;
        sh.cut.prefix = 0u;
        sh.fb_m = m;
        sh.fb_need = need;
    }
    __syncthreads();
    while (*vm > SG_TIE_CAP && *vm != *vneed && vcut->shift > 0u) {  // block-uniform
        SG_TRACE(row, SG_TR_NARROW);
        if (threadIdx.x < SG_DIGIT_BINS) hist[threadIdx.x] = 0u;
        __syncthreads();
        src.each([&](float x, u32, bool ok) {
            SgCut cut;
            cut.bin = vcut->bin;
            cut.shift = vcut->shift;
            cut.prefix = vcut->prefix;
            if (ok && sg_classify<CSHIFT>(x, cut) == 0)
                red_shared_add(&hist[(sg_key(x) >> (cut.shift - 8u)) & 0xffu], 1u);
        });
        if constexpr (CL) {
            cluster_sync();
            sg_cl_allreduce<SG_DIGIT_BINS>(hist, sum, cluster_ctarank());
            cluster_sync();
        } else {
            __syncthreads();
        }
        sg_crossing<SG_DIGIT_BINS>(sum, *vneed, sh.scan, &sh.cross);
        if (threadIdx.x == 0u) {
            const u32 d = sh.cross.bin;
            sh.fb_need -= sh.cross.above;
            sh.fb_m = sh.cross.count;
            sh.cut.prefix = sh.cut.shift >= 32u ? d : ((sh.cut.prefix << 8) | d);
            sh.cut.shift -= 8u;
        }
        __syncthreads();
    }
    SgTies t;
    t.m = *vm;
    t.need = *vneed;
    t.mode = sg_mode(t.m, t.need);
    if (t.mode == SG_ALL) SG_TRACE(row, SG_TR_DIRECT_ALL);
    if (t.mode == SG_EQUAL) SG_TRACE(row, SG_TR_DIRECT_EQUAL);
    src.each([&](float x, u32 pos, bool ok) {
        SgCut cut;
        cut.bin = vcut->bin;
        cut.shift = vcut->shift;
        cut.prefix = vcut->prefix;
        const int cls = ok ? sg_classify<CSHIFT>(x, cut) : -1;
        const u32 fm = *vm, fneed = *vneed;
        SgShared* d = dst.get();
        sg_emit(cls, x, pos, sg_mode(fm, fneed), fneed, k, O, &d->win, &d->ntie, d->tie_key, d->tie_idx);
    });
    return t;
}

// A row of the per-row kernel: VPT float4 per thread held in registers, or
// (VPT 0) streamed from global memory at every pass.
template <int VPT>
struct SgRowSrc {
    const float* X;
    u32 n;
    float4 v[VPT > 0 ? VPT : 1];
    template <class F>
    __device__ __forceinline__ void each(F&& f) const {
        if constexpr (VPT > 0)
            sg_reg_each<VPT>(v, n, f);
        else
            sg_stream_each<true>(X, n, 0u, n >> 2, true, f);
    }
};

// ---------------------------------------------------------------------------
// Per-row kernel body. VPT float4 per thread in registers (2 or 4), or 0 for
// the streaming path.
// ---------------------------------------------------------------------------
template <int VPT>
__device__ __forceinline__ void sg_row_body(const float* __restrict__ logits, const i32* __restrict__ row_n,
                                            u32* __restrict__ ws, i32* __restrict__ out, u32 rows, u32 npad, u32 k,
                                            u32 skip_long) {
    SgShared& sh = *reinterpret_cast<SgShared*>(SG_SMEM());
    const u32 r = blockIdx.x;
    if (r >= rows) return;
    const u32 n = clamp_row_len(row_n[r], npad);
    if (skip_long != 0u && n > ws[SG_WS_META]) return;  // the cluster kernel's row
    i32* O = out + (u64)r * k;
    if (n <= k) {
        SG_TRACE(r, SG_TR_TRIVIAL);
        write_identity_row(O, n, k);
        return;
    }
    SgRowSrc<VPT> src;
    src.X = logits + (u64)r * npad;
    src.n = n;
    if constexpr (VPT > 0) {
        SG_TRACE(r, SG_TR_REG);
#pragma unroll
        for (u32 u = 0; u < (u32)VPT; ++u) src.v[u] = sg_load_reg4(src.X, u * SG_BLK + threadIdx.x, n);
    } else {
        SG_TRACE(r, SG_TR_STREAM);
    }

    for (u32 b = threadIdx.x; b < SG_BINS; b += SG_BLK) sh.hist[b] = 0u;
    if (threadIdx.x == 0u) {
        sh.win = 0u;
        sh.ntie = 0u;
        sh.tie_win = 0u;
        sh.tie_eq = 0u;
    }
    __syncthreads();
    src.each([&](float x, u32, bool ok) {
        if (ok) red_shared_add(&sh.hist[sg_key16(x) >> 4], 1u);
    });
    __syncthreads();
    sg_crossing<SG_BINS>(sh.hist, k, sh.scan, &sh.cross);  // n > k elements: a real crossing
    const u32 bin = sh.cross.bin;
    const u32 m = sh.cross.count;
    const u32 need = k - sh.cross.above;
    if (m > SG_TIE_CAP) {
        // The exact fallback re-reads the row from global memory (the
        // register copy is dropped), a slower exact path for this row.
        SG_TRACE(r, SG_TR_FALLBACK);
        if (threadIdx.x == 0u) atomicAdd(&ws[SG_WS_FALLBACK], 1u);
        SgChunk<(VPT == 0)> whole;
        whole.X = logits + (u64)r * npad;
        whole.n = n;
        whole.f0 = 0u;
        whole.f1 = n >> 2;
        whole.tail = true;
        const SgTies t = sg_fallback<4, false>(sh, whole, sh.hist, sh.hist, bin, m, need, k, O, SgHere{&sh}, r);
        if (t.mode != SG_BUF) return;
        __syncthreads();
        sg_handle_tie(sh, t.m, t.need, k, O, r);
        return;
    }
    sg_collect<4>(src, bin, k, O, SgHere{&sh});
    __syncthreads();
    sg_handle_tie(sh, m, need, k, O, r);
}

// ---------------------------------------------------------------------------
// Cluster body: one cluster of SG_CL_SIZE CTAs (ranks along y) per long row,
// clusters looping over the plan's long rows.
// ---------------------------------------------------------------------------
__device__ __forceinline__ void sg_cluster_body(const float* __restrict__ logits, u32* __restrict__ ws,
                                                i32* __restrict__ out, u32 npad, u32 k) {
    SgShared& sh = *reinterpret_cast<SgShared*>(SG_SMEM());
    u32* local = sh.hist;
    u32* global = sh.hist + SG_CL_BINS;
    // The 32-register budget: the item index, the row and its chunk live in
    // shared memory (thread 0 writes them, everyone reads them after a
    // barrier), the long-row count is re-read at every item, the rank is
    // read from its special register where used.
    if (threadIdx.x == 0u) sh.item = blockIdx.x;
    for (;;) {
        __syncthreads();  // sh.item is set, and the last row's handle_tie is done with the counters
        if (sh.item >= *(const volatile u32*)&ws[SG_WS_META + 1]) break;
        if (threadIdx.x == 0u) {
            // Chunk of this rank: full float4s [f0, f1) of the row; the last
            // rank also takes the tail.
            const u32 item = sh.item;
            const u32 n = ws[SG_WS_META + 3 + 2 * item];  // > threshold >= 65536 > k
            const u32 nf = n >> 2;
            const u32 per = (nf + SG_CL_SIZE - 1u) / SG_CL_SIZE;
            const u32 f0 = sg_min(cluster_ctarank() * per, nf);
            sh.geo[0] = n;
            sh.geo[1] = f0;
            sh.geo[2] = sg_min(f0 + per, nf);
            sh.geo[3] = ws[SG_WS_META + 2 + 2 * item];
            sh.win = 0u;
            sh.ntie = 0u;
            sh.tie_win = 0u;
            sh.tie_eq = 0u;
        }
        for (u32 b = threadIdx.x; b < SG_CL_BINS; b += SG_BLK) local[b] = 0u;
        __syncthreads();
        SG_TRACE(sh.geo[3], SG_TR_CLUSTER);
        SgGeoChunk ch;
        ch.logits = logits;
        ch.npad = npad;
        ch.geo = sh.geo;
        ch.each([&](float x, u32, bool ok) {
            if (ok) red_shared_add(&local[sg_key16(x) >> 6], 1u);
        });
        cluster_sync();  // every chunk histogram complete; rank 0's counters reset
        sg_cl_allreduce<SG_CL_BINS>(local, global, cluster_ctarank());
        cluster_sync();  // every `global` complete
        sg_crossing<SG_CL_BINS>(global, k, sh.scan, &sh.cross);
        SgTies t;
        t.m = sh.cross.count;
        t.need = k - sh.cross.above;
        t.mode = SG_BUF;
        const SgLead lead{&sh};  // rank 0: counters and tie buffer
        if (t.m > SG_TIE_CAP) {  // the exact fallback, cluster-wide
            SG_TRACE(sh.geo[3], SG_TR_FALLBACK);
            if (cluster_ctarank() == 0u && threadIdx.x == 0u) atomicAdd(&ws[SG_WS_FALLBACK], 1u);
            t = sg_fallback<6, true>(sh, ch, local, global, sh.cross.bin, t.m, t.need, k,
                                     out + (u64)sh.geo[3] * k, lead, sh.geo[3]);
        } else {
            sg_collect<6>(ch, sh.cross.bin, k, out + (u64)sh.geo[3] * k, lead);
        }
        const u32 r = sh.geo[3];
        __syncthreads();  // everyone has read sh.item and sh.geo
        if (threadIdx.x == 0u) sh.item += gridDim.x;
        cluster_sync();   // every winner and tie of the row is in
        if (cluster_ctarank() == 0u && t.mode == SG_BUF) sg_handle_tie(sh, t.m, t.need, k, out + (u64)r * k, r);
    }
}

// ---------------------------------------------------------------------------
// Plan body: one CTA.
// ---------------------------------------------------------------------------
__device__ __forceinline__ u32 sg_candidate(u32 c) {
    return c == 0u ? 65536u : (c == 1u ? 98304u : (c == 2u ? 131072u : (c == 3u ? 196608u : 262144u)));
}

__device__ __forceinline__ void sg_plan_body(const i32* __restrict__ row_n, u32* __restrict__ ws, u32 rows,
                                             u32 npad) {
    SgShared& sh = *reinterpret_cast<SgShared*>(SG_SMEM());
    if (threadIdx.x < 8u) sh.cnt[threadIdx.x] = 0u;
    __syncthreads();
    for (u32 r = threadIdx.x; r < rows; r += SG_BLK) {
        const u32 n = clamp_row_len(row_n[r], npad);
#pragma unroll
        for (u32 c = 0; c < SG_NCAND; ++c)
            if (n > sg_candidate(c)) red_shared_add(&sh.cnt[c], 1u);
    }
    __syncthreads();
    // Counts fall with the candidate: the smallest one within the pool.
    u32 threshold = sg_candidate(SG_NCAND - 1u);
    for (int c = SG_NCAND - 1; c >= 0; --c)
        if (sh.cnt[c] <= SG_POOL) threshold = sg_candidate((u32)c);
    u32 longs = 0u;
    for (u32 base = 0; base < rows; base += SG_BLK) {  // block-uniform trips
        const u32 r = base + threadIdx.x;
        const u32 n = r < rows ? clamp_row_len(row_n[r], npad) : 0u;
        const bool is_long = n > threshold;
        u32 total;
        const u32 incl = sg_block_scan(is_long ? 1u : 0u, sh.scan, &total);
        if (is_long) {
            const u32 at = longs + incl - 1u;
            ws[SG_WS_META + 2 + 2 * at] = r;
            ws[SG_WS_META + 3 + 2 * at] = n;
        }
        longs += total;
    }
    if (threadIdx.x == 0u) {
        ws[SG_WS_META] = threshold;
        ws[SG_WS_META + 1] = longs;
        ws[SG_WS_FALLBACK] = 0u;
    }
}

#ifndef SS_EMULATION
extern "C" __global__ void __launch_bounds__(SG_BLK, 1)
    sglang_v2_plan(const i32* __restrict__ row_n, u32* __restrict__ ws, u32 rows, u32 npad) {
    sg_plan_body(row_n, ws, rows, npad);
}

extern "C" __global__ void __launch_bounds__(SG_BLK, 2)
    sglang_v2_reg2(const float* __restrict__ logits, const i32* __restrict__ row_n, u32* __restrict__ ws,
                   i32* __restrict__ out, u32 rows, u32 npad, u32 k, u32 skip_long) {
    sg_row_body<2>(logits, row_n, ws, out, rows, npad, k, skip_long);
}

extern "C" __global__ void __launch_bounds__(SG_BLK, 2)
    sglang_v2_reg4(const float* __restrict__ logits, const i32* __restrict__ row_n, u32* __restrict__ ws,
                   i32* __restrict__ out, u32 rows, u32 npad, u32 k, u32 skip_long) {
    sg_row_body<4>(logits, row_n, ws, out, rows, npad, k, skip_long);
}

extern "C" __global__ void __launch_bounds__(SG_BLK, 2)
    sglang_v2_stream(const float* __restrict__ logits, const i32* __restrict__ row_n, u32* __restrict__ ws,
                     i32* __restrict__ out, u32 rows, u32 npad, u32 k, u32 skip_long) {
    sg_row_body<0>(logits, row_n, ws, out, rows, npad, k, skip_long);
}

extern "C" __global__ void __cluster_dims__(1, SG_CL_SIZE, 1) __launch_bounds__(SG_BLK, 2)
    sglang_v2_cluster8(const float* __restrict__ logits, u32* __restrict__ ws, i32* __restrict__ out, u32 npad,
                       u32 k) {
    sg_cluster_body(logits, ws, out, npad, k);
}
#endif  // SS_EMULATION
