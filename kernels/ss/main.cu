// main.cu — the self-sampling top-K's streaming "main" family (arms `ss-main`,
// and `ss` for the route's main picks; docs/algorithm.md).
//
// Per row: draw a strided sample of the row, histogram it into a
// threshold ladder, then ONE streaming pass that admits x >= T,
// histograms the admitted values in a 256-bin window and stages them.
// The histogram total is the exact survivor count, so the crossing of
// k is verified, never assumed: too few survivors → retry lower
// (TSH floor, then the hint floor), at most 3 passes. The crossing splits the
// survivors into certain winners (cursor emit) and one crossing bin
// refined exactly (O(m²) rank or key narrowing). Every bounded buffer
// has an exact escape: staging overflow → re-sweep, crossing
// bin > CMP → narrowing over the staged list (degen A), failed ladder or
// incomplete list → whole-row radix select (degen B).
//
// SPLIT (R CTAs per row): every part draws the same sample so all parts
// agree on T without talking; each stages its slice's survivors into a global
// per-row slab; the last CTA to arrive (packed atomic counter) rebuilds the
// histogram from the slab and finishes the row alone; it also zeroes the row's
// counters, so the workspace is zeroed once by the host and reused forever.
//
// Entry points (one per compiled shape; `__launch_bounds__` gives each the
// 64-register budget of the upstream BLK/MINB pairs):
//   ss_main_b1024_u{1,2,4,8}, ss_main_b512_u8, ss_main_b256_u8     (one CTA per row)
//   ss_main_split_u{1,2,4,8}                                        (BLK 1024, R CTAs per row)
// Launch: grid (R, rows) (R = 1 for non-split), block BLK, dynamic shared
// memory (scap + 4)·8 + (cmp + 1)·8 bytes.

#include "ss/common.cuh"

// Compile-time knobs (SS_L2_*, SS_PFD, SS_MAIN_STAGE_OUT, SS_SLAB_WAIT_BATCH,
// SS_THRESHOLD_TRIM, SS_SCAN_FORM, SS_WAVE_*, SS_ROW_U ...) and their defaults
// live in ss/knobs.cuh; `gvr-bench knobs` lists them, docs/decisions.md holds
// the evidence behind each default.
//
// SPLIT hand-off: a part arrives first, with one atomic on the row's count
// word that returns both its slab offset (the earlier parts' survivors) and
// its arrival rank. Every part but the last writes its survivors to the slab
// and leaves; each slab word is its own flag (bit 63 set when written, zero
// between launches). The last arriver reads the others' words as they land
// (SS_SLAB_WAIT_BATCH at a time), restores them to zero and keeps its own
// survivors in staging. The wait cannot deadlock: every part has arrived, so
// every part is resident and owes only its stores. Arriving before writing
// keeps two dependent L2 round trips and a fence off the finisher's path.
#define SS_ENTRY_BIT(KNOB, SPLIT) (((KNOB) & ((SPLIT) ? 2 : 1)) != 0)

// Wave stagger of the many-rows entries (SS_WAVE_STAGGER cycles, 0 = off): in
// a launch of at least SS_WAVE_MIN_TENTHS / 10 waves, the j-th CTA of each
// SM's first wave waits j/per_sm of the stagger before it starts. The CTAs of
// an SM run in lockstep, so every wave's latency-bound fixed phases (sample,
// histogram, threshold, emit) would leave DRAM idle at once; staggered, one
// CTA's fixed phases overlap another's pass, and the offset persists into the
// later waves. Rows shorter than SS_WAVE_FULL_N wait in proportion to their
// planned length (the fixed phases shrink with the row). SS_WAVE_SMS is the
// device's SM count, defined by the host.

// Launch scalars, filled by the host arm (src/arms/ss.rs `SsMainArgs`, same
// field order, all u32). The schedule fields (smp..q) are the host's
// numbers for a row of length `n_plan`; rows of another length (varlen)
// recompute them here from aim_base/amin/sfac/small_dense_en.
struct SsMainParams {
    u32 n_plan;
    u32 npad;
    u32 k;
    u32 r;
    u32 scap;  // staging capacity per CTA (dynamic smem)
    u32 cmp;   // crossing-bin candidate capacity (dynamic smem)
    u32 smp;
    u32 ss2;
    u32 tgt;
    u32 tgt2;
    u32 q;
    u32 aim_base;        // aim before the sqrt(C·n) floor and the clamps
    u32 amin;            // SPLIT aim floor (0 when R == 1)
    u32 sfac;
    u32 small_dense_en;  // k > 1024 and not big
    u32 tsh_en;          // SPLIT TSH staging enabled for the launch (row gate n/4 <= 32768)
    u32 next_n;          // 0: row_n holds per-row lengths; >= 1: kv_lens (ss_row_len)
    u32 cr_shift;        // varlen compress ratio as a shift (0: cr 1, 2: cr 4)
    u32 floor_coef;      // C of the aim floor round(sqrt(C·n)) (route::params::aim_floor_coef)
    u32 unit_shift;      // sample units of 8 << unit_shift values (route::params::main_sample_unit)
};

// Global workspace of SPLIT launches: g_don[160] u64 at 0 (arrivals
// << 32 | survivors; the low word is the slab fill cursor), bytes 1280-2047
// unused (the removed publication count's; the layout keeps its size),
// slabs of GCAP flagged (value, index) words per row from byte 2048 (zero
// between launches).
#define SS_MAXC 160u
#define SS_GCAP 16384u
#define SS_WS_SLAB_OFFSET 2048u
#define SS_RANK_MAX 288u
#define SS_REFINE_LEVELS 6
#define SS_FALLBACK_LEVELS 8

