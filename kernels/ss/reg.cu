// reg.cu — self-sampling GVR V2, register-resident families `reg` and
// `regimg` (arm `ss-reg`).
//
// One CTA per row. The row is read from global memory exactly once, into
// registers (VPT float4 per thread, float4 number tid + u·BLK, plus one
// tail scalar: element 4·n4 + tid, so a row holds up to 4·BLK·VPT + BLK
// values); every later phase works on those registers
// and shared memory only:
//   1. bracket [Tv, GMAX] in key space, finite values only:
//        DEG (n ≤ 4k + 64): the whole row;
//        hinted: the hinted values (indices outside [0, n) ignored);
//        hint-free, or the hint bracket failed the guard: the first k values
//        of the row (≥ k elements ≥ Tv by construction);
//   2. guard: Tv < GMAX, width finite and > 1e-30, scale and offset finite
//      (an infinite width must never reach the bin transform);
//   3. BRL bins: bin = sat_u32(fmin(fma(x, SC, CQ), NBH−1)) with bin 0 the
//      trash bin (below Tv, −inf) and NBH−1 the top bin (NaN too); monotone in x,
//      so bins > B are winners whatever the bracket was;
//   4. histogram of every valid element, one block scan that finds the
//      crossing of k and leaves after(j) cursors in the histogram;
//   5. emit: bins > B straight to the output, bin B either whole to the
//      output or to the candidate list ck/ci (keys, indices); per-bin cursors
//      (CUR) or warp-aggregated slots (SS_EMIT_CROSS), as the host plans;
//      the slots form optionally through shared memory (SS_REG_STAGE_OUT);
//   6. refine bin B: O(m²) rank (key, then slot) for m ≤ QC, else exact
//      key-space narrowing (ss_narrow_emit) over the candidates;
//   7. exact escape, still register-resident: 32-step MSB-first bisection of
//      the k-th largest key, then a two-predicate ballot emit. Taken when the
//      bracket is rejected, the crossing lies in the trash bin (the top k
//      reach below Tv) or the crossing bin exceeds CMP.
// Exactness never depends on the bracket: the histogram counts every valid
// element, so its total is n > k and the crossing is always real; B ≥ 1
// means the bins above B hold fewer than k elements and bin B completes them.
// Rows of n ≤ k + SS_REG_DROP_MAX skip 2–7: they keep all but their n − k
// smallest (key, index) pairs, found by warp reductions and one barrier
// (ss_reg_drop_few).
//
// Short rows (n ≤ k): identity then −1. A row longer than the compiled
// register capacity (only possible through a bad per-row n) is selected by
// the whole-row key narrowing from global memory: slower, still exact.
//
// NaN: every NaN ranks above +inf and NaNs tie (fkey maps them all to the
// top key; the histogram path puts them in the top bin), so the output is
// the exact top-k under that order.
//
// `regimg`: the same body with the row image staged in shared
// memory (aliasing ck/ci) so the hint gather reads shared memory instead of
// scattered global addresses. The image takes 4·BLK·VPT + BLK words, so any
// row that passes the capacity check fits whatever its per-row n.
//
// Entry points (one per compiled (BLK, VPT, NBH); `__launch_bounds__` with
// the route's MINB):
//   ss_reg_b256_v1 (MINB 8), ss_reg_b512_v1 (4), ss_reg_b1024_v1 (2),
//   ss_reg_b512_v2 (4), ss_reg_b1024_v4 (1), ss_reg_b512_v4 (2),
//   ss_regimg_b1024_v1 (2)
// Launch: grid (1, rows), block BLK, dynamic shared memory (NBH + 2·cmp)·4
// bytes (hist | ck | ci); regimg (NBH + max(2·cmp, 4·BLK·VPT + BLK))·4.

#include "ss/common.cuh"

// Launch scalars, filled by the host arm (src/topk/families/reg.rs `SsRegArgs`,
// same field order, all u32).
struct SsRegParams {
    u32 npad;
    u32 k;
    u32 cmp;        // crossing-candidate capacity (dynamic smem)
    u32 qc;         // O(m^2) rank gate
    u32 use_hints;  // 0: hint-free bracket (first k values); also when no hint array is passed
    u32 next_n;     // 0: row_n holds per-row lengths; >= 1: kv_lens (ss_row_len)
    u32 cr_shift;   // varlen compress ratio as a shift (0: cr 1, 2: cr 4)
    u32 cur;        // emit form: 1 per-bin cursors (CUR), 0 warp-aggregated slots (picked per launch)
    u32 ahead;      // next-wave L2 prefetch distance in rows (resident CTAs), 0 = off (ss_prefetch_next_wave)
    u32 row_guess;  // SS_REG_ROW_AHEAD: the row length whose loads go out before the row's own length; 0 = none
};

// Emit slots without per-bin cursors (the upstream design's second emit
// form). A certain winner (bin above the crossing bin B) may take any slot
// of [0, above) and an element of B any of [above, above + m): exactness needs
// only that each gets a distinct one. A thread counts both kinds in one packed
// word (winners + crossing · SS_EMIT_CROSS; every sum of either field is at
// most the row's n ≤ 17,408 < 2^16 in a register row, so the low field never
// carries into the high one), one warp scan and one shared atomic per warp
// (ss_warp_reserve_n) reserve its slots, and a second visit writes them.
// Against per-bin cursors it is faster where many elements are emitted under
// contention (K = 2048 rows of ≤ 2K + 64 values, big batches) and slower where
// few are (the second visit and the scan are then pure latency), so the host
// picks the form per launch (docs/decisions.md, measured_reg_emit).
#define SS_EMIT_CROSS 0x10000u

// Path trace for the host emulator (tests/emu/ss_reg.rs). Nothing on the GPU.
#define SS_RTR_SHORT 1u        // n <= k: identity / -1
#define SS_RTR_DEG 2u          // whole-row bracket
#define SS_RTR_HINT 4u         // hint bracket accepted
#define SS_RTR_FIRSTK 8u       // first-k bracket
#define SS_RTR_ESC_GUARD 16u   // escape: bracket rejected
#define SS_RTR_ESC_TRASH 32u   // escape: crossing in the trash bin
#define SS_RTR_ESC_CMP 64u     // escape: crossing bin above CMP
#define SS_RTR_WHOLE 128u      // crossing bin needed whole
#define SS_RTR_RANK 256u       // O(m^2) rank refine
#define SS_RTR_NARROW 512u     // key-narrowing refine
#define SS_RTR_OVERSIZE 1024u  // row longer than the register capacity
#define SS_RTR_DROP 2048u      // n - k <= SS_REG_DROP_MAX: the n - k smallest dropped
#ifdef SS_EMULATION
#define SS_RTRACE(bit)                                        \
    do {                                                      \
        if (threadIdx.x == 0) ss_emu_trace(blockIdx.y, bit);  \
    } while (0)
#else
#define SS_RTRACE(bit) \
    do {               \
    } while (0)
#endif

