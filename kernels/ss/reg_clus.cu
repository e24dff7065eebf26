// reg_clus.cu — self-sampling GVR V2, clustered register-resident family
// `reg_clus` (arm `ss-regclus`).
//
// One row per thread-block cluster of CS CTAs (grid (CS, rows), cluster
// (CS,1,1), CS ∈ {2,4,8}). Rank r holds float4 [r·BLK·VPT, (r+1)·BLK·VPT) of
// the row in registers (−inf fill past n/4; the 0–3 element scalar tail on
// rank 0), so the row is read from global memory exactly once.
//
// 1. Bracket [Tv, GMAX]: every rank redundantly folds the same values (the
//    hinted positions; when they give no usable bracket, or in hint-free
//    mode, the first k row values — always ≥ k elements ≥ Tv), so all
//    ranks agree without talking. Guard: Tv < GMAX with a finite width
//    > 1e-30, else escape.
// 2. BRL bins (1024): bin = sat_u32(fmin(fma(x, SC, CQ), 1023)); bin 0 is the
//    trash bin (below Tv, −inf fill; never counted, never emitted); NaN goes
//    to the top bin (NaN ranks above +inf).
//    Monotone in x, and bit-identical in every rank (same SC/CQ, one inline
//    expression for count and emit).
// 3. Local histogram → cluster barrier → every rank reads bin i of every
//    rank over DSMEM: cluster total (mrg) and the sum over lower ranks
//    (hoff). Block scan of mrg for k in cursor form; mrg += hoff gives
//    rank-biased cursors, so an atomicAdd hands out a cluster-unique slot.
// 4. Emit: bins above the crossing go straight to the output; crossing-bin
//    candidates (slot q = p − above) are striped over the ranks' shared
//    memory (rank q / CK, slot q % CK) with remote stores.
// 5. Rank 0 refines the crossing bin (O(m²) rank for m ≤ 96, else exact key
//    narrowing reading the peers' slabs remotely). Every rank waits at a
//    final cluster barrier so peers stay resident while rank 0 reads them.
//    RC_LOCAL_REFINE: when all m candidates sit in rank 0 (m ≤ its slot
//    capacity), the peers leave at once and rank 0 reads its own slab with
//    plain shared loads; no final barrier.
//
// Exact escape (cluster-uniform decision: every input of it is identical in
// all ranks): bracket rejected, crossing in the trash bin (fewer than k
// values ≥ Tv), crossing bin larger than the cluster's CS·CK candidate
// slots, or a row longer than the cluster's registers → rank 0 alone selects
// the whole row by key-space narrowing over global memory (8 levels).
//
// Entry points: ss_regclus_v{1,2,4} (BLK 1024, 1 CTA/SM: 64 registers).
// Launch: grid (CS, rows), cluster (CS,1,1), block 1024, dynamic shared
// memory RC_SMEM_WORDS(1024)·4 = 45,568 B (same layout in every CTA, which
// DSMEM mapping requires).

#include "ss/common.cuh"

// Launch scalars (src/topk/families/reg_clus.rs `RegClusArgs`, same order, all u32).
struct RcParams {
    u32 npad;
    u32 k;
    u32 hint_free;  // 1: bracket from the first k values, hints never read (also when none are passed)
    u32 next_n;     // 0: lens holds per-row lengths; >= 1: kv_lens (ss_row_len)
    u32 cr_shift;   // varlen compress ratio as a shift (0: cr 1, 2: cr 4)
};

#define RC_BINS 1024u
#define RC_RANK_MAX 96u  // O(m²) rank gate (QC)
#define RC_REFINE_LEVELS 6
#define RC_FALLBACK_LEVELS 8
#define RC_BRL_BIAS 1e-6f

// Shared memory (u32 words), identical in every CTA of the cluster:
// prelude[128] | hist[1024] | mrg[1024] | hoff[1024] | ck[CK] | ci[CK].
#define RC_PRELUDE 128u
#define RC_RED 0u        // 64 words: block min/max scratch
#define RC_CROSS 64u     // 3 SsCross (12 words) for the narrowing
#define RC_WIN 76u       // narrowing emit counters
#define RC_TIE 77u
#define RC_RES 80u       // crossing of the merged histogram: bin, above, m, total
#define RC_WSUM 96u      // 32 words: per-warp totals of the block scan
#define RC_HIST RC_PRELUDE
#define RC_MRG (RC_HIST + RC_BINS)
#define RC_HOFF (RC_MRG + RC_BINS)
#define RC_CK (RC_HOFF + RC_BINS)
// Crossing-candidate slots per CTA: 4096 at BLK 1024 (scaled down with the
// block so the emulator's small CTAs reach the capacity escape).
#define RC_CAP(BLK) (4u * (u32)(BLK))
#define RC_SMEM_WORDS(BLK) (RC_CK + 2u * RC_CAP(BLK))