// Path trace for the host emulator (tests/ss_emu): which paths a row took,
// compared there with the CPU model's path counts. Compiles to nothing on
// the GPU.
#define SS_TR_HINT_START 1u       // T started at the hint floor (unsampled / degenerate sample)
#define SS_TR_RETRY 2u            // at least one extra streaming pass
#define SS_TR_FALLBACK 4u         // no verified crossing: whole-row narrowing
#define SS_TR_DEGEN_A 8u          // crossing bin > CMP, list complete
#define SS_TR_DEGEN_B 16u         // crossing bin > CMP, list incomplete
#define SS_TR_RESWEEP 32u         // staging overflowed, emit re-swept the row
#define SS_TR_WHOLE_BIN 64u       // crossing bin needed whole
#define SS_TR_RANK 128u           // O(m^2) rank refine
#define SS_TR_NARROW 256u         // key-narrowing refine
#define SS_TR_PART_RESWEEP 512u   // SPLIT part re-swept into the slab
#define SS_TR_SLAB_OVERFLOW 1024u // SPLIT slab overflow
#ifdef SS_EMULATION
#define SS_TRACE(bit)                                        \
    do {                                                     \
        if (threadIdx.x == 0) ss_emu_trace(blockIdx.y, bit); \
    } while (0)
#else
#define SS_TRACE(bit) \
    do {              \
    } while (0)
#endif

struct SsShared {
    u32 hist[SS_BINS];  // first member: 16-byte aligned for the scan's vector access
    u32 red[64];
    SsCross cross[3];
    u32 count;  // staging reservation counter (exact survivor count of the pass)
    // The row's length, re-read from here after the prologue: keeping it in a
    // register across the streaming pass costs the pipelined entries a spill
    // once the length comes from the varlen formula (no cheap remat).
    u32 row_len;
    u32 emit_win;
    u32 emit_tie;
    u32 slab_base;
    u32 total;
    u32 kmin;
    u32 kmax;
    u64 don_old;
    // Retry-ladder state (block-uniform; thread 0 writes, read after a
    // barrier). Kept here rather than in registers: the row pass needs them.
    float lad_h;      // upper anchor H of the window
    float lad_floor;  // TSH floor (-inf: none)
    float lad_gmin;   // hint bracket, or the ±3e38 sentinels
    float lad_gmax;
    u32 lad_gathered;
};

extern __shared__ __align__(16) u64 ss_dyn[];

// Per-row sample schedule (Q comes from the grid, see the body). Mirrors
// `route::params` and is unit-tested on the host through its Rust twin
// `ss::row_schedule`.
struct SsRowSched {
    u32 smp, ss2, tgt, tgt2;
};

// Pair j (8 values, two float4) of a sample in units of 2^sh pairs, SS2
// unit slots apart: unit j >> sh, pair j mod 2^sh inside it. Consecutive j
// are adjacent threads, so a unit's pairs are read together.
// The offset is inside the row (< n < 2^31), so 32-bit arithmetic.
__device__ __forceinline__ const float* ss_sample_pair(const float* X, u32 j, u32 ss2, u32 sh) {
    return X + ((((j >> sh) * ss2) << (3u + sh)) + ((j & ((1u << sh) - 1u)) << 3));
}

// Fold the eight values of a sample pair into the key range (NaN ignored, as
// fmin / fmax do).
__device__ __forceinline__ void ss_pair_minmax(float4 a, float4 b, u32& kmin, u32& kmax) {
    const float vals[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
    for (int e = 0; e < 8; ++e) {
        if (vals[e] == vals[e]) {
            const u32 key = fkey(vals[e]);
            kmin = kmin < key ? kmin : key;
            kmax = kmax > key ? kmax : key;
        }
    }
}

__device__ __forceinline__ SsRowSched ss_row_schedule(const SsMainParams& p, u32 n, u32 sh) {
    SsRowSched s;
    if (n == p.n_plan) {
        s.smp = p.smp;
        s.ss2 = p.ss2;
        s.tgt = p.tgt;
        s.tgt2 = p.tgt2;
        return s;
    }
    const u32 k = p.k;
    u32 aim = p.aim_base;
    const u32 floor = (u32)(0.5 + __dsqrt_rn((double)p.floor_coef * (double)n));
    aim = aim > floor ? aim : floor;
    if (p.r > 1u) aim = aim > p.amin ? aim : p.amin;
    aim = aim < (p.scap >> 1) ? aim : (p.scap >> 1);
    aim = aim > k ? aim : k;
    const bool small_dense = p.small_dense_en != 0u && n <= p.scap && n > 2u * k;
    const bool sampled = (n > p.scap || small_dense) && (n >> 2) >= 4u;
    if (sampled) {
        u64 sel = (u64)p.sfac * (u64)n / (u64)(aim > 0u ? aim : 1u);
        if (sel < 256u) sel = 256u;
        if (sel > (u64)(n >> 1)) sel = n >> 1;
        u32 units = (u32)(sel >> (3u + sh));
        if (units < 1u) units = 1u;
        u32 slots = (n >> 2) >> (1u + sh);
        if (slots < 1u) slots = 1u;
        if (units > slots) units = slots;
        u32 ss2 = slots / units;
        if (ss2 < 1u) ss2 = 1u;
        u32 smp = slots / ss2;
        if (smp < 1u) smp = 1u;
        u64 tgt = (((u64)aim * smp) << (3u + sh)) / n;
        u64 tgt2 = (((u64)k * smp) << (3u + sh)) / n;
        s.smp = smp;
        s.ss2 = ss2;
        s.tgt = tgt > 1u ? (u32)tgt : 1u;
        s.tgt2 = tgt2 > 1u ? (u32)tgt2 : 1u;
    } else {
        s.smp = 0u;
        s.ss2 = 1u;
        s.tgt = 0u;
        s.tgt2 = 0u;
    }
    return s;
}

// Survivor walk of one classified tile of either streaming pass
// (ss_walk_survivors): one slot reservation per warp, each survivor
// histogrammed (non-split) and staged.
template <int BLK, bool SPLIT>
__device__ __forceinline__ void ss_walk_tile(const float* X, u32 tb, u32 mask, float tf, float sc, u32 scap,
                                             u64* stage, SsShared& s) {
    ss_walk_survivors<BLK>(X, tb, mask, &s.count, [&](float x, u32 idx, u32 pos) {
        ss_admit<!SPLIT>(x, idx, pos, tf, sc, scap, stage, s.hist);
    });
}

// One streaming pass over the float4 range [c0, c1) (+ the scalar tail
// [4·n4, n) when `tail`). Tiles of BLK·U float4; loads past c1 are redirected
// to the last float4 of the padded row and masked by index. Survivors are
// re-read with scalar loads while staging, so the U float4 do not stay live.
template <int BLK, int U, bool SPLIT>
__device__ __forceinline__ void ss_row_pass(const float* X, u32 c0, u32 c1, bool tail, u32 redirect,
                                            float tf, float sc, u32 scap, u64* stage, SsShared& s) {
    const u32 t = threadIdx.x;
    for (u32 tb = c0; tb < c1; tb += (u32)(BLK * U)) {  // block-uniform trip count
        // Classify as each float4 arrives; only the 4U-bit mask stays live
        // (the float4 are not kept for the survivor walk: register cap).
        u32 mask = 0;
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const u32 i = tb + (u32)u * BLK + t;
            const float4 v = ldg_nc_f4(X + (u64)(i < c1 ? i : redirect) * 4u);
            const u32 bits = ss_admit_bits(v, tf);
            mask |= (i < c1 ? bits : 0u) << (4 * u);  // masked by index, never by value
        }
        ss_walk_tile<BLK, SPLIT>(X, tb, mask, tf, sc, scap, stage, s);
    }
    if (tail) {  // n mod 4 trailing elements, scalar loads (never past n)
        const u32 n = s.row_len;
        const u32 e = ((n >> 2) << 2) + t;
        if (e < n) {
            const float x = ldg_nc_f(X + e);
            if (ss_admits(x, tf)) ss_admit<!SPLIT>(x, e, atomicAdd(&s.count, 1u), tf, sc, scap, stage, s.hist);
        }
    }
}