#define SS_REG_REFINE_LEVELS 6
#define SS_REG_FALLBACK_LEVELS 8

// Compile-time knobs (SS_NEXT_WAVE_PREFETCH, SS_REG_EMIT_FORM,
// SS_REG_HINTS_FIRST, SS_REG_ROW_AHEAD, SS_REG_HINT_NC, SS_REG_EMIT_MASK,
// SS_REG_STAGE_OUT, SS_REG_DROP_MAX): ss/knobs.cuh. The host's plan sets most
// of them per launch (src/topk/families/reg.rs).

// The entries that compile the drop-few path: all but the two 32-register
// BLK 512 ones (512/1, 512/2), where its code made ptxas spill in some builds
// (tests/emu/ss_reg.rs `ss_reg_entries_compile_without_spills`; 512/1 in the
// next-wave-prefetch + row-ahead builds, 512/2 in all). Their rows of
// n ≤ k + 4 take the chain. The host mirrors this rule
// (src/topk/families/reg.rs `RegEntry::drops_few`).
template <int BLK, int MINB>
constexpr bool ss_reg_drops_few = !(BLK == 512 && MINB >= 4);

struct SsRegShared {
    u32 red[64];   // block min/max scratch
    u32 wpre[32];  // per-warp inclusive totals of the block scan
    u32 cnt[3];    // rotating bisection counters
    u32 win;       // emit counters
    u32 tie;
    u32 kmin;
    u32 kmax;
    u32 cr_bin;
    u32 cr_above;
    u32 cr_m;
    SsCross cross[3];  // ss_narrow_emit scratch
};

extern __shared__ __align__(16) u32 ss_reg_dyn[];

// An element's float value bits are finite (not ±inf, not NaN).
__device__ __forceinline__ bool ss_reg_finite(float x) {
    return (__float_as_uint(x) & 0x7f800000u) != 0x7f800000u;
}

// The BRL bin. Explicit round-to-nearest fma so every call
// site computes the same bin bit for bit (histogram and emit must agree).
template <int NBH>
// The clamp is on the float (fminf returns the other operand for NaN), so a
// NaN x lands in the top bin (NaN ranks above +inf) at no extra cost. With
// sc > 0 and cq finite the fma is NaN only for a NaN x, and for every other
// x min(sat(v), NBH-1) == sat(min(v, NBH-1)).
__device__ __forceinline__ u32 ss_reg_bin(float x, float sc, float cq) {
    return __float2uint_rz(fminf(__fmaf_rn(x, sc, cq), (float)(NBH - 1)));
}

// Candidate list source for ss_narrow_emit: (key, index) in two arrays.
struct SsSrcKeyIdx {
    const u32* keys;
    const i32* idx;
    __device__ __forceinline__ void get(u32 i, float* x, u32* index) const {
        *x = invkey(keys[i]);  // exact inverse: fkey(*x) == keys[i]
        *index = (u32)idx[i];
    }
};

// Block-wide count of a per-thread number (one barrier; rotating counters,
// see the bisection). Every thread gets the total.
template <int BLK>
__device__ __forceinline__ u32 ss_reg_block_count(u32 mine, u32 step, SsRegShared& s) {
    u32* c = s.cnt + step % 3u;
    if (threadIdx.x == 0) s.cnt[(step + 1u) % 3u] = 0u;  // last read two barriers ago
    const u32 w = warp_sum(mine);
    if (lane_id() == 0u && w != 0u) atomicAdd(c, w);
    __syncthreads();
    return *c;
}

// Crossing of `k` over NBH bins and cursor rewrite: each thread owns
// NBH/BLK contiguous bins; one block scan of the span sums. Writes s.cr_*
// (ends with a barrier). The total is the number of counted elements.
//
// ONE_BARRIER: every warp scans the per-warp totals itself, one barrier
// instead of two and warp 0's serial step. It pays only on the entry that
// holds one CTA per SM, where nothing covers a barrier's wait; on entries that
// share an SM the 31 extra warp scans compete for issue and a co-resident CTA
// covers the wait anyway.
template <int NBH, int BLK, bool ONE_BARRIER>
__device__ __forceinline__ void ss_reg_scan_cursor(u32* hist, u32 k, SsRegShared& s) {
    static_assert(NBH % BLK == 0, "every thread owns whole bins");
    const int SPAN = NBH / BLK;
    const int NW = BLK / 32;
    const u32 first = threadIdx.x * (u32)SPAN;
    u32 h[SPAN];
    u32 span = 0;
#pragma unroll
    for (int j = 0; j < SPAN; ++j) {
        h[j] = hist[first + (u32)j];
        span += h[j];
    }
    const u32 incl = warp_incl_scan(span);
    if (lane_id() == 31u) s.wpre[warp_id()] = incl;
    __syncthreads();
    u32 total, below;
    if (ONE_BARRIER) {
        const u32 ws = warp_incl_scan(lane_id() < (u32)NW ? s.wpre[lane_id()] : 0u);
        total = __shfl_sync(GVR_FULL_MASK, ws, NW - 1);
        const u32 before = __shfl_sync(GVR_FULL_MASK, ws, (warp_id() + 31u) & 31u);
        below = (warp_id() == 0u ? 0u : before) + incl;
    } else {
        if (warp_id() == 0u) {
            const u32 w = lane_id() < (u32)NW ? s.wpre[lane_id()] : 0u;
            const u32 ws = warp_incl_scan(w);
            if (lane_id() < (u32)NW) s.wpre[lane_id()] = ws;
        }
        __syncthreads();
        total = s.wpre[NW - 1];
        below = (warp_id() == 0u ? 0u : s.wpre[warp_id() - 1u]) + incl;
    }
    const u32 after_mine = total - below;  // elements in bins of higher threads
    // Unique owner (after_mine is non-increasing in the thread index); thread
    // 0 also takes a fake crossing (total < k), which callers never trust.
    const bool owns = after_mine < k && (k <= after_mine + span || threadIdx.x == 0);
    if (owns) {
        u32 run = after_mine, bin = first, above = 0u, m = 0u;
        bool found = false;
#pragma unroll
        for (int j = SPAN - 1; j >= 0; --j) {
            if (!found && run + h[j] >= k) {
                bin = first + (u32)j;
                above = run;
                m = h[j];
                found = true;
            }
            if (!found) run += h[j];
        }
        if (!found) {
            bin = 0u;
            above = run - h[0];
            m = h[0];
        }
        s.cr_bin = bin;
        s.cr_above = above;
        s.cr_m = m;
    }
    u32 run = after_mine;
#pragma unroll
    for (int j = SPAN - 1; j >= 0; --j) {
        const u32 c = run;
        run += h[j];
        hist[first + (u32)j] = c;
    }
    __syncthreads();
}

// The row held by one thread: VPT float4 (−inf fill past n4) and the tail
// scalar (element 4·n4 + tid). Validity is by index only (never by value).
template <int VPT>
struct SsRegRow {
    float4 v[VPT];
    float tail;
};

