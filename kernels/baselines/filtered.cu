// filtered.cu — FilteredTopK ("filtered" arm).
//
// One CTA of 1024 threads per row. Shared memory: two ping-pong buffers of
// FT_CAP candidate INDICES (dynamic, 128 KiB) and two 256-bin histograms.
//
//   pass 1  coarse 8-bit histogram of the fp16-derived key (top byte of the
//           ordered fp16 key) over the row; crossing bin B0 for target k;
//   pass 2  (the "filter") over the row: coarse bin > B0 → output directly;
//           coarse bin == B0 → candidate buffer, plus a histogram of the next
//           8-bit digit of the fp32 ordered key (bits 31:24);
//   rounds  on the candidate indices only (values re-read from global, L2):
//           crossing on the digit histogram; digit > crossing → output,
//           digit == crossing → the other buffer + histogram of the next
//           digit; at the last digit (bits 7:0) the crossing-equal elements
//           are identical keys and fill the tail slots [k - need, k).
//
// Exact on overflow: if B0 holds more than FT_CAP elements the kernel never
// drops any. Instead it runs extra 8-bit rounds over the ROW (global memory),
// restricted to B0 and to the fp32-key prefix chosen so far, until the
// candidate set fits the buffer (or all of it is needed, or the key is
// complete); only then does pass 2 run, with that narrower candidate test.
//
// Exact by construction: every histogram and the pass that consumes it use
// the same classification on the same data, so each round emits exactly
// `above` winners and forwards exactly `count` <= FT_CAP candidates; winners
// total k - need and ties fill exactly need slots. Nothing depends on an
// estimate. Positions >= n are masked by index (load_row_f4), never by value.

#include "prim/common.cuh"

#define FT_BLK 1024
// Candidate indices per ping-pong buffer (upstream: 16 384, 2 x 64 KiB).
#define FT_CAP 16384
#define FT_BINS 256

struct FilteredShared {
    u32 hist[2][FT_BINS];
    u32 scratch[32];
    Crossing cross;
    u32 win_count;      // winner slots handed out, [0, k - need_final)
    u32 tie_count;      // tie slots handed out at the last digit
    u32 cand_count[2];  // fill level of each candidate buffer
};

// Coarse bin: top byte of the fp16 ordered key (monotone in x).
__device__ __forceinline__ u32 ft_coarse(float x) { return half_key(x) >> 8; }

// Classification of a row element against the current candidate set
// "coarse == b0 and (fkey >> shift) == prefix" (shift 32: no key test).
// +1: definitely in the top k, 0: candidate, -1: out.
__device__ __forceinline__ int ft_classify(float x, u32 b0, u32 shift, u32 prefix) {
    const u32 c = ft_coarse(x);
    if (c != b0) return c > b0 ? 1 : -1;
    if (shift >= 32u) return 0;
    const u32 p = fkey(x) >> shift;
    return p > prefix ? 1 : (p == prefix ? 0 : -1);
}

__device__ __forceinline__ void ft_zero(u32* hist) {
    for (u32 b = threadIdx.x; b < FT_BINS; b += FT_BLK) hist[b] = 0u;
}

// Pass 1: coarse histogram of the whole row.
__device__ __forceinline__ void ft_coarse_hist(const float* row, u32 n, u32* hist) {
    const u32 nvec = (n + 3u) >> 2;
    for (u32 base = 0; base < nvec; base += FT_BLK * 2u) {
        float4 v[2];
        u32 valid[2];
#pragma unroll
        for (u32 u = 0; u < 2u; ++u) valid[u] = load_row_f4(row, base + u * FT_BLK + threadIdx.x, nvec, n, &v[u]);
#pragma unroll
        for (u32 u = 0; u < 2u; ++u)
#pragma unroll
            for (u32 c = 0; c < 4u; ++c)
                if (valid[u] & (1u << c)) red_shared_add(&hist[ft_coarse(f4_get(v[u], c))], 1u);
    }
}