// Lane 0 of every warp prefetches the warp's share of float4 [f0, f0 + span)
// clamped to c1: the block-wide request is split so no single bulk copy is
// large and the issue cost is spread over the warps.
template <int BLK>
__device__ __forceinline__ void ss_prefetch_span(const float* X, u32 f0, u32 span, u32 c1) {
    if (lane_id() != 0u || f0 >= c1) return;
    const u32 nw = (u32)(BLK / 32);
    const u32 avail = c1 - f0 < span ? c1 - f0 : span;
    const u32 chunk = (avail + nw - 1u) / nw;
    const u64 a = (u64)f0 + (u64)warp_id() * chunk;
    if (a >= c1) return;
    const u64 b = a + chunk < (u64)c1 ? a + chunk : (u64)c1;
    ss_prefetch_l2(X, (u32)a, (u32)b);
}


// SS_L2_DIST > 0: lane 0 of each warp prefetches the warp's 32·U float4 of
// the tile SS_L2_DIST ahead of tb into L2, recomputed from tb so no register
// is loop-carried. No wrap: c1 <= 2^18.
template <int BLK, int U>
__device__ __forceinline__ void ss_prefetch_tile_ahead(const float* X, u32 tb, u32 c1) {
    if (SS_L2_DIST > 0 && lane_id() == 0u) {
        const u32 ahead = tb + (u32)(SS_L2_DIST * BLK * U) + warp_id() * (u32)(32 * U);
        if (ahead < c1) ss_prefetch_l2(X, ahead, c1 - ahead < (u32)(32 * U) ? c1 : ahead + (u32)(32 * U));
    }
}

// Register prefetch depth per entry shape, set from the ptxas reports under
// the 64-register `__launch_bounds__` budget (tests/nvrtc/ss_kernel_compile.rs):
// U <= 4 and the SPLIT U = 8 entry fit the whole next tile (PFD = U); the
// one-CTA-per-row U = 8 entries already sit at 64 registers unpipelined and
// spill with even one float4 carried across the walk, so they get PFD = 0
// (L2 prefetch only — they keep 8 float4 per thread in flight per tile).
// The one-CTA-per-row U = 4 entry carries 3 of its 4 (PFD = 3): with the
// varlen row-length formula in the kernel the full tile spills there.
template <int U, bool SPLIT>
struct SsPfd {
    static constexpr int value = SS_PFD >= 0   ? (SS_PFD < U ? SS_PFD : U)
                                 : SPLIT       ? U
                                 : U >= 8      ? 0
                                 : U == 4      ? 3
                                               : U;
};

// Which entries stream with the pipelined pass: the one-CTA-per-row entries
// (long slices, where overlapping the next tile's loads with the walk pays);
// SPLIT parts stream short slices, where the extra prefetch issue and
// registers cost more than the overlap gains, and keep the plain pass.
template <bool SPLIT>
struct SsPipelined {
    static constexpr bool value = !SPLIT;
};

// Pipelined pass over the float4 range [c0, c1) (+ the scalar tail).
// Register budget: PFD float4 of the next tile stay live across the walk
// (4·PFD registers); the other U − PFD are issued at the next tile's start.
template <int BLK, int U, int PFD, bool SPLIT>
__device__ __forceinline__ void ss_row_pass_pipelined(const float* X, u32 c0, u32 c1, bool tail,
                                                      u32 redirect, float tf, float sc, u32 scap, u64* stage,
                                                      SsShared& s) {
    static_assert(PFD >= 0 && PFD <= U, "PFD is 0..U");
    const u32 t = threadIdx.x;
    const u32 TILE = (u32)(BLK * U);
    float4 v[U];
    // Prologue: the first PFD float4 of the first tile (the rest are issued
    // at the top of the loop like every tile's).
    if (PFD > 0 && c0 < c1) {
#pragma unroll
        for (int u = 0; u < PFD; ++u) {
            const u32 i = c0 + (u32)u * BLK + t;
            v[u] = ldg_nc_f4(X + (u64)(i < c1 ? i : redirect) * 4u);
        }
    }
    for (u32 tb = c0; tb < c1; tb += TILE) {  // block-uniform trip count
#pragma unroll
        for (int u = PFD; u < U; ++u) {
            const u32 i = tb + (u32)u * BLK + t;
            v[u] = ldg_nc_f4(X + (u64)(i < c1 ? i : redirect) * 4u);
        }
        u32 mask = 0;
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const u32 i = tb + (u32)u * BLK + t;
            mask |= (i < c1 ? ss_admit_bits(v[u], tf) : 0u) << (4 * u);  // masked by index, never by value
        }
        // L2 prefetch after the classification, where the tile's float4 are
        // dead (it would otherwise raise the loop's register peak).
        ss_prefetch_tile_ahead<BLK, U>(X, tb, c1);
        // Issue the next tile's first PFD float4 before walking this one.
        const u32 nb = tb + TILE;  // no wrap: c1 <= 2^18 and TILE <= 2^13
        if (PFD > 0 && nb < c1) {
#pragma unroll
            for (int u = 0; u < PFD; ++u) {
                const u32 i = nb + (u32)u * BLK + t;
                v[u] = ldg_nc_f4(X + (u64)(i < c1 ? i : redirect) * 4u);
            }
        }
        ss_walk_tile<BLK, SPLIT>(X, tb, mask, tf, sc, scap, stage, s);
    }
    if (tail) {  // n mod 4 trailing elements, scalar loads (never past n)
        const u32 n = s.row_len;
        const u32 e = ((n >> 2) << 2) + t;
        if (e < n) {
            const float x = ldg_nc_f(X + e);
            if (ss_admits(x, tf)) ss_admit<!SPLIT>(x, e, atomicAdd(&s.count, 1u), tf, sc, scap, stage, s.hist);
        }
    }
}