// Path trace for the host emulator (tests/ss_emu): compiles to nothing here.
#define RC_TR_ESCAPE 1u     // whole-row narrowing by rank 0
#define RC_TR_WHOLE 2u      // crossing bin needed whole
#define RC_TR_RANK 4u       // O(m²) rank refine
#define RC_TR_NARROW 8u     // key-narrowing refine
#define RC_TR_GUARD 16u     // bracket rejected (subset of ESCAPE)
#define RC_TR_FIRSTK 32u    // bracket from the first k values
#define RC_TR_LOCAL 64u     // refined by rank 0 alone from its own shared memory (RC_LOCAL_REFINE)
#ifdef SS_EMULATION
#define RC_TRACE(bit)                                                              \
    do {                                                                           \
        if (threadIdx.x == 0 && cluster_ctarank() == 0u) ss_emu_trace(blockIdx.y, bit); \
    } while (0)
#define RC_SMEM() (emu_cluster_smem())
#else
#define RC_TRACE(bit) \
    do {              \
    } while (0)
extern __shared__ __align__(16) u32 rc_dyn[];
#define RC_SMEM() (rc_dyn)
#endif

// The one bin expression (count and emit must agree bit for bit).
// The clamp on the float sends a NaN x to the top bin (see ss_reg_bin).
__device__ __forceinline__ u32 rc_bin(float x, float sc, float cq) {
    return __float2uint_rz(fminf(__fmaf_rn(x, sc, cq), (float)(RC_BINS - 1u)));
}

__device__ __forceinline__ float rc_lane(const float4& v, u32 c) {
    return c == 0u ? v.x : (c == 1u ? v.y : (c == 2u ? v.z : v.w));
}

// Widen the bracket's key range [kmin, kmax] by one key.
__device__ __forceinline__ void rc_fold(u32 key, u32& kmin, u32& kmax) {
    kmin = kmin < key ? kmin : key;
    kmax = kmax > key ? kmax : key;
}

// Guard: Tv < GMAX and a finite width
// above 1e-30. An infinite (or NaN) width would collapse every value into
// one bin. False for an empty fold (kmin > kmax) and for NaN ends.
__device__ __forceinline__ bool rc_bracket_ok(u32 kmin, u32 kmax) {
    const float tv = invkey(kmin), gmax = invkey(kmax);
    const float width = __fsub_rn(gmax, tv);
    return tv < gmax && width <= 3.40282347e38f && width > SS_MIN_WIDTH;
}

// Crossing candidates striped over the ranks: candidate q lives in rank
// q / cap at slot q % cap (key in ck, index in ci).
struct RcSrcStriped {
    u32* ck;  // this CTA's slabs; mapped to the owning rank per access
    u32* ci;
    u32 cap;
    __device__ __forceinline__ void slot(u32 q, u32* key, u32* idx) const {
        const u32 r = q / cap, s = q - r * cap;
        *key = *cluster_map_ptr(ck + s, r);
        *idx = *cluster_map_ptr(ci + s, r);
    }
    __device__ __forceinline__ void put(u32 q, u32 key, u32 idx) const {
        const u32 r = q / cap, s = q - r * cap;
        *cluster_map_ptr(ck + s, r) = key;
        *cluster_map_ptr(ci + s, r) = idx;
    }
    __device__ __forceinline__ void get(u32 q, float* x, u32* idx) const {
        u32 key;
        slot(q, &key, idx);
        *x = invkey(key);  // exact inverse: fkey(*x) == key
    }
};