// Overflow round over the row: histogram of fp32-key digit (key >> low) & 255
// over the current candidates.
__device__ __forceinline__ void ft_row_digit_hist(const float* row, u32 n, u32 b0, u32 shift, u32 prefix, u32 low,
                                                  u32* hist) {
    const u32 nvec = (n + 3u) >> 2;
    for (u32 base = 0; base < nvec; base += FT_BLK) {
        float4 v;
        const u32 valid = load_row_f4(row, base + threadIdx.x, nvec, n, &v);
#pragma unroll
        for (u32 c = 0; c < 4u; ++c) {
            const float x = f4_get(v, c);
            if ((valid & (1u << c)) && ft_classify(x, b0, shift, prefix) == 0)
                red_shared_add(&hist[(fkey(x) >> low) & 0xffu], 1u);
        }
    }
}

extern "C" __global__ void __launch_bounds__(FT_BLK) filtered_topk(const float* __restrict__ logits,
                                                                 const i32* __restrict__ row_n,
                                                                 const i32* __restrict__ hints,
                                                                 i32* __restrict__ out, u32 rows, u32 npad,
                                                                 u32 k) {
    (void)hints;  // filtered top-K ignores hints by design
    __shared__ FilteredShared sm;
    extern __shared__ i32 ft_dyn[];  // two candidate buffers of FT_CAP indices

    const u32 r = blockIdx.x;
    if (r >= rows) return;
    const u32 n = clamp_row_len(row_n[r], npad);
    i32* out_row = out + (u64)r * k;
    if (n <= k) {
        write_identity_row(out_row, n, k);
        return;
    }
    const float* row = logits + (u64)r * npad;

    if (threadIdx.x == 0) {
        sm.win_count = 0u;
        sm.tie_count = 0u;
        sm.cand_count[0] = 0u;
        sm.cand_count[1] = 0u;
    }
    // ---- pass 1: coarse histogram, threshold bin B0 ----------------------
    ft_zero(sm.hist[0]);
    ft_zero(sm.hist[1]);
    __syncthreads();
    ft_coarse_hist(row, n, sm.hist[0]);
    __syncthreads();
    find_crossing<FT_BINS, FT_BLK>(sm.hist[0], k, sm.scratch, &sm.cross);  // total n > k: real crossing
    const u32 b0 = sm.cross.bin;
    u32 need = k - sm.cross.above;  // 1 <= need <= cand_m
    u32 cand_m = sm.cross.count;
    u32 shift = 32u;  // candidate test: coarse == b0 && (fkey >> shift) == prefix
    u32 prefix = 0u;

    // ---- overflow: narrow B0 over the row until it fits the buffer --------
    while (cand_m > FT_CAP && cand_m != need && shift > 0u) {
        const u32 low = shift - 8u;
        __syncthreads();  // everyone has read sm.cross
        ft_zero(sm.hist[0]);
        __syncthreads();
        ft_row_digit_hist(row, n, b0, shift, prefix, low, sm.hist[0]);
        __syncthreads();
        find_crossing<FT_BINS, FT_BLK>(sm.hist[0], need, sm.scratch, &sm.cross);
        need -= sm.cross.above;
        prefix = (shift >= 32u) ? sm.cross.bin : ((prefix << 8) | sm.cross.bin);
        shift = low;
        cand_m = sm.cross.count;
    }

    // ---- pass 2 (filter): emit winners, compact candidates ----------------
    // take_all: every candidate is needed. direct_ties: the candidates share
    // one full fp32 key, fill need tail slots. Otherwise cand_m <= FT_CAP and
    // shift >= 8: compact into buffer 0 with the histogram of the next digit.
    const bool take_all = (cand_m == need);
    const bool direct_ties = !take_all && shift == 0u;
    const u32 next_low = shift - 8u;  // only used when compacting (shift >= 8)
    {
        const u32 nvec = (n + 3u) >> 2;
        for (u32 base = 0; base < nvec; base += FT_BLK) {  // warp-uniform trips
            const u32 i4 = base + threadIdx.x;
            float4 v;
            const u32 valid = load_row_f4(row, i4, nvec, n, &v);
#pragma unroll
            for (u32 c = 0; c < 4u; ++c) {
                const float x = f4_get(v, c);
                const int cls = ((valid >> c) & 1u) ? ft_classify(x, b0, shift, prefix) : -1;
                const i32 pos = (i32)(i4 * 4u + c);
                const bool win = cls > 0 || (take_all && cls == 0);
                const u32 s = warp_reserve(win, &sm.win_count);
                if (win && s < k) out_row[s] = pos;
                if (take_all) continue;
                if (direct_ties) {
                    const u32 t = warp_reserve(cls == 0, &sm.tie_count);
                    if (cls == 0 && t < need) out_row[k - need + t] = pos;
                } else {
                    const u32 t = warp_reserve(cls == 0, &sm.cand_count[0]);
                    if (cls == 0 && t < FT_CAP) {
                        ft_dyn[t] = pos;  // buffer 0
                        red_shared_add(&sm.hist[1][(fkey(x) >> next_low) & 0xffu], 1u);
                    }
                }
            }
        }
    }
    if (take_all || direct_ties) return;
    __syncthreads();

    // ---- refine rounds on the candidate indices --------------------------
    // Invariant at the top of a round: buffer `cur` holds exactly cand_m
    // indices whose keys agree on every bit above `dshift + 8` (trivially for
    // the top digit: fp16 bins need not nest in fp32 prefixes); hist[h] is
    // their histogram of digit (key >> dshift) & 255; need <= cand_m of them
    // remain to be selected.
    u32 cur = 0u;
    u32 h = 1u;
    u32 dshift = next_low;
    for (;;) {
        find_crossing<FT_BINS, FT_BLK>(sm.hist[h], need, sm.scratch, &sm.cross);
        const u32 bin = sm.cross.bin;
        const u32 round_above = sm.cross.above;
        const u32 round_need = need - round_above;  // candidates still needed from bin
        const bool round_take_all = (sm.cross.count == round_need);
        const bool last = (dshift == 0u);
        const bool forward = !round_take_all && !last;
        if (forward) {
            ft_zero(sm.hist[h ^ 1u]);
            if (threadIdx.x == 0) sm.cand_count[cur ^ 1u] = 0u;
        }
        __syncthreads();
        const u32 m_here = min(sm.cand_count[cur], (u32)FT_CAP);
        const u32 trips = (m_here + FT_BLK - 1u) / FT_BLK;  // warp-uniform loop for the ballots
        for (u32 trip = 0; trip < trips; ++trip) {
            const u32 i = trip * FT_BLK + threadIdx.x;
            int cls = -1;
            i32 idx = -1;
            u32 key = 0u;
            if (i < m_here) {
                idx = ft_dyn[cur * FT_CAP + i];
                key = fkey(ldg_nc_f(row + idx));
                const u32 d = (key >> dshift) & 0xffu;
                cls = d > bin ? 1 : (d == bin ? 0 : -1);
            }
            const bool win = cls > 0 || (round_take_all && cls == 0);
            const u32 s = warp_reserve(win, &sm.win_count);
            if (win && s < k) out_row[s] = idx;
            if (round_take_all) continue;
            if (last) {
                const u32 t = warp_reserve(cls == 0, &sm.tie_count);
                if (cls == 0 && t < round_need) out_row[k - round_need + t] = idx;
            } else {
                const u32 t = warp_reserve(cls == 0, &sm.cand_count[cur ^ 1u]);
                if (cls == 0 && t < FT_CAP) {
                    ft_dyn[(cur ^ 1u) * FT_CAP + t] = idx;
                    red_shared_add(&sm.hist[h ^ 1u][(key >> (dshift - 8u)) & 0xffu], 1u);
                }
            }
        }
        if (!forward) return;
        need = round_need;
        cur ^= 1u;
        h ^= 1u;
        dshift -= 8u;
        __syncthreads();  // buffer, histogram and counters of the next round complete
    }
}