// Cursor emit over a survivor list (or the whole row: the admission
// test is re-applied, so the same function serves the overflow re-sweep).
// `hist` holds the cursors after(j) of the accepted scan.
template <int BLK, class Src>
__device__ __noinline__ void ss_cursor_emit(const Src src, u32 count, float tf, float sc, u32 cross_bin, u32 above,
                                            u32 lim1, bool whole, u32 cmp, u32* hist, u64* ck64, i32* out) {
    for (u32 i = threadIdx.x; i < count; i += BLK) {
        float x;
        u32 idx;
        src.get(i, &x, &idx);
        if (!ss_admits(x, tf)) continue;
        const u32 bin = ss_bin(x, tf, sc);
        if (bin < cross_bin) continue;  // certain loser
        const u32 slot = atomicAdd(hist + bin, 1u);
        if (slot < lim1) {
            out[slot] = (i32)idx;  // certain winner (or the whole crossing bin)
        } else if (!whole) {
            const u32 q = slot - above;
            if (q < cmp) ck64[q] = ((u64)fkey(x) << 32) | (u64)idx;
        }
    }
}

template <u32 BLK>
__device__ __forceinline__ void ss_wave_stagger(u32 row, u32 rows, u32 n_plan) {
    constexpr u32 per_sm = 1024u / BLK;  // residency of the one-CTA entries' __launch_bounds__
    constexpr unsigned long long stagger = BLK == 512 ? SS_WAVE_STAGGER : BLK == 256 ? SS_WAVE_STAGGER_256 : 0;
    constexpr u32 slots = per_sm * SS_WAVE_SMS;
    if (stagger == 0 || (u64)rows * 10u < (u64)slots * SS_WAVE_MIN_TENTHS || row >= slots) return;
    unsigned long long span = stagger;
    if (SS_WAVE_FULL_N > 0 && n_plan < SS_WAVE_FULL_N) span = stagger * n_plan / SS_WAVE_FULL_N;
    const unsigned long long wait = span * (row / SS_WAVE_SMS) / per_sm;
    const unsigned long long t0 = gvr_probe_clock();
    while (gvr_probe_clock() - t0 < wait) __nanosleep(200);
}

// Stores one word of a SPLIT part's slab range: a flagged relaxed store (the
// word is its own flag). The pair comes first so it is computed before the
// address.
__device__ __forceinline__ void ss_slab_put(u64 pair, u64* w) { st_relaxed_gpu_u64(w, pair | SS_SLAB_WRITTEN); }

// The slab range of a part whose pass overflowed staging: its float4 slice
// [c0, c1) (+ the row's scalar tail past n4 float4 when `tail`) re-read with
// the pass's own test, so exactly the words the pass counted.
template <int BLK>
__device__ __forceinline__ void ss_slab_resweep_part(const float* X, u32 c0, u32 c1, u32 n4, bool tail, float TF,
                                                     u64* slab, u32 base, SsShared& s) {
    const u32 t = threadIdx.x;
    SS_TRACE(SS_TR_PART_RESWEEP);
    __syncthreads();
    if (t == 0u) s.count = 0u;
    __syncthreads();
    const u32 e_end = 4u * c1;
    for (u32 e0 = 4u * c0; e0 < e_end; e0 += BLK) {
        const u32 e = e0 + t;
        float x = 0.f;
        bool admit = false;
        if (e < e_end) {
            x = ldg_nc_f(X + e);
            admit = ss_admits(x, TF);
        }
        const u32 slot = warp_reserve(admit, &s.count);
        if (admit && base + slot < SS_GCAP) ss_slab_put(ss_pack(x, e), slab + (base + slot));
    }
    if (tail) {
        const u32 e = 4u * n4 + t;
        float x = 0.f;
        bool admit = false;
        if (e < s.row_len) {
            x = ldg_nc_f(X + e);
            admit = ss_admits(x, TF);
        }
        const u32 slot = warp_reserve(admit, &s.count);
        if (admit && base + slot < SS_GCAP) ss_slab_put(ss_pack(x, e), slab + (base + slot));
    }
}

// A SPLIT part's survivors into its slab range [base, base + myn) (words
// past GCAP are dropped: the finisher sees the overflow in the total):
// copied from staging, or re-swept where the pass overflowed it.
template <int BLK>
__device__ __forceinline__ void ss_slab_write_part(const float* X, u32 c0, u32 c1, u32 n4, bool tail, float TF,
                                                   u32 myn, u32 scap, const u64* stage, u64* slab, u32 base,
                                                   SsShared& s) {
    const u32 t = threadIdx.x;
    if (myn <= scap) {
        for (u32 i = t; i < myn; i += BLK)
            if (base + i < SS_GCAP) ss_slab_put(stage[i], slab + (base + i));
    } else {
        ss_slab_resweep_part<BLK>(X, c0, c1, n4, tail, TF, slab, base, s);
    }
}