// The thread's share of a row of n values into registers: float4 i4 < n4 =
// min(n / 4, BLK·VPT), the tail scalar [4·n4, n) (the n mod 4 remainder or,
// for rows just past the float4 capacity (N = 2^j + 15 at K = 2048), up to
// BLK more values), −inf elsewhere. AHEAD: n is a guess, not yet the row's.
template <int BLK, int VPT, bool AHEAD>
__device__ __forceinline__ void ss_reg_load_row(SsRegRow<VPT>& r, const float* X, u32 n) {
    const u32 n4 = n >> 2 < (u32)(BLK * VPT) ? n >> 2 : (u32)(BLK * VPT);
    const float NEG_INF = ss_neg_inf();
#pragma unroll
    for (int u = 0; u < VPT; ++u) {
        const u32 i4 = threadIdx.x + (u32)u * BLK;
        if (i4 < n4) {
            r.v[u] = AHEAD ? ldg_nc_f4_ahead(X + 4u * i4) : ldg_nc_f4(X + 4u * i4);
        } else {
            r.v[u].x = NEG_INF;
            r.v[u].y = NEG_INF;
            r.v[u].z = NEG_INF;
            r.v[u].w = NEG_INF;
        }
    }
    r.tail = NEG_INF;
    const u32 et = 4u * n4 + threadIdx.x;
    if (et < n) r.tail = AHEAD ? ldg_nc_f_ahead(X + et) : ldg_nc_f(X + et);
}

// Visit every valid element of the thread's registers: f(x, index).
template <int BLK, int VPT, class F>
__device__ __forceinline__ void ss_reg_each(const SsRegRow<VPT>& r, u32 n4, u32 n, F f) {
#pragma unroll
    for (int u = 0; u < VPT; ++u) {
        const u32 i4 = threadIdx.x + (u32)u * BLK;
        if (i4 < n4) {
            f(r.v[u].x, 4u * i4);
            f(r.v[u].y, 4u * i4 + 1u);
            f(r.v[u].z, 4u * i4 + 2u);
            f(r.v[u].w, 4u * i4 + 3u);
        }
    }
    const u32 et = 4u * n4 + threadIdx.x;
    if (et < n) f(r.tail, et);
}

// Warp-uniform visit (every lane of a warp calls f the same number of times,
// with `valid` false for lanes past n): for ballots inside f.
template <int BLK, int VPT, class F>
__device__ __forceinline__ void ss_reg_each_uniform(const SsRegRow<VPT>& r, u32 n4, u32 n, F f) {
#pragma unroll
    for (int u = 0; u < VPT; ++u) {
        const u32 i4 = threadIdx.x + (u32)u * BLK;
        const bool ok = i4 < n4;
        f(r.v[u].x, 4u * i4, ok);
        f(r.v[u].y, 4u * i4 + 1u, ok);
        f(r.v[u].z, 4u * i4 + 2u, ok);
        f(r.v[u].w, 4u * i4 + 3u, ok);
    }
    const u32 et = 4u * n4 + threadIdx.x;
    f(r.tail, et, et < n);
}

// SS_REG_KEEP_BIN: the histogram visit keeps each value's bin in the value's
// register (its bits: bins are < NBH <= 2048), so later phases read a bin
// without computing it again; a value needed after it (a crossing
// candidate's key, the row of an escape after the scan) is read again from
// the row in global memory (the row's own loads left it in L1 or L2).
//
// PACKED (SS_REG_MASK_PACKED): float4 u keeps its four bins in two registers,
// .x = bin(x) | bin(y) << 16 and .y = bin(z) | bin(w) << 16; every slot past
// the row holds bin 0, which is below any crossing bin (see
// ss_reg_classify_packed).
template <int BLK, int VPT, int NBH, bool PACKED>
__device__ __forceinline__ void ss_reg_hist_keep_bins(SsRegRow<VPT>& r, u32 n4, u32 n, float sc, float cq, u32* hist) {
#pragma unroll
    for (int u = 0; u < VPT; ++u) {
        const u32 i4 = threadIdx.x + (u32)u * BLK;
        if (i4 < n4) {
            const u32 bx = ss_reg_bin<NBH>(r.v[u].x, sc, cq);
            const u32 by = ss_reg_bin<NBH>(r.v[u].y, sc, cq);
            const u32 bz = ss_reg_bin<NBH>(r.v[u].z, sc, cq);
            const u32 bw = ss_reg_bin<NBH>(r.v[u].w, sc, cq);
            red_shared_add(hist + bx, 1u);
            red_shared_add(hist + by, 1u);
            red_shared_add(hist + bz, 1u);
            red_shared_add(hist + bw, 1u);
            if (PACKED) {  // + (not |): bins < 2^16, and one IMAD each
                r.v[u].x = __uint_as_float(bx + (by << 16));
                r.v[u].y = __uint_as_float(bz + (bw << 16));
            } else {
                r.v[u].x = __uint_as_float(bx);
                r.v[u].y = __uint_as_float(by);
                r.v[u].z = __uint_as_float(bz);
                r.v[u].w = __uint_as_float(bw);
            }
        } else if (PACKED) {
            r.v[u].x = 0.f;
            r.v[u].y = 0.f;
        }
    }
    const u32 et = 4u * n4 + threadIdx.x;
    if (et < n) {
        const u32 bt = ss_reg_bin<NBH>(r.tail, sc, cq);
        red_shared_add(hist + bt, 1u);
        r.tail = __uint_as_float(bt);
    } else if (PACKED) {
        r.tail = 0.f;
    }
}

// The winner (bin > cb) and crossing (bin == cb) masks of packed kept bins,
// every slot at once (no guard: slots past the row hold bin 0 and 0 < cb,
// since a crossing bin of 0 escapes before the emit). Bins are < NBH <= 2048
// and 1 <= cb < 2048, so a 16-bit half p + (0x7fff - cb) reaches bit 15 iff
// p > cb, p + (0x8000 - cb) iff p >= cb, and neither half carries into the
// other. Element c of float4 u lands at bit 4u + c for c = 0, 2 (the low
// halves) and 16 + 4u + c - 1 for c = 1, 3 (the high halves); the tail at
// bit 1 (see ss_reg_packed_bit_index).
template <int VPT>
__device__ __forceinline__ void ss_reg_classify_packed(const SsRegRow<VPT>& r, u32 cb, u32& wmask, u32& xmask) {
    static_assert(VPT <= 4, "16 low-half bits");
    const u32 add_gt = (0x7fffu - cb) * 0x10001u;
    const u32 add_ge = (0x8000u - cb) * 0x10001u;
    u32 gt = 0u, ge = 0u;
#pragma unroll
    for (int u = 0; u < VPT; ++u) {
#pragma unroll
        for (int s = 0; s < 2; ++s) {  // .x = (x, y), .y = (z, w)
            const u32 p = __float_as_uint(s ? r.v[u].y : r.v[u].x);
            gt |= ((p + add_gt) & 0x80008000u) >> (15 - 4 * u - 2 * s);
            ge |= ((p + add_ge) & 0x80008000u) >> (15 - 4 * u - 2 * s);
        }
    }
    const u32 bt = __float_as_uint(r.tail);
    gt |= bt > cb ? 2u : 0u;
    ge |= bt >= cb ? 2u : 0u;
    wmask = gt;
    xmask = ge & ~gt;
}