// The same candidates when all of them sit in this CTA (rank 0 with m ≤ cap):
// plain shared-memory loads (RC_LOCAL_REFINE).
struct RcSrcLocal {
    const u32* ck;
    const u32* ci;
    __device__ __forceinline__ void slot(u32 q, u32* key, u32* idx) const {
        *key = ck[q];
        *idx = ci[q];
    }
    __device__ __forceinline__ void get(u32 q, float* x, u32* idx) const {
        u32 key;
        slot(q, &key, idx);
        *x = invkey(key);  // exact inverse: fkey(*x) == key
    }
};

// Rank 0's refine of the crossing bin's m candidates: the need largest by
// (key desc, slot asc) go to out_row[above ..). O(m²) rank for m ≤ RC_RANK_MAX,
// else exact key narrowing.
template <int BLK, class Src>
__device__ __forceinline__ void rc_refine(const Src& src, u32 m, u32 need, u32 above, i32* out_row,
                                          SsNarrowShared& nsh) {
    if (m <= RC_RANK_MAX) {
        RC_TRACE(RC_TR_RANK);
        // O(m²): rank by (key desc, slot asc), a strict total order.
        for (u32 i = threadIdx.x; i < m; i += BLK) {
            u32 ki, ii;
            src.slot(i, &ki, &ii);
            u32 rnk = 0;
            for (u32 j = 0; j < m; ++j) {
                u32 kj, ij;
                src.slot(j, &kj, &ij);
                rnk += (kj > ki || (kj == ki && j < i)) ? 1u : 0u;
            }
            if (rnk < need) out_row[above + rnk] = (i32)ii;
        }
    } else {
        RC_TRACE(RC_TR_NARROW);
        ss_narrow_emit<BLK>(src, m, 0u, 0xffffffffu, need, m, RC_REFINE_LEVELS, out_row, above, nsh);
    }
}

// Block scan of a 1024-bin histogram `in` for target t ≥ 1 (each thread owns
// RC_BINS/BLK contiguous bins): writes the crossing (bin, above, m) and the
// total to res[0..4), and after(j), the count in bins above j (cursor form), to
// `h` (which may be `in`). A total < t pins bin 0 (fake crossing; callers treat
// bin 0 as untrusted). Ends with a barrier.
template <int BLK>
__device__ __forceinline__ void rc_cross_cursor(const u32* in, u32* h, u32 t, u32* wsum, u32* res) {
    constexpr u32 NPT = RC_BINS / (u32)BLK;
    constexpr u32 NW = (u32)BLK / 32u;
    static_assert(RC_BINS % BLK == 0 && NPT >= 1, "bins per thread");
    const u32 base = threadIdx.x * NPT;
    u32 v[NPT];
    u32 span = 0;
#pragma unroll
    for (u32 j = 0; j < NPT; ++j) {
        v[j] = in[base + j];
        span += v[j];
    }
    const u32 incl = warp_incl_scan(span);
    if (lane_id() == 31u) wsum[warp_id()] = incl;
    __syncthreads();
    u32 lower = 0, total = 0;
    for (u32 w = 0; w < NW; ++w) {
        const u32 s = wsum[w];
        total += s;
        lower += (w < warp_id()) ? s : 0u;
    }
    // Count in bins above this thread's span = after(base + NPT - 1).
    u32 run = total - (lower + incl);
    bool crossed = false;
#pragma unroll
    for (int j = (int)NPT - 1; j >= 0; --j) {
        const u32 after = run;
        if (!crossed && after < t && t <= after + v[j]) {
            res[0] = base + (u32)j;
            res[1] = after;
            res[2] = v[j];
            crossed = true;
        }
        h[base + (u32)j] = after;
        run += v[j];
    }
    if (threadIdx.x == 0) {
        res[3] = total;
        if (total < t) {  // fake crossing: bin 0 (after(0) = total - h[0])
            res[0] = 0u;
            res[1] = total - v[0];
            res[2] = v[0];
        }
    }
    __syncthreads();
}