template <int BLK, int U, bool SPLIT>
__device__ __forceinline__ void ss_main_body(const float* __restrict__ logits, const i32* __restrict__ row_n,
                                             const i32* __restrict__ hints, i32* __restrict__ out,
                                             const SsMainParams& p, unsigned char* workspace) {
    constexpr bool COUNTED = SS_ENTRY_BIT(SS_SCAN_FORM, SPLIT);
    constexpr bool TRIM = SS_ENTRY_BIT(SS_THRESHOLD_TRIM, SPLIT);
    __shared__ __align__(16) SsShared s;
    SS_PROBE_SCOPE();
    const u32 t = threadIdx.x;
    const u32 row = blockIdx.y;
    if (!SPLIT) ss_wave_stagger<BLK>(row, gridDim.y, p.n_plan < p.npad ? p.n_plan : p.npad);
    const u32 part = SPLIT ? blockIdx.x : 0u;
    const u32 k = p.k;
    const u32 npad = p.npad;
    const float* X = logits + (u64)row * npad;
    // The length's load goes out first, the first sample unit of the planned
    // schedule next; the length is waited for after both.
    SsRowLenEarly len;
    len.issue(row_n, row, p.next_n, SS_MAIN_SAMPLE_AHEAD != 0);
    // SPLIT launches always sample in PAIRs (the host never plans QUADs for
    // them), so their sample code carries no unit arithmetic.
    const u32 ush = SPLIT ? 0u : p.unit_shift;
    const bool ahead = SS_MAIN_SAMPLE_AHEAD != 0 && p.n_plan > k && p.n_plan <= npad && t < (p.smp << ush);
    SsPairAhead sample0;
    if (ahead) sample0.issue(ss_sample_pair(X, t, p.ss2, ush));
    const u32 n = len.wait(row_n, row, p.next_n, p.cr_shift, npad);
    SS_PROBE(SS_MARK_LEN);

    // Short rows: identity then -1. Row-uniform, so a SPLIT short row
    // skips the arrival protocol in every part and leaves the workspace zero.
    if (n <= k) {
        if (part == 0u) write_identity_row(out + (u64)row * k, n, k);
        return;
    }
    SsNarrowShared nsh;
    nsh.hist = s.hist;
    nsh.cross = s.cross;
    nsh.win = &s.emit_win;
    nsh.tie = &s.emit_tie;
    if (!SPLIT && blockIdx.x != 0u) return;  // one CTA per row: extra grid columns do nothing
    if (SPLIT && row >= SS_MAXC) {
        // The workspace has no slab for this row (the host never plans it):
        // part 0 selects the row alone with the exact whole-row fallback.
        if (part == 0u) {
            SsSrcRow src;
            src.row = X;
            ss_narrow_emit<BLK, COUNTED>(src, n, 0u, 0xffffffffu, k, n, SS_FALLBACK_LEVELS, out + (u64)row * k, 0u, nsh);
        }
        return;
    }
    const SsRowSched rs = ss_row_schedule(p, n, ush);
    const u32 n4 = n >> 2;
    // The slice size comes from the launched grid, never from a host scalar
    // that could disagree with it: every float4 of the row is owned once.
    const u32 parts = SPLIT ? gridDim.x : 1u;
    const u32 q = (n4 + parts - 1u) / parts;
    u32 c0 = 0u, c1 = n4;
    if (SPLIT) {
        const u64 lo = (u64)part * q;
        c0 = lo < n4 ? (u32)lo : n4;
        c1 = (u64)c0 + q < n4 ? c0 + q : n4;
    }
    const u32 redirect = npad / 4u - 1u;  // last float4 of the padded row: always addressable
    u64* stage = ss_dyn;
    u64* ck64 = ss_dyn + p.scap + 4u;

    for (u32 b = t; b < SS_BINS; b += BLK) s.hist[b] = 0u;
    if (t == 0u) {
        s.count = 0u;
        s.row_len = n;
    }

    // ---- P1/P2: sample and threshold ladder ----
    u32 kmin = 0xffffffffu, kmax = 0u;
    const bool ahead_hit = ahead && n == p.n_plan;  // rs is the planned schedule: unit t is loaded
    const u32 pairs = rs.smp << ush;
    for (u32 j = t; j < pairs; j += BLK) {
        const float* unit = ss_sample_pair(X, j, rs.ss2, ush);
        float4 a, b;
        sample0.take(ahead_hit && j == t, unit, a, b);
        ss_pair_minmax(a, b, kmin, kmax);
    }
    ss_block_minmax<BLK>(&kmin, &kmax, s.red);  // also publishes the init above
    SS_PROBE(SS_MARK_SAMPLE);
    // The sample has arrived: start the slice's first tile(s) toward L2, so
    // their DRAM latency overlaps the histogram, scan and ladder. Not earlier:
    // issued at kernel start the bulk requests delay the sample's own loads.
    // BLK 256 slices of more than 4 tiles skip it: there the prefetched lines
    // are evicted before the pass reaches them (docs/decisions.md, SS_L2_START).
    if constexpr (SS_L2_START > 0 && (SsPipelined<SPLIT>::value || (SPLIT && SS_L2_START_SPLIT != 0)))
        if (BLK >= 512 || c1 - c0 <= (u32)(4 * BLK * U))
            ss_prefetch_span<BLK>(X, c0, (u32)(SS_L2_START * BLK * U), c1);
    const float smin = invkey(kmin), smax = invkey(kmax);
    const bool sok = rs.smp > 0u && smax > smin;
    const float NEG_INF = ss_neg_inf();
    float T = NEG_INF, H = NEG_INF, floor3 = NEG_INF;
    float w = 0.f;
    u32 tot0 = 0u;
    SsCross b3;
    b3.valid = 0u;
    b3.bin = 0u;
    if (sok) {
        w = TRIM ? __fmul_rn(__fsub_rn(smax, smin), 1.f / (float)SS_BINS)
                 : __fdiv_rn(__fsub_rn(smax, smin), (float)SS_BINS);
        const float sc = __fdiv_rn(1.f, w);
        for (u32 j = t; j < pairs; j += BLK) {
            const float* unit = ss_sample_pair(X, j, rs.ss2, ush);
            const float4 a = ldg_nc_f4(unit), b = ldg_nc_f4(unit + 4);
            const float vals[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
            for (int e = 0; e < 8; ++e) red_shared_add(s.hist + ss_bin(vals[e], smin, sc), 1u);
        }
        __syncthreads();
        SS_PROBE(SS_MARK_HIST);
        if (warp_id() == 0u) {
            const u32 tot = ss_scan256<COUNTED>(s.hist, rs.tgt, rs.tgt2, 2u * rs.tgt, s.cross, SS_SCAN_ZERO);
            if (lane_id() == 0u) s.total = tot;
        }
        __syncthreads();
        tot0 = s.total;
        const SsCross b1 = s.cross[0], b2 = s.cross[1];
        b3 = s.cross[2];
        if (b1.valid && tot0 >= rs.tgt) {
            T = __fmaf_rn((float)b1.bin, w, smin);
            if (b2.valid) {
                const float tk = __fmaf_rn((float)b2.bin, w, smin);
                const float d = fmaxf(__fsub_rn(tk, T), 0.f);
                H = fmaxf(__fmaf_rn(4.f, d, T), __fmaf_rn(8.f, w, T));
            }
        }
        if (!TRIM) __syncthreads();  // s.total / s.cross are rewritten later
    }
    bool gathered = false;
    float gmin = SS_SENT_LO, gmax = SS_SENT_HI;
    if (!(T > NEG_INF)) {  // no usable rung (or NaN from an infinite width): hint floor
        ss_gather_hints<BLK>(X, ss_hint_row(hints, row, p.next_n, k), n, k, s.red, &gmin, &gmax);
        gathered = true;
        T = gmin;
        H = NEG_INF;
        SS_TRACE(SS_TR_HINT_START);
    }
    if (sok && b3.valid && tot0 >= 2u * rs.tgt && T > gmin) {
        const float t3 = __fmaf_rn((float)b3.bin, w, smin);
        if (t3 < T) floor3 = t3;
    }
    if (SPLIT && p.tsh_en != 0u && n4 <= 32768u && floor3 > NEG_INF && floor3 < T) T = floor3;  // TSH staging
    if (t == 0u) {
        s.lad_h = H;
        s.lad_floor = floor3;
        s.lad_gmin = gmin;
        s.lad_gmax = gmax;
        s.lad_gathered = gathered ? 1u : 0u;
    }
    __syncthreads();
    SS_PROBE(SS_MARK_THRESHOLD);

    // ---- P3 + verify + retry ladder; SPLIT: exactly one attempt ----
    const int NATT = SPLIT ? 1 : 3;
    bool valid = false, complete = false, from_slab = false;
    u32 list_n = 0u;
    SsCross cr;
    cr.bin = 0u;
    cr.above = 0u;
    cr.m = 0u;
    float TF = T, SC = 1.f;
    for (int att = 0; att < NATT; ++att) {
        if (att > 0) {
            for (u32 b = t; b < SS_BINS; b += BLK) s.hist[b] = 0u;
            if (t == 0u) s.count = 0u;
            __syncthreads();
        }
        TF = T;
        const float h_cap = s.lad_h;
        float hi = fmaxf(s.lad_gmax, T);
        if (h_cap > T && h_cap < hi) hi = h_cap;
        float wd = TRIM ? __fmul_rn(__fsub_rn(hi, T), 1.f / (float)SS_BINS)
                        : __fdiv_rn(__fsub_rn(hi, T), (float)SS_BINS);
        if (!(wd > 0.f)) wd = SS_MIN_WIDTH;
        SC = __fdiv_rn(1.f, wd);
        if (!(SC < __int_as_float(0x7f800000))) SC = __fdiv_rn(1.f, SS_MIN_WIDTH);  // denormal width
        if constexpr (SsPipelined<SPLIT>::value)
            ss_row_pass_pipelined<BLK, U, SsPfd<U, SPLIT>::value, SPLIT>(X, c0, c1, part == 0u, redirect, TF,
                                                                         SC, p.scap, stage, s);
        else
            ss_row_pass<BLK, U, SPLIT>(X, c0, c1, part == 0u, redirect, TF, SC, p.scap, stage, s);
        __syncthreads();
        SS_PROBE_PASS();
        SS_PROBE(SS_MARK_PASS);
        if (SPLIT) break;
        const u32 myn = s.count;
        if (warp_id() == 0u) {
            const u32 tot = ss_scan256<COUNTED>(s.hist, k, 0u, 0u, s.cross, SS_SCAN_CURSOR);
            if (lane_id() == 0u) s.total = tot;
        }
        __syncthreads();
        SS_PROBE(SS_MARK_VERIFY);
        const u32 tot = s.total;
        if (tot >= k) {  // verified: the top-k is inside the admitted set
            cr = s.cross[0];
            valid = true;
            complete = myn <= p.scap;
            list_n = myn;
            break;
        }
        if (att == NATT - 1) break;
        const float floor_now = s.lad_floor;
        if (att == 0 && floor_now > NEG_INF && floor_now < TF) {
            T = floor_now;
            SS_TRACE(SS_TR_RETRY);
            continue;
        }
        float gmin_now = s.lad_gmin;
        if (s.lad_gathered == 0u) {
            float gmax_now;
            ss_gather_hints<BLK>(X, ss_hint_row(hints, row, p.next_n, k), s.row_len, k, s.red, &gmin_now, &gmax_now);
            if (t == 0u) {  // every thread read lad_gathered before the gather's barriers
                s.lad_gmin = gmin_now;
                s.lad_gmax = gmax_now;
                s.lad_gathered = 1u;
            }
        }
        if (T <= gmin_now) break;
        T = gmin_now;
        SS_TRACE(SS_TR_RETRY);
    }

    u32 slab_restore = 0u;  // slab words the finisher zeroes once the list has been read from them
    if (SPLIT) {
        // ---- hand-off through the global slab; the last arriver finishes ----
        u64* g_don = reinterpret_cast<u64*>(workspace);
        u64* slab = reinterpret_cast<u64*>(workspace + SS_WS_SLAB_OFFSET) + (u64)row * SS_GCAP;
        const u32 myn = s.count;
        if (t == 0u) {
            const u64 arrived = atomicAdd(reinterpret_cast<unsigned long long*>(g_don + row),
                                          (1ull << 32) + (unsigned long long)myn);
            s.slab_base = (u32)arrived;
            s.don_old = arrived;
        }
        __syncthreads();
        const u32 base = s.slab_base;
        const u64 old = s.don_old;
        const bool last = (u32)(old >> 32) == parts - 1u;
        const u32 total = base + myn;  // the last arriver's base is every other part's survivors
        // The last arriver keeps its survivors in staging unless the list is read
        // from the slab (more than staging holds) or abandoned (slab overflow).
        if (!last || (total > p.scap && total <= SS_GCAP)) {
            ss_slab_write_part<BLK>(X, c0, c1, n4, part == 0u, TF, myn, p.scap, stage, slab, base, s);
            if (myn > p.scap) __syncthreads();  // the finisher reads its own re-swept words below
        }
        if (!last) return;  // nothing to publish: every slab word is its own flag
        if (t == 0u) g_don[row] = 0ull;  // every part has arrived: the count is restored
        SS_PROBE(SS_MARK_HANDOFF);
        // The other parts' words [0, base) are read as they land: a zero word is
        // not written yet. No deadlock: every part has arrived, so each is
        // resident and owes only its stores.
        const u32 others = base < SS_GCAP ? base : SS_GCAP;
        if (total > SS_GCAP) {
            SS_TRACE(SS_TR_SLAB_OVERFLOW);
            for (u32 i = t; i < others; i += BLK) {  // wait for each word, then restore it
                ss_slab_wait(slab + i);
                st_relaxed_gpu_u64(slab + i, 0ull);
            }
        } else {
            from_slab = total > p.scap;
            if (from_slab) slab_restore = total;
            for (u32 i = t; i < myn; i += BLK) {
                const u64 v = myn <= p.scap ? stage[i] : ld_cg_u64(slab + base + i) & ~SS_SLAB_WRITTEN;
                red_shared_add(s.hist + ss_bin(__uint_as_float((u32)v), TF, SC), 1u);
            }
            // SS_SLAB_WAIT_BATCH words per thread are loaded before the first is
            // used (one L2 round trip for all of them when they have landed);
            // a word still zero is then waited for alone.
            for (u32 i0 = t; i0 < others; i0 += SS_SLAB_WAIT_BATCH * BLK) {
                u64 w[SS_SLAB_WAIT_BATCH];
#pragma unroll
                for (int j = 0; j < SS_SLAB_WAIT_BATCH; ++j) {
                    const u32 i = i0 + (u32)j * BLK;
                    w[j] = SS_SLAB_WAIT_BATCH > 1 && i < others ? ld_relaxed_gpu_u64(slab + i) : 0ull;
                }
#pragma unroll
                for (int j = 0; j < SS_SLAB_WAIT_BATCH; ++j) {
                    const u32 i = i0 + (u32)j * BLK;
                    if (i >= others) break;
                    const u64 v = (w[j] != 0ull ? w[j] : ss_slab_wait(slab + i)) & ~SS_SLAB_WRITTEN;
                    red_shared_add(s.hist + ss_bin(__uint_as_float((u32)v), TF, SC), 1u);
                    if (!from_slab) {
                        stage[myn + i] = v;  // the list: own survivors first, then the others'
                        st_relaxed_gpu_u64(slab + i, 0ull);
                    }
                }
            }
        }
        if (total <= SS_GCAP) {  // the list's histogram is complete: verify the crossing
            __syncthreads();
            if (warp_id() == 0u) {
                const u32 tot = ss_scan256<COUNTED>(s.hist, k, 0u, 0u, s.cross, SS_SCAN_CURSOR);
                if (lane_id() == 0u) s.total = tot;
            }
            __syncthreads();
            SS_PROBE(SS_MARK_VERIFY);
            if (s.total >= k) {
                cr = s.cross[0];
                valid = true;
                complete = true;
                list_n = total;
            }
        }
    }

    // ---- classification, refinement, fallbacks ----
    i32* O = out + (u64)row * k;  // formed here, not earlier: keeps the row pass under 64 registers
    const u32 need = valid ? k - cr.above : k;
    const bool whole = valid && need >= cr.m;
    const bool degen = !valid || cr.m > p.cmp;
    if (!valid) SS_TRACE(SS_TR_FALLBACK);
    if (!degen) {
        if (!complete) SS_TRACE(SS_TR_RESWEEP);
        if (whole) SS_TRACE(SS_TR_WHOLE_BIN);
        const u32 lim1 = cr.above + (whole ? cr.m : 0u);
        // E is where the emit and the rank refine write (SS_MAIN_STAGE_OUT):
        // the staging buffer past the list it still holds, or the output.
        i32* E = O;
        const u32 held = complete && !(SPLIT && from_slab) ? list_n : 0u;  // stage slots the list holds
        if (ss_stage_out<BLK>(SS_MAIN_STAGE_OUT, held, k, p.scap)) E = reinterpret_cast<i32*>(stage + held);
        if (complete) {
            if (SPLIT && from_slab) {
                SsSrcSlab src;
                src.p = reinterpret_cast<const u64*>(workspace + SS_WS_SLAB_OFFSET) + (u64)row * SS_GCAP;
                ss_cursor_emit<BLK>(src, list_n, TF, SC, cr.bin, cr.above, lim1, whole, p.cmp, s.hist, ck64, E);
            } else {
                SsSrcStage src;
                src.p = stage;
                ss_cursor_emit<BLK>(src, list_n, TF, SC, cr.bin, cr.above, lim1, whole, p.cmp, s.hist, ck64, E);
            }
        } else {  // staging overflowed (non-split): re-sweep the row, same test and bin
            SsSrcRow src;
            src.row = X;
            ss_cursor_emit<BLK>(src, s.row_len, TF, SC, cr.bin, cr.above, lim1, whole, p.cmp, s.hist, ck64, E);
        }
        __syncthreads();
        SS_PROBE(SS_MARK_EMIT);
        // Indices of [0, staged) are in E: the certain winners, the whole
        // crossing bin, or after the rank refine all k.
        u32 staged = lim1;
        if (!whole) {
            const u32 mc = cr.m;  // == candidates written (m <= CMP)
            if (mc <= SS_RANK_MAX) {
                SS_TRACE(SS_TR_RANK);
                // Ranks over distinct 64-bit (value, index) keys are a permutation.
                for (u32 i = t; i < mc; i += BLK) {
                    const u64 mine = ck64[i];
                    u32 rank = 0;
                    for (u32 j = 0; j < mc; ++j) rank += ck64[j] > mine ? 1u : 0u;
                    if (rank < need) E[cr.above + rank] = (i32)(u32)mine;
                }
                staged = k;
            } else {
                SS_TRACE(SS_TR_NARROW);
                if (t == 0u) {
                    s.kmin = 0xffffffffu;
                    s.kmax = 0u;
                }
                __syncthreads();
                for (u32 i = t; i < mc; i += BLK) {
                    const u32 key = (u32)(ck64[i] >> 32);
                    atomicMin(&s.kmin, key);
                    atomicMax(&s.kmax, key);
                }
                __syncthreads();
                SsSrcCand src;
                src.p = ck64;
                ss_narrow_emit<BLK, COUNTED>(src, mc, s.kmin, s.kmax, need, mc, SS_REFINE_LEVELS, O, cr.above, nsh);
            }
        }
        if (E != O) ss_copy_out_staged<BLK>(E, O, staged);
    } else if (valid && complete) {
        // Degen A: crossing bin above CMP, but every survivor is listed.
        SS_TRACE(SS_TR_DEGEN_A);
        if (SPLIT && from_slab) {
            SsSrcSlab src;
            src.p = reinterpret_cast<const u64*>(workspace + SS_WS_SLAB_OFFSET) + (u64)row * SS_GCAP;
            ss_narrow_emit<BLK, COUNTED>(src, list_n, 0u, 0xffffffffu, k, list_n, SS_FALLBACK_LEVELS, O, 0u, nsh);
        } else {
            SsSrcStage src;
            src.p = stage;
            ss_narrow_emit<BLK, COUNTED>(src, list_n, 0u, 0xffffffffu, k, list_n, SS_FALLBACK_LEVELS, O, 0u, nsh);
        }
    } else {
        if (valid) SS_TRACE(SS_TR_DEGEN_B);
        // Degen B: radix select over the whole row, exact for any input.
        SsSrcRow src;
        src.row = X;
        ss_narrow_emit<BLK, COUNTED>(src, s.row_len, 0u, 0xffffffffu, k, s.row_len, SS_FALLBACK_LEVELS, O, 0u, nsh);
    }
    if (SPLIT && slab_restore != 0u) {
        __syncthreads();  // every read of the list's slab words is done
        u64* slab = reinterpret_cast<u64*>(workspace + SS_WS_SLAB_OFFSET) + (u64)row * SS_GCAP;
        for (u32 i = t; i < slab_restore; i += BLK) st_relaxed_gpu_u64(slab + i, 0ull);
    }
}

// Entry points, written out (not macro-generated) so the host-side text scan
// of kernel declarations (gpu::sources::declared_entries) sees every name.
#define SS_MAIN_ARGS                                                                                    \
    const float* __restrict__ logits, const i32* __restrict__ row_n, const i32* __restrict__ hints,     \
        i32* __restrict__ out, const SsMainParams p, unsigned char* workspace
#define SS_MAIN_PASS logits, row_n, hints, out, p, workspace

extern "C" __global__ void __launch_bounds__(1024, 1) ss_main_b1024_u1(SS_MAIN_ARGS) {
    ss_main_body<1024, 1, false>(SS_MAIN_PASS);
}
extern "C" __global__ void __launch_bounds__(1024, 1) ss_main_b1024_u2(SS_MAIN_ARGS) {
    ss_main_body<1024, 2, false>(SS_MAIN_PASS);
}
extern "C" __global__ void __launch_bounds__(1024, 1) ss_main_b1024_u4(SS_MAIN_ARGS) {
    ss_main_body<1024, 4, false>(SS_MAIN_PASS);
}
extern "C" __global__ void __launch_bounds__(1024, 1) ss_main_b1024_u8(SS_MAIN_ARGS) {
    ss_main_body<1024, 8, false>(SS_MAIN_PASS);
}
extern "C" __global__ void __launch_bounds__(512, 2) ss_main_b512_u8(SS_MAIN_ARGS) {
    ss_main_body<512, SS_ROW_U, false>(SS_MAIN_PASS);
}
extern "C" __global__ void __launch_bounds__(256, 4) ss_main_b256_u8(SS_MAIN_ARGS) {
    ss_main_body<256, SS_ROW_U, false>(SS_MAIN_PASS);
}
extern "C" __global__ void __launch_bounds__(1024, 1) ss_main_split_u1(SS_MAIN_ARGS) {
    ss_main_body<1024, 1, true>(SS_MAIN_PASS);
}
extern "C" __global__ void __launch_bounds__(1024, 1) ss_main_split_u2(SS_MAIN_ARGS) {
    ss_main_body<1024, 2, true>(SS_MAIN_PASS);
}
extern "C" __global__ void __launch_bounds__(1024, 1) ss_main_split_u4(SS_MAIN_ARGS) {
    ss_main_body<1024, 4, true>(SS_MAIN_PASS);
}
extern "C" __global__ void __launch_bounds__(1024, 1) ss_main_split_u8(SS_MAIN_ARGS) {
    ss_main_body<1024, 8, true>(SS_MAIN_PASS);
}