// The row index of bit `bit` of ss_reg_classify_packed's masks: bit 1 the
// tail, else float4 (bit & 15) / 4, element (bit & 3) + (bit >= 16).
template <int BLK, int VPT>
__device__ __forceinline__ u32 ss_reg_packed_bit_index(u32 bit, u32 n4) {
    return bit != 1u ? 4u * threadIdx.x + (bit & 12u) * BLK + (bit & 3u) + (bit >> 4) : 4u * n4 + threadIdx.x;
}

// The bin of a valid element's register x, and its value: KEPT (the histogram
// left bins in the registers), x's bits and the row's element idx; else the
// bin of x and x.
template <int NBH, bool KEPT>
__device__ __forceinline__ u32 ss_reg_bin_of(float x, float sc, float cq) {
    return KEPT ? __float_as_uint(x) : ss_reg_bin<NBH>(x, sc, cq);
}
template <bool KEPT>
__device__ __forceinline__ float ss_reg_value_of(float x, const float* X, u32 idx) {
    return KEPT ? ldg_nc_f(X + idx) : x;
}

// SS_REG_EMIT_MASK: element bit i of the thread's registers (see
// ss_reg_each: 4u + lane for float4 u, 4·VPT for the tail scalar), its
// index in the row, and its value.
template <int BLK, int VPT>
__device__ __forceinline__ u32 ss_reg_bit_index(u32 bit, u32 n4) {
    return bit < 4u * VPT ? 4u * (threadIdx.x + (bit >> 2) * BLK) + (bit & 3u) : 4u * n4 + threadIdx.x;
}
template <int VPT>
__device__ __forceinline__ float ss_reg_bit_value(const SsRegRow<VPT>& r, u32 bit) {
    float x = r.tail;
#pragma unroll
    for (int u = 0; u < VPT; ++u) {
        x = bit == 4u * u ? r.v[u].x : x;
        x = bit == 4u * u + 1u ? r.v[u].y : x;
        x = bit == 4u * u + 2u ? r.v[u].z : x;
        x = bit == 4u * u + 3u ? r.v[u].w : x;
    }
    return x;
}

// The exact register-resident escape. Bisects the k-th largest
// key MSB first over the registers, then emits keys above it to [0, nA) and
// keys equal to it to [nA, k). Block-uniform.
template <int BLK, int VPT>
__device__ __forceinline__ void ss_reg_escape(const SsRegRow<VPT>& r, u32 n4, u32 n, u32 k, i32* O, SsRegShared& s) {
    if (threadIdx.x == 0) {
        s.cnt[0] = 0u;
        s.cnt[1] = 0u;
        s.cnt[2] = 0u;
        s.win = 0u;
        s.tie = 0u;
    }
    __syncthreads();
    u32 klo = 0u;
    u32 step = 0u;
    for (int bit = 31; bit >= 0; --bit, ++step) {
        const u32 t = klo | (1u << bit);
        u32 mine = 0u;
        ss_reg_each<BLK, VPT>(r, n4, n, [&](float x, u32) { mine += fkey(x) >= t ? 1u : 0u; });
        if (ss_reg_block_count<BLK>(mine, step, s) >= k) klo = t;
    }
    const u32 ethr = klo;  // count(key >= ethr) >= k > count(key > ethr)
    u32 mine = 0u;
    ss_reg_each<BLK, VPT>(r, n4, n, [&](float x, u32) { mine += fkey(x) > ethr ? 1u : 0u; });
    const u32 n_above = ss_reg_block_count<BLK>(mine, step, s);
    const u32 n_ties = k - n_above;
    ss_reg_each_uniform<BLK, VPT>(r, n4, n, [&](float x, u32 idx, bool ok) {
        const u32 key = fkey(x);
        const bool win = ok && key > ethr;
        const bool tie = ok && key == ethr;
        const u32 ws = warp_reserve(win, &s.win);
        if (win) O[ws] = (i32)idx;  // ws < n_above by construction
        const u32 ts = warp_reserve(tie, &s.tie);
        if (tie && ts < n_ties) O[n_above + ts] = (i32)idx;
    });
}

#if SS_REG_DROP_MAX > 0
// The warp's least (key, index) pair among the lanes' `mine` (~0 on every
// lane when all are ~0).
__device__ __forceinline__ u64 ss_warp_least_pair(u64 mine) {
    const u32 hi = warp_min((u32)(mine >> 32));
    const u32 lo = warp_min((u32)(mine >> 32) == hi ? (u32)mine : 0xffffffffu);
    return ((u64)hi << 32) | lo;
}