// RC_COARSE_MERGE: the cluster's crossing from two small DSMEM rounds instead of
// every rank reading every bin of every rank (cs·1024 remote words per CTA).
// Before (A) every rank wrote its local cursor form (mrg[b]: its values in bins
// above b) and gsuf[g] = mrg[32g + 31], its values above group g (bins
// 32g .. 32g + 31). Round 1 reads gsuf of every rank: U(32g), the cluster's
// count in bins ≥ 32g, is the count above group g − 1, and the crossing group
// G is the last g ≥ 1 with U(32g) ≥ k (else 0). Round 2 reads the 32 counts of
// group G from every rank's histogram (untouched until barrier (B) or (C)).
// From those, warp 0 finds what the full merge's scan finds: the crossing bin
// c = the last bin ≥ 1 with U(c) ≥ k, above = U(c) − m, m = the cluster's
// count in c (none: the fake crossing, bin 0, above = the count in bins ≥ 1,
// m = 0), and this rank's offsets: res[4] = winners (bins above c) of the lower
// ranks, res[5] = their candidates in c, res[7] = this rank's own winners
// (mrg[c]). tab: 512 words of this CTA (P, then F). Ends with a barrier.
#define RC_GROUPS 32u
template <int BLK>
__device__ __forceinline__ void rc_coarse_crossing(u32* hist, const u32* mrg, u32* gsuf, u32* tab, u32 k, u32 rank,
                                                   u32 cs, u32* res) {
    const u32 ncs = cs < 8u ? cs : 8u;
    u32* const P = tab;          // P[r·32 + g]: rank r's count above group g
    u32* const F = tab + 256u;   // F[r·32 + j]: rank r's count in bin 32·G + j
    for (u32 t = threadIdx.x; t < RC_GROUPS * ncs; t += BLK) P[t] = *cluster_map_ptr(gsuf + (t & 31u), t >> 5);
    __syncthreads();
    if (threadIdx.x < 32u) {
        const u32 g = threadIdx.x;
        u32 a = 0;  // the cluster's count above group g
        for (u32 r = 0; r < ncs; ++r) a += P[r * 32u + g];
        const u32 at_least = __shfl_up_sync(GVR_FULL_MASK, a, 1u);  // count in bins ≥ 32g (g ≥ 1)
        const u32 hit = __ballot_sync(GVR_FULL_MASK, g >= 1u && at_least >= k);
        if (g == 0u) res[6] = hit != 0u ? 31u - (u32)__clz((int)hit) : 0u;
    }
    __syncthreads();
    const u32 G = res[6];
    for (u32 t = threadIdx.x; t < RC_GROUPS * ncs; t += BLK)
        F[t] = *cluster_map_ptr(hist + G * RC_GROUPS + (t & 31u), t >> 5);
    __syncthreads();
    if (threadIdx.x < 32u) {
        const u32 j = threadIdx.x;
        u32 tot = 0, lower = 0, above_g = 0, above_g_lower = 0;
        for (u32 r = 0; r < ncs; ++r) {
            const u32 f = F[r * 32u + j], pa = P[r * 32u + G];
            tot += f;
            above_g += pa;
            lower += r < rank ? f : 0u;
            above_g_lower += r < rank ? pa : 0u;
        }
        u32 suf = tot;  // inclusive suffix sum over lanes ≥ j
        for (u32 d = 1u; d < 32u; d <<= 1) {
            const u32 o = __shfl_sync(GVR_FULL_MASK, suf, (int)((j + d) & 31u));
            suf += j + d < 32u ? o : 0u;
        }
        const u32 u = above_g + suf;  // U(32·G + j)
        // Bin 0 is never counted, so U(0) = U(1): lane 0 of group 0 never
        // adds a hit of its own, and no hit at all is the fake crossing.
        const u32 hit = __ballot_sync(GVR_FULL_MASK, u >= k);
        const u32 js = hit != 0u ? 31u - (u32)__clz((int)hit) : 0u;
        const u32 m = __shfl_sync(GVR_FULL_MASK, tot, (int)js);
        const u32 uc = __shfl_sync(GVR_FULL_MASK, u, (int)js);
        const u32 u1 = __shfl_sync(GVR_FULL_MASK, u, 1);
        const u32 cbase = __shfl_sync(GVR_FULL_MASK, lower, (int)js);
        const u32 wbase = warp_sum(j > js ? lower : 0u) + above_g_lower;
        if (j == 0u) {
            const u32 c = hit != 0u ? G * RC_GROUPS + js : 0u;
            res[0] = c;
            res[1] = hit != 0u ? uc - m : u1;
            res[2] = hit != 0u ? m : 0u;
            res[4] = wbase;
            res[5] = cbase;
            res[7] = mrg[c];
        }
    }
    __syncthreads();
}

// The rank's share of a row of n values into registers (coalesced float4
// loads, −inf fill) and rank 0's tail scalar. The cluster's registers hold
// the first body4 float4s; the rest (the 0–3 value remainder, or up to BLK
// values past the float4s, as in v32's 2^17 + 15) sits in one tail scalar per
// thread of rank 0. It loads after the row length: loading ahead of it, for
// the batch's n, was slower (docs/decisions.md, RC_ROW_AHEAD).
struct RcSlice {
    u32 body4;  // float4s the cluster's registers hold
    u32 ntail;  // values past them (rank 0's tail scalars)
    bool fits;  // the row fits the cluster at all
};

template <int BLK, int VPT>
__device__ __forceinline__ RcSlice rc_slice(u32 n, u32 cs) {
    RcSlice sl;
    const u32 n4 = n >> 2;
    const u32 cap4 = (cs <= 8u ? cs : 8u) * (u32)BLK * (u32)VPT;
    sl.body4 = n4 < cap4 ? n4 : cap4;
    sl.ntail = n - sl.body4 * 4u;
    sl.fits = cs <= 8u && sl.ntail <= (u32)BLK;
    return sl;
}

template <int BLK, int VPT>
__device__ __forceinline__ void rc_load_slice(float4 (&v)[VPT], float& tail, const float* X, const RcSlice& sl,
                                              u32 rank) {
    const float NEG_INF = ss_neg_inf();
#pragma unroll
    for (int u = 0; u < VPT; ++u) {
        const u32 g = (rank * (u32)VPT + (u32)u) * (u32)BLK + threadIdx.x;
        if (sl.fits && g < sl.body4)
            v[u] = ldg_nc_f4(X + (u64)g * 4u);
        else
            v[u] = float4{NEG_INF, NEG_INF, NEG_INF, NEG_INF};
    }
    const bool has_tail = sl.fits && rank == 0u && threadIdx.x < sl.ntail;
    tail = has_tail ? ldg_nc_f(X + sl.body4 * 4u + threadIdx.x) : NEG_INF;
}