// Rows of k < n ≤ k + SS_REG_DROP_MAX: every valid element except the d = n − k
// smallest (key, index) pairs, which are exactly the pairs ≤ P, the d-th
// smallest pair of the row (pairs are unique, so their order is total).
// 1: each warp takes its own d smallest pairs (d rounds of two warp
// reductions; the row's d smallest are among them) and its valid count to
// `cand` / `valid`; one barrier; 2: every warp takes P from those NW·d
// candidates the same way; 3: lane q < NW counts warp q's kept elements (valid
// minus its candidates ≤ P) and a warp scan gives each warp its output
// offset; 4: ballots place the kept elements. Exactly n − d = k are kept.
// NaN and ±inf are ordinary keys here (fkey).
// The values become keys first (the floats die), and a thread's slots run in
// index order (float4 u before u + 1, the tail last), so the first slot of
// its least key holds its least pair: 32-bit compares only (a 64-bit form
// spilled the 32-register entries).
template <int BLK, int VPT>
__device__ __forceinline__ void ss_reg_drop_few(const SsRegRow<VPT>& r, u32 n4, u32 n, u32 d, i32* O, u64* cand,
                                                u32* valid) {
    constexpr u32 NW = BLK / 32;
    constexpr int E = 4 * VPT + 1;               // slots: 4u + lane of float4 u, then the tail
    constexpr u32 SLOTS = NW * SS_REG_DROP_MAX;  // cand[w · SS_REG_DROP_MAX + round]
    constexpr u32 C = (SLOTS + 31u) / 32u;       // candidates per lane in step 2
    const u32 lane = lane_id(), w = warp_id();
    // Bit j: slot j holds a valid element. Computed again for the emit
    // rather than kept live across the rounds (kept, it spilled in 256/1).
    const auto valid_slots = [&]() {
        u32 m = 4u * n4 + threadIdx.x < n ? 1u << (E - 1) : 0u;
#pragma unroll
        for (int u = 0; u < VPT; ++u) m |= threadIdx.x + (u32)u * BLK < n4 ? 0xfu << (4 * u) : 0u;
        return m;
    };
    u32 key[E];
#pragma unroll
    for (int u = 0; u < VPT; ++u) {
        key[4 * u + 0] = fkey(r.v[u].x);
        key[4 * u + 1] = fkey(r.v[u].y);
        key[4 * u + 2] = fkey(r.v[u].z);
        key[4 * u + 3] = fkey(r.v[u].w);
    }
    key[E - 1] = fkey(r.tail);
    u32 live = valid_slots();  // not yet taken
    const u32 wv = warp_sum((u32)__popc(live));
    if (lane == 0u) valid[w] = wv;
    for (u32 round = 0u; round < d; ++round) {
        u32 best = 0xffffffffu, at = 0xffffffffu;
#pragma unroll
        for (int j = 0; j < E; ++j) {
            if (((live >> j) & 1u) != 0u && (key[j] < best || at == 0xffffffffu)) {
                best = key[j];
                at = (u32)j;
            }
        }
        const u64 mine = at == 0xffffffffu ? ~0ull : ((u64)best << 32) | ss_reg_bit_index<BLK, VPT>(at, n4);
        const u64 least = ss_warp_least_pair(mine);
        if (mine == least && least != ~0ull) live &= ~(1u << at);
        if (lane == 0u) cand[w * SS_REG_DROP_MAX + round] = least;  // ~0: the warp has no more
    }
    __syncthreads();
    u64 c[C];
#pragma unroll
    for (u32 i = 0; i < C; ++i) {
        const u32 q = lane + 32u * i;
        c[i] = q < SLOTS && q % SS_REG_DROP_MAX < d ? cand[q] : ~0ull;
    }
    u64 p = 0ull;
    u32 gone = 0u;
    for (u32 round = 0u; round < d; ++round) {
        u64 mine = ~0ull;
        u32 at = 0u;
#pragma unroll
        for (u32 i = 0; i < C; ++i) {
            if (((gone >> i) & 1u) == 0u && c[i] < mine) {
                mine = c[i];
                at = i;
            }
        }
        p = ss_warp_least_pair(mine);  // never ~0: the candidates hold at least d real pairs
        if (mine == p) gone |= 1u << at;
    }
    u32 kept = 0u;
    if (lane < NW) {
        kept = valid[lane];
        for (u32 i = 0u; i < d; ++i) kept -= cand[lane * SS_REG_DROP_MAX + i] <= p ? 1u : 0u;
    }
    u32 before = kept;  // inclusive scan over the warps, then exclusive
#pragma unroll
    for (u32 s = 1u; s < NW; s <<= 1) {
        const u32 o = __shfl_up_sync(GVR_FULL_MASK, before, s);
        if (lane >= s) before += o;
    }
    u32 at = __shfl_sync(GVR_FULL_MASK, before - kept, w);
    const u32 p_key = (u32)(p >> 32), p_idx = (u32)p;
    const u32 all = valid_slots();
#pragma unroll
    for (int j = 0; j < E; ++j) {
        const u32 idx = ss_reg_bit_index<BLK, VPT>((u32)j, n4);
        const bool keep = ((all >> j) & 1u) != 0u && (key[j] > p_key || (key[j] == p_key && idx > p_idx));
        const u32 ballot = __ballot_sync(GVR_FULL_MASK, keep);
        if (keep) O[at + (u32)__popc(ballot & lanemask_lt())] = (i32)idx;
        at += (u32)__popc(ballot);
    }
}
#endif  // SS_REG_DROP_MAX > 0

// The __noinline__ ss_narrow_emit is compiled once per instantiation, and
// sharing one between the 32-register BLK 512 entries and ss_reg_b512_v4
// (64 registers) made ptxas spill in the former: that entry gets its own
// instantiation through a derived source type (the others keep the plain
// types they compiled clean with; a derived type there spilled too).
template <class Src>
struct SsRegOwnSrc : Src {};
template <class Src, bool OWN>
struct SsRegSrcFor {
    typedef Src type;
};
template <class Src>
struct SsRegSrcFor<Src, true> {
    typedef SsRegOwnSrc<Src> type;
};

// MINB: the CTAs per SM of the entry's __launch_bounds__.
template <int BLK, int VPT, int NBH, bool IMG, int MINB>
__device__ __forceinline__ void ss_reg_body(const float* __restrict__ logits, const i32* __restrict__ row_n,
                                            const i32* __restrict__ hints, i32* __restrict__ out,
                                            const SsRegParams p) {
    __shared__ __align__(16) SsRegShared s;
    SS_PROBE_SCOPE();
    constexpr bool LONE_CTA = MINB == 1;  // nothing else on the SM covers a barrier's wait
    const u32 row = blockIdx.y;
    const u32 t = threadIdx.x;
    const u32 k = p.k;
    // The thread's first HG hints are gathered as one batch (step 2).
    // HINTS_FIRST: their index loads go out first, ahead of the row length and
    // the row: they depend on neither, so their round trip overlaps the row's
    // instead of following it (a profile of 1024/4 showed warps waiting on
    // them). Only rows that can be hinted at all
    // (npad > 4k + 64) issue them.
    constexpr int HG = BLK >= 512 ? 2048 / BLK : 4;
    constexpr bool HINTS_FIRST = SS_REG_HINTS_FIRST != 0 && VPT == 4 && !IMG;
    u32 hint_first[HG];  // 0xffffffff: no element
    if (HINTS_FIRST) {
#pragma unroll
        for (int i = 0; i < HG; ++i) hint_first[i] = 0xffffffffu;
        if (p.use_hints != 0u && hints != nullptr && p.npad > 4u * k + 64u) {
            const i32* H = ss_hint_row(hints, row, p.next_n, k);
#pragma unroll
            for (int i = 0; i < HG; ++i) {
                const u32 j = t + (u32)i * BLK;
                if (j < k) hint_first[i] = (u32)(SS_REG_HINT_NC ? ldg_nc_i32(H + j) : H[j]);
            }
        }
    }
    const float* X = logits + (u64)row * p.npad;
    constexpr u32 HELD = 4u * BLK * VPT + BLK;  // the most values a row may have here
    SsRegRow<VPT> r;
    u32 guess = 0u;  // the length r was loaded for; 0: not loaded
    SsRowLenEarly len;  // the length's load first, waited for after the row's loads
    len.issue(row_n, row, p.next_n, SS_REG_ROW_AHEAD != 0);
    if (SS_REG_ROW_AHEAD != 0 && p.row_guess > k && p.row_guess <= HELD && p.row_guess <= p.npad) {
        guess = p.row_guess;
        ss_reg_load_row<BLK, VPT, true>(r, X, guess);
    }
    const u32 n = len.wait(row_n, row, p.next_n, p.cr_shift, p.npad);
    SS_PROBE(SS_MARK_LEN);
    i32* O = out + (u64)row * k;
    if (n <= k) {
        SS_RTRACE(SS_RTR_SHORT);
        write_identity_row(O, n, k);
        return;
    }
#if SS_REG_DROP_MAX > 0
    if constexpr (ss_reg_drops_few<BLK, MINB>) {
        if (n - k <= SS_REG_DROP_MAX && n <= HELD) {  // the histogram's words are its scratch
            SS_RTRACE(SS_RTR_DROP);
            if (n != guess) ss_reg_load_row<BLK, VPT, false>(r, X, n);
            constexpr u32 NW = BLK / 32;
            ss_reg_drop_few<BLK, VPT>(r, n >> 2 < (u32)(BLK * VPT) ? n >> 2 : (u32)(BLK * VPT), n, n - k, O,
                                      reinterpret_cast<u64*>(ss_reg_dyn), ss_reg_dyn + 2u * NW * SS_REG_DROP_MAX);
            return;
        }
    }
#endif
    u32* hist = ss_reg_dyn;
    u32* ck = ss_reg_dyn + NBH;
    i32* ci = reinterpret_cast<i32*>(ss_reg_dyn + NBH + p.cmp);
    SsNarrowShared nsh;
    nsh.hist = hist;
    nsh.cross = s.cross;
    nsh.win = &s.win;
    nsh.tie = &s.tie;
    if (n > HELD) {  // bad per-row n: exact, from global memory
        SS_RTRACE(SS_RTR_OVERSIZE);
        typename SsRegSrcFor<SsSrcRow, BLK == 512 && VPT == 4>::type src;
        src.row = X;
        ss_narrow_emit<BLK>(src, n, 0u, 0xffffffffu, k, n, SS_REG_FALLBACK_LEVELS, O, 0u, nsh);
        return;
    }

    // ---- 1. the row, once, into registers (unless it went out ahead for this n) ----
    if (n != guess) ss_reg_load_row<BLK, VPT, false>(r, X, n);
    const u32 n4 = n >> 2 < (u32)(BLK * VPT) ? n >> 2 : (u32)(BLK * VPT);  // float4 held
    const float NEG_INF = ss_neg_inf();
#if SS_NEXT_WAVE_PREFETCH
    // The one-request form where the entry holds one CTA per SM (the launches
    // that prefetch; in the 32-register entries' prefetch builds it spilled).
    constexpr bool NEXT_ONE = SS_NEXT_WAVE_ONE != 0 && LONE_CTA;
    const u32 next_len = ss_next_wave_len<NEXT_ONE>(row_n, p.ahead, p.next_n, p.npad);
#endif
    for (u32 b = t; b < (u32)NBH; b += BLK) hist[b] = 0u;

    // ---- 2. bracket (finite values only) ----
    const bool deg = n <= 4u * k + 64u;
    u32 kmin = 0xffffffffu, kmax = 0u;
    float lo = 0.f, hi = 0.f;
    bool have = false;
    const auto fold_finite = [&](float x) {  // the bracket counts finite values only
        if (ss_reg_finite(x)) {
            const u32 key = fkey(x);
            kmin = kmin < key ? kmin : key;
            kmax = kmax > key ? kmax : key;
        }
    };
    const bool hinted = !deg && p.use_hints != 0u && hints != nullptr;
    if (hinted) {
        // IMG: the row image in shared memory (aliasing ck/ci, which are
        // only used after the scan) serves the hint gather instead of
        // scattered global loads.
        float* img = reinterpret_cast<float*>(ss_reg_dyn + NBH);
        if (IMG) {
#pragma unroll
            for (int u = 0; u < VPT; ++u) {
                const u32 i4 = t + (u32)u * BLK;
                if (i4 < n4) reinterpret_cast<float4*>(img)[i4] = r.v[u];
            }
            if (4u * n4 + t < n) img[4u * n4 + t] = r.tail;
            __syncthreads();
        }
        const i32* H = ss_hint_row(hints, row, p.next_n, k);  // formed here: no register held across the row load
        // The first HG hints as one batch: the index loads, then the value
        // loads, each wait one round trip instead of one per BLK hints. (A
        // hinted row has n > 4k + 64, so HINTS_FIRST loaded them.)
        u32 hb[HG];
#pragma unroll
        for (int i = 0; i < HG; ++i) {
            const u32 j = t + (u32)i * BLK;
            hb[i] = HINTS_FIRST ? hint_first[i] : j < k ? (u32)H[j] : n;  // >= n: no element
        }
        float xb[HG];
#pragma unroll
        for (int i = 0; i < HG; ++i) xb[i] = hb[i] < n ? (IMG ? img[hb[i]] : ldg_nc_f(X + hb[i])) : NEG_INF;
#pragma unroll
        for (int i = 0; i < HG; ++i) fold_finite(xb[i]);
        // The rest one at a time (k > HG * BLK: k > 1024 at BLK 256, k > 2048
        // elsewhere). One loop of HG-batches for both makes ptxas spill in 512/2.
        for (u32 j = t + (u32)HG * BLK; j < k; j += BLK) {
            const u32 h = (u32)H[j];
            if (h < n) fold_finite(IMG ? img[h] : ldg_nc_f(X + h));
        }
        // (also publishes the zeroed histogram) One barrier, not three, except
        // in the 32-register 512/2 entry, where ptxas then spilled 8 bytes.
        if (BLK == 512 && VPT == 2) {
            ss_block_minmax<BLK>(&kmin, &kmax, s.red);
        } else {
            ss_block_minmax_once<BLK>(&kmin, &kmax, s.red);
        }
        lo = invkey(kmin);
        hi = invkey(kmax);
        have = kmin < kmax;  // NaN patterns of the empty identities fail this too
        if (have) SS_RTRACE(SS_RTR_HINT);
        kmin = 0xffffffffu;
        kmax = 0u;
    }
    if (!have) {
        const u32 lim = deg ? n : k;
        ss_reg_each<BLK, VPT>(r, n4, n, [&](float x, u32 idx) {
            if (idx < lim) fold_finite(x);
        });
        if (hinted) __syncthreads();  // the hint bracket's reads of s.red are done
        ss_block_minmax_once<BLK>(&kmin, &kmax, s.red);
        lo = invkey(kmin);
        hi = invkey(kmax);
        have = kmin < kmax;
        SS_RTRACE(deg ? SS_RTR_DEG : SS_RTR_FIRSTK);
    }

    // ---- 3. guard and the BRL transform ----
    SS_PROBE(SS_MARK_THRESHOLD);
    float sc = 0.f, cq = 0.f;
    if (have) {
        const float width = __fsub_rn(hi, lo);
        have = ss_reg_finite(width) && width > SS_MIN_WIDTH;
        if (have) {
            sc = __fdiv_rn((float)(NBH - 2), width);
            const float base = __fsub_rn(1.f, __fmul_rn(lo, sc));
            cq = __fmaf_rn(1e-6f, __fadd_rn(fabsf(base), 1.f), base);
            have = ss_reg_finite(sc) && sc > 0.f && ss_reg_finite(cq);
        }
    }
    if (!have) {
        SS_RTRACE(SS_RTR_ESC_GUARD);
        ss_reg_escape<BLK, VPT>(r, n4, n, k, O, s);
        return;
    }

    // ---- 4. histogram and crossing ----
    if (t == 0u) s.win = 0u;  // the emit's slot counter; published by the barrier below
    constexpr bool KEEP = SS_REG_KEEP_BIN != 0 && !IMG;  // not regimg (its own image)
    // The slots emit from bit masks (SS_REG_EMIT_MASK) in this build.
    constexpr bool MASK_EMIT = SS_REG_EMIT_MASK != 0 && (BLK * MINB <= 1024 || (SS_REG_EMIT_MASK == 2 && VPT == 2));
    // Packed kept bins: only where the build emits from masks alone.
    constexpr bool PACKED = KEEP && SS_REG_MASK_PACKED != 0 && SS_REG_EMIT_FORM == 0 && MASK_EMIT;
#if SS_REG_KEEP_BIN  // (compiled out of the default build, whose code it would otherwise move)
    if (KEEP) {
        ss_reg_hist_keep_bins<BLK, VPT, NBH, PACKED>(r, n4, n, sc, cq, hist);
    } else
#endif
    {
        ss_reg_each<BLK, VPT>(r, n4, n, [&](float x, u32) { red_shared_add(hist + ss_reg_bin<NBH>(x, sc, cq), 1u); });
    }
    __syncthreads();
    SS_PROBE_PASS();
    SS_PROBE(SS_MARK_PASS);
    // The whole row has arrived: the next wave's row goes toward L2 now. Issued
    // behind this row's loads it competes with the wave's own loads.
#if SS_NEXT_WAVE_PREFETCH
    ss_prefetch_next_wave<BLK, NEXT_ONE>(logits, p.use_hints != 0u ? hints : nullptr, 4u * k + 64u, p.ahead, p.npad, k,
                               next_len);
#endif
    ss_reg_scan_cursor<NBH, BLK, LONE_CTA>(hist, k, s);
    SS_PROBE(SS_MARK_VERIFY);
    const u32 cb = s.cr_bin, above = s.cr_above, m = s.cr_m;
    const u32 need = k - above;
    const bool whole = need >= m;
    if (cb == 0u || (!whole && m > p.cmp)) {
        SS_RTRACE(cb == 0u ? SS_RTR_ESC_TRASH : SS_RTR_ESC_CMP);
        if (KEEP) ss_reg_load_row<BLK, VPT, false>(r, X, n);  // the values again
        ss_reg_escape<BLK, VPT>(r, n4, n, k, O, s);
        return;
    }
    // ---- 5. emit: bins > B to [0, above), bin B to [above, above + m) or the candidates ----
    i32* const OE = opaque_global_ptr(O);  // one IMAD.WIDE per emitted index (see opaque_global_ptr)
    // Element `slot` of the crossing bin: to the output when the bin is needed whole, else a candidate.
    const auto put_cross = [&](float x, u32 idx, u32 slot) {
        if (whole) {
            OE[above + slot] = (i32)idx;
        } else {
            ck[slot] = fkey(x);  // slot < m <= cmp
            ci[slot] = (i32)idx;
        }
    };
    const bool cursors = SS_REG_EMIT_FORM == 2 ? p.cur != 0u : SS_REG_EMIT_FORM == 1;
    // The slots forms' staged indices (SS_REG_STAGE_OUT): in the histogram
    // (dead in these forms after the scan; k <= NBH words hold [0, above + m)
    // of a whole bin) or in the host's extra k words, copied out coalesced.
    // (The address is formed where a visit uses it: formed here it moved the
    // extra-word builds' PTX.)
    const bool stage_out = SS_REG_STAGE_OUT == 2 || (SS_REG_STAGE_OUT == 1 && k <= (u32)NBH);
    const auto staging = [&]() { return SS_REG_STAGE_OUT == 2 ? ss_reg_dyn + NBH + 2u * p.cmp : hist; };
    const auto copy_out_staged = [&](const u32* so) {
        __syncthreads();
        const u32 staged = whole ? above + m : above;
        for (u32 i = t; i < staged; i += BLK) OE[i] = (i32)so[i];
    };
    if (cursors) {  // CUR: one shared atomic per emitted element on its bin's cursor
        // One test on the path of the many elements below the crossing bin.
        ss_reg_each<BLK, VPT>(r, n4, n, [&](float x, u32 idx) {
            const u32 b = ss_reg_bin_of<NBH, KEEP>(x, sc, cq);
            if (b >= cb) {
                const u32 slot = atomicAdd(hist + b, 1u);
                if (b > cb) {
                    OE[slot] = (i32)idx;
                } else {
                    put_cross(ss_reg_value_of<KEEP>(x, X, idx), idx, slot - above);
                }
            }
        });
    } else if (MASK_EMIT) {  // slots from bit masks
        u32 wmask = 0u, xmask = 0u;
        const auto classify = [&](float x, u32 bit) {
            const u32 b = ss_reg_bin_of<NBH, KEEP>(x, sc, cq);
            wmask |= (b > cb ? 1u : 0u) << bit;
            xmask |= (b == cb ? 1u : 0u) << bit;
        };
        const auto bit_index = [&](u32 bit) {
            return PACKED ? ss_reg_packed_bit_index<BLK, VPT>(bit, n4) : ss_reg_bit_index<BLK, VPT>(bit, n4);
        };
        if (PACKED) {
            ss_reg_classify_packed<VPT>(r, cb, wmask, xmask);
        } else {
#pragma unroll
            for (int u = 0; u < VPT; ++u) {
                if (t + (u32)u * BLK < n4) {
                    classify(r.v[u].x, 4u * u);
                    classify(r.v[u].y, 4u * u + 1u);
                    classify(r.v[u].z, 4u * u + 2u);
                    classify(r.v[u].w, 4u * u + 3u);
                }
            }
            if (4u * n4 + t < n) classify(r.tail, 4u * VPT);
        }
        __syncwarp();
        const u32 slots = ss_warp_reserve_n((u32)__popc(wmask) + (u32)__popc(xmask) * SS_EMIT_CROSS, &s.win);
        u32 win_slot = slots & (SS_EMIT_CROSS - 1u), cross_slot = slots / SS_EMIT_CROSS;
        u32* const so = staging();
        while (wmask != 0u) {
            const u32 bit = (u32)__ffs(wmask) - 1u;
            wmask &= wmask - 1u;
            const u32 idx = bit_index(bit);
            if (stage_out) {
                so[win_slot++] = idx;
            } else {
                OE[win_slot++] = (i32)idx;
            }
        }
        while (xmask != 0u) {
            const u32 bit = (u32)__ffs(xmask) - 1u;
            xmask &= xmask - 1u;
            const u32 idx = bit_index(bit);
            if (stage_out && whole) {
                so[above + cross_slot++] = idx;
            } else {
                put_cross(ss_reg_value_of<KEEP>(ss_reg_bit_value<VPT>(r, bit), X, idx), idx, cross_slot++);
            }
        }
        if (stage_out) copy_out_staged(so);
    } else {  // slots: count, one warp-aggregated reservation (SS_EMIT_CROSS), write
        u32 mine = 0u;
        ss_reg_each<BLK, VPT>(r, n4, n, [&](float x, u32) {
            const u32 b = ss_reg_bin_of<NBH, KEEP>(x, sc, cq);
            mine += b > cb ? 1u : (b == cb ? SS_EMIT_CROSS : 0u);
        });
        __syncwarp();  // the counting visit leaves the lanes split
        const u32 slots = ss_warp_reserve_n(mine, &s.win);
        u32 win_slot = slots & (SS_EMIT_CROSS - 1u), cross_slot = slots / SS_EMIT_CROSS;
        if (stage_out) {
            // Two written-out visits: a shared helper taking
            // the store as a lambda re-allocated the registers of every
            // slots-only build (same instruction counts, different SASS); a
            // runtime choice would sit on every element.
            u32* const so = staging();
            ss_reg_each<BLK, VPT>(r, n4, n, [&](float x, u32 idx) {
                const u32 b = ss_reg_bin_of<NBH, KEEP>(x, sc, cq);
                if (b >= cb) {
                    if (b > cb) {
                        so[win_slot++] = idx;
                    } else if (whole) {
                        so[above + cross_slot++] = idx;
                    } else {
                        put_cross(ss_reg_value_of<KEEP>(x, X, idx), idx, cross_slot++);
                    }
                }
            });
            copy_out_staged(so);
        } else {
            ss_reg_each<BLK, VPT>(r, n4, n, [&](float x, u32 idx) {
                const u32 b = ss_reg_bin_of<NBH, KEEP>(x, sc, cq);
                if (b >= cb) {
                    if (b > cb) {
                        OE[win_slot++] = (i32)idx;
                    } else {
                        put_cross(ss_reg_value_of<KEEP>(x, X, idx), idx, cross_slot++);
                    }
                }
            });
        }
    }
    SS_PROBE(SS_MARK_EMIT);  // thread 0's share of the emit (a whole crossing bin leaves without a barrier)
    if (whole) {
        SS_RTRACE(SS_RTR_WHOLE);
        return;
    }
    __syncthreads();

    // ---- 6. refine the crossing bin ----
    if (m <= p.qc) {
        SS_RTRACE(SS_RTR_RANK);
        // Ranks over (key descending, slot ascending) are a permutation of 0..m-1.
        // RANK_WARP (every entry but 1024/1, where ptxas spilled it): one warp
        // per candidate, its lanes test 32 others at a time and a ballot
        // counts them, so a candidate's rank waits on ceil(m / 32) shared
        // loads instead of m (warp-uniform loops: every lane ballots).
        constexpr bool RANK_WARP = SS_REG_RANK_WARP != 0 && !(BLK == 1024 && VPT == 1);
        if (RANK_WARP) {
            for (u32 i = warp_id(); i < m; i += (u32)(BLK / 32)) {
                const u32 mine = ck[i];
                u32 rank = 0u;
                for (u32 j0 = 0u; j0 < m; j0 += 32u) {
                    const u32 j = j0 + lane_id();
                    bool before = false;
                    if (j < m) {
                        const u32 other = ck[j];
                        before = other > mine || (other == mine && j < i);
                    }
                    rank += (u32)__popc(__ballot_sync(GVR_FULL_MASK, before));
                }
                if (lane_id() == 0u && rank < need) O[above + rank] = ci[i];
            }
            return;
        }
        for (u32 i = t; i < m; i += BLK) {
            const u32 mine = ck[i];
            u32 rank = 0u;
            for (u32 j = 0; j < m; ++j) {
                const u32 other = ck[j];
                rank += (other > mine || (other == mine && j < i)) ? 1u : 0u;
            }
            if (rank < need) O[above + rank] = ci[i];
        }
        return;
    }
    SS_RTRACE(SS_RTR_NARROW);
    if (t == 0u) {
        s.kmin = 0xffffffffu;
        s.kmax = 0u;
    }
    __syncthreads();
    u32 cmin = 0xffffffffu, cmax = 0u;
    for (u32 i = t; i < m; i += BLK) {
        const u32 key = ck[i];
        cmin = cmin < key ? cmin : key;
        cmax = cmax > key ? cmax : key;
    }
    if (cmin != 0xffffffffu) atomicMin(&s.kmin, cmin);
    if (cmax != 0u) atomicMax(&s.kmax, cmax);
    __syncthreads();
    typename SsRegSrcFor<SsSrcKeyIdx, BLK == 512 && VPT == 4>::type src;
    src.keys = ck;
    src.idx = ci;
    ss_narrow_emit<BLK>(src, m, s.kmin, s.kmax, need, m, SS_REG_REFINE_LEVELS, O, above, nsh);
}