template <int BLK, int VPT>
__device__ __forceinline__ void ss_regclus_body(const float* __restrict__ logits, const i32* __restrict__ lens,
                                                const i32* __restrict__ hints, i32* __restrict__ out,
                                                const RcParams p) {
    constexpr u32 CAP = RC_CAP(BLK);
    u32* const sm = RC_SMEM();
    u32* const hist = sm + RC_HIST;
    u32* const mrg = sm + RC_MRG;
    u32* const hoff = sm + RC_HOFF;
    u32* const res = sm + RC_RES;
    SS_PROBE_SCOPE();
    const u32 rank = cluster_ctarank();
    const u32 cs = cluster_nctarank();
    const u32 row = blockIdx.y;
    const u32 k = p.k;
    SsRowLenEarly len;
    len.issue(lens, row, p.next_n, false);
    float4 v[VPT];
    float tail;
    const u32 n = len.wait(lens, row, p.next_n, p.cr_shift, p.npad);
    SS_PROBE(SS_MARK_LEN);
    const float* X = logits + (u64)row * p.npad;
    i32* out_row = out + (u64)row * k;
    if (k == 0u) return;  // cluster-uniform: nothing to write
    if (n <= k) {         // short row, cluster-uniform
        if (rank == 0u) write_identity_row(out_row, n, k);
        return;
    }
    const RcSlice sl = rc_slice<BLK, VPT>(n, cs);
    const u32 body4 = sl.body4;
    const bool fits = sl.fits;

    for (u32 b = threadIdx.x; b < RC_BINS; b += BLK) hist[b] = 0u;

    // Row slice into registers.
    rc_load_slice<BLK, VPT>(v, tail, X, sl, rank);
    const bool has_tail = fits && rank == 0u && threadIdx.x < sl.ntail;

    // Bracket, identical in every rank: the hinted values; when the
    // hints give no usable bracket (none valid, all on one value, ±inf or
    // NaN among them) or in hint-free mode, the first k row values (k < n,
    // so at least k values lie at or above their minimum).
    u32 kmin = 0xffffffffu, kmax = 0u;
    const i32* hint_row = p.hint_free != 0u ? nullptr : ss_hint_row(hints, row, p.next_n, k);
    bool first_k = hint_row == nullptr;
    if (!first_k) {
        for (u32 j = threadIdx.x; j < k; j += BLK) {
            const u32 h = (u32)hint_row[j];
            if (h < n) rc_fold(fkey(ldg_nc_f(X + h)), kmin, kmax);
        }
        ss_block_minmax_once<BLK>(&kmin, &kmax, sm + RC_RED);  // one barrier, not three
        first_k = !rc_bracket_ok(kmin, kmax);
        if (first_k) __syncthreads();  // every warp has read RC_RED
    }
    if (first_k) {
        RC_TRACE(RC_TR_FIRSTK);
        kmin = 0xffffffffu;
        kmax = 0u;
        for (u32 j = threadIdx.x; j < k; j += BLK) rc_fold(fkey(ldg_nc_f(X + j)), kmin, kmax);
        ss_block_minmax<BLK>(&kmin, &kmax, sm + RC_RED);
    }
    const bool bracket_ok = rc_bracket_ok(kmin, kmax);
    const float tv = invkey(kmin), gmax = invkey(kmax);
    const float width = __fsub_rn(gmax, tv);
    float sc = 0.f, cq = 0.f;
    if (bracket_ok) {
        const float wd = __fdiv_rn(width, (float)(RC_BINS - 2u));
        sc = __fdiv_rn(1.f, wd);
        const float c0 = __fsub_rn(1.f, __fmul_rn(tv, sc));
        cq = __fmaf_rn(RC_BRL_BIAS, __fadd_rn(fabsf(c0), 1.f), c0);
    }
    SS_PROBE(SS_MARK_THRESHOLD);

    // Local histogram of bins >= 1. The trash bin is not counted: most of
    // the row lands there and its increments would serialize on one shared
    // word. Nothing needs its count: with it missing, fewer than k values in
    // bins >= 1 make the scan pin bin 0 (a fake crossing), which takes the
    // escape exactly as a crossing inside the trash bin would.
    if (bracket_ok) {
#pragma unroll
        for (int u = 0; u < VPT; ++u) {
#pragma unroll
            for (u32 c = 0; c < 4u; ++c) {
                const u32 b = rc_bin(rc_lane(v[u], c), sc, cq);
                if (b != 0u) red_shared_add(hist + b, 1u);
            }
        }
        if (has_tail) {
            const u32 b = rc_bin(tail, sc, cq);
            if (b != 0u) red_shared_add(hist + b, 1u);
        }
    }
    __syncthreads();
    SS_PROBE_PASS();
    SS_PROBE(SS_MARK_PASS);
#if RC_COARSE_MERGE
    // This rank's cursor form (mrg) and its counts above each group (gsuf),
    // published at (A) for rc_coarse_crossing; hoff holds gsuf and the tables.
    u32* const gsuf = hoff + 512u;
    rc_cross_cursor<BLK>(hist, mrg, k, sm + RC_WSUM, res + 8);  // its crossing is unused
    for (u32 g = threadIdx.x; g < RC_GROUPS; g += BLK) gsuf[g] = mrg[g * RC_GROUPS + RC_GROUPS - 1u];
#endif
    cluster_sync();  // (A) every rank's histogram is complete
    SS_PROBE(SS_MARK_HANDOFF);

#if RC_COARSE_MERGE
    rc_coarse_crossing<BLK>(hist, mrg, gsuf, hoff, k, rank, cs, res);
#else
    // Merge over DSMEM: cluster total and the sum over lower ranks, per bin.
    for (u32 b = threadIdx.x; b < RC_BINS; b += BLK) {
        u32 total = 0, lower = 0;
        for (u32 r = 0; r < cs && r < 8u; ++r) {
            const u32 c = *cluster_map_ptr(hist + b, r);
            total += c;
            lower += (r < rank) ? c : 0u;
        }
        mrg[b] = total;
        hoff[b] = lower;
    }
    __syncthreads();
    rc_cross_cursor<BLK>(mrg, mrg, k, sm + RC_WSUM, res);
#endif
    SS_PROBE(SS_MARK_VERIFY);
    const u32 cbin = res[0], above = res[1], m = res[2];
    const u32 need = k - above;  // 1 ≤ need ≤ m for a real crossing
    const bool whole = need >= m;
    const bool escape = !fits || !bracket_ok || cbin == 0u || (!whole && (u64)m > (u64)cs * CAP);

    SsNarrowShared nsh;
    nsh.hist = hist;  // free once every peer has passed the next cluster barrier
    nsh.cross = reinterpret_cast<SsCross*>(sm + RC_CROSS);
    nsh.win = sm + RC_WIN;
    nsh.tie = sm + RC_TIE;

    if (escape) {
        cluster_sync();  // (B) peers are done reading this CTA's histogram
        if (rank == 0u) {
            RC_TRACE(RC_TR_ESCAPE);
            if (!bracket_ok) RC_TRACE(RC_TR_GUARD);
            ss_narrow_emit<BLK>(SsSrcRow{X}, n, 0u, 0xffffffffu, k, n, RC_FALLBACK_LEVELS, out_row, 0u, nsh);
        }
        return;
    }

#if RC_COARSE_MERGE
    // Winners of bin b > c go to wbase + (this rank's cursor); crossing-bin
    // candidates to above + cbase + (their slot among this rank's).
    const u32 wbase = res[4], cbase = res[5], wown = res[7];
#else
    for (u32 b = threadIdx.x; b < RC_BINS; b += BLK) mrg[b] += hoff[b];
    __syncthreads();
#endif

    // Emit: winners to the output, crossing candidates striped over the ranks.
    const u32 lim = whole ? k : above;
    i32* const out_emit = opaque_global_ptr(out_row);  // one IMAD.WIDE per winner (see opaque_global_ptr)
    RcSrcStriped src;
    src.ck = sm + RC_CK;
    src.ci = sm + RC_CK + CAP;
    src.cap = CAP;
#pragma unroll
    for (int u = 0; u < VPT + 1; ++u) {
#pragma unroll
        for (u32 c = 0; c < 4u; ++c) {
            if (u == VPT && c != 0u) continue;
            float x;
            u32 idx;
            if (u < VPT) {
                x = rc_lane(v[u], c);
                idx = ((rank * (u32)VPT + (u32)u) * (u32)BLK + threadIdx.x) * 4u + c;
            } else {
                x = tail;
                idx = body4 * 4u + threadIdx.x;
            }
            const u32 b = rc_bin(x, sc, cq);
            if (b >= cbin) {  // cbin ≥ 1: fill and tail-less slots (bin 0) never pass
                u32 pos = atomicAdd(mrg + b, 1u);
#if RC_COARSE_MERGE
                pos = b > cbin ? wbase + pos : above + cbase + (pos - wown);
#endif
                if (pos < lim) {
                    out_emit[pos] = (i32)idx;
                } else {
                    src.put(pos - above, fkey(x), idx);
                }
            }
        }
    }
    __syncthreads();
    cluster_sync();  // (C) candidates visible; every merge read is done
    SS_PROBE(SS_MARK_EMIT);
    if (whole) {
        if (rank == 0u) RC_TRACE(RC_TR_WHOLE);
        return;  // nobody reads a peer's shared memory after (C)
    }
    // Candidate q sits in rank q / CAP: with m ≤ CAP all of them are rank 0's
    // own (cluster-uniform: m is the merged histogram's).
    if (RC_LOCAL_REFINE != 0 && m <= CAP) {
        if (rank != 0u) return;  // rank 0 reads only its own shared memory from here
        RC_TRACE(RC_TR_LOCAL);
        rc_refine<BLK>(RcSrcLocal{src.ck, src.ci}, m, need, above, out_row, nsh);
        return;
    }
    if (rank == 0u) rc_refine<BLK>(src, m, need, above, out_row, nsh);
    cluster_sync();  // (D) peers stay resident while rank 0 reads their slabs
}

#define RC_ARGS                                                                                           \
    const float *__restrict__ logits, const i32 *__restrict__ lens, const i32 *__restrict__ hints, \
        i32 *__restrict__ out, const RcParams p
#define RC_PASS logits, lens, hints, out, p

extern "C" __global__ void __launch_bounds__(1024, 1) ss_regclus_v1(RC_ARGS) { ss_regclus_body<1024, 1>(RC_PASS); }
extern "C" __global__ void __launch_bounds__(1024, 1) ss_regclus_v2(RC_ARGS) { ss_regclus_body<1024, 2>(RC_PASS); }
extern "C" __global__ void __launch_bounds__(1024, 1) ss_regclus_v4(RC_ARGS) { ss_regclus_body<1024, 4>(RC_PASS); }