// Entry points, written out (not macro-generated) so the host-side text scan
// of kernel declarations (gpu::sources::declared_entries) sees every name.
#define SS_REG_ARGS                                                                                  \
    const float* __restrict__ logits, const i32* __restrict__ row_n, const i32* __restrict__ hints, \
        i32* __restrict__ out, const SsRegParams p
#define SS_REG_PASS logits, row_n, hints, out, p

extern "C" __global__ void __launch_bounds__(256, 8) ss_reg_b256_v1(SS_REG_ARGS) {
    ss_reg_body<256, 1, 1024, false, 8>(SS_REG_PASS);
}
extern "C" __global__ void __launch_bounds__(512, 4) ss_reg_b512_v1(SS_REG_ARGS) {
    ss_reg_body<512, 1, 1024, false, 4>(SS_REG_PASS);
}
extern "C" __global__ void __launch_bounds__(1024, 2) ss_reg_b1024_v1(SS_REG_ARGS) {
    ss_reg_body<1024, 1, 2048, false, 2>(SS_REG_PASS);
}
extern "C" __global__ void __launch_bounds__(512, 4) ss_reg_b512_v2(SS_REG_ARGS) {
    ss_reg_body<512, 2, 1024, false, 4>(SS_REG_PASS);
}
extern "C" __global__ void __launch_bounds__(1024, 1) ss_reg_b1024_v4(SS_REG_ARGS) {
    ss_reg_body<1024, 4, 2048, false, 1>(SS_REG_PASS);
}
extern "C" __global__ void __launch_bounds__(512, 2) ss_reg_b512_v4(SS_REG_ARGS) {
    ss_reg_body<512, 4, 2048, false, 2>(SS_REG_PASS);
}
extern "C" __global__ void __launch_bounds__(1024, 2) ss_regimg_b1024_v1(SS_REG_ARGS) {
    ss_reg_body<1024, 1, 2048, true, 2>(SS_REG_PASS);
}
extern "C" __global__ void __launch_bounds__(1024, 1) ss_reg_b1024_v2(SS_REG_ARGS) {
    ss_reg_body<1024, 2, 2048, false, 1>(SS_REG_PASS);
}
