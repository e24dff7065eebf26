// radix.cu — TensorRT-LLM-style production radix top-K ("radix" arm): every
// tier of the upstream decode dispatcher that runs without hints (the host
// side, src/arms/baselines/radix.rs, picks the tier; the GVR tier needs the
// previous step's indices and is not part of this hint-free arm).
//
//   tier          entry                       CTA      grid           launches
//   per-row       radix_topk                  512      rows           1
//   per-row-256   radix_topk_narrow           256      rows           1
//   split         radix_topk_split            512      rows × bpr     1
//   split-1024    radix_topk_split_wide       1024     rows × bpr     1
//   multi-pass    radix_topk_multipass        512      (bpr, rows)    3
//
// Per-row job (every tier but multi-pass): one CTA selects the top k of a
// row (or slice) with the schedule "half-11-11-10" over ASCENDING bins:
//   level 0: 11-bit bin of the fp16-rounded ordered key (2048 bins);
//   levels 1..3: fp32 ordered-key bits [31:21], [20:10], [9:0], each level
//   restricted to the elements whose higher key bits equal the prefix chosen
//   so far.
// Every level is one histogram pass plus a crossing search for the number of
// elements still needed. As soon as the crossing bin holds <= RADIX_CAP
// elements, ONE collect pass emits the definite winners (strictly above the
// crossing) through a block counter and compacts the crossing-bin candidates
// (full fp32 key + index) into shared memory; the remaining levels then run
// on that shared buffer only, and the last level fills ties up to k.
//
// Exact by construction: the collect pass and every histogram use the same
// bin function on the same data, so the count of winners equals k - need
// exactly and every tie slot lands in [k - need, k). No estimate is involved.
//
// fp16 bins do not nest inside fp32 key prefixes, so when level 0's crossing
// bin is too large the fp32 levels start again on the whole row (as
// upstream): nothing is promoted from level 0 in that case.

#include "prim/common.cuh"

// Candidate buffer capacity ("final items" in the upstream description).
#define RADIX_CAP 2048
#define RADIX_BINS 2048
#ifndef RADIX_UNROLL
#define RADIX_UNROLL 4u
#endif

// The three CTA widths of the upstream dispatcher.
#define RADIX_BLK_NARROW 256
#define RADIX_BLK 512
#define RADIX_BLK_WIDE 1024

// ---------------------------------------------------------------------------
// The order every tier selects by, in ONE place: a NaN contract (or any other
// change of order) edits these three helpers and nothing else.
//  radix_key:        fp32 -> u32 whose unsigned order is the selection order
//                    (prim's fkey: numeric order, -0 below +0, +-inf at the
//                    ends, every NaN the top key: the NaN contract).
//  radix_key_value:  the inverse of radix_key (values of compacted keys).
//  radix_coarse_bin: the level-0 bin (11 bits), a monotone non-decreasing
//                    function of radix_key (fp16 rounding is monotone).
// ---------------------------------------------------------------------------
__device__ __forceinline__ u32 radix_key(float x) { return fkey(x); }
__device__ __forceinline__ float radix_key_value(u32 key) { return invkey(key); }
__device__ __forceinline__ u32 radix_coarse_bin(float x) { return half_key(x) >> 5; }

// Where the candidate set of the current level is defined.
//  MODE_HALF: candidates are the elements whose coarse bin == prefix.
//  MODE_KEY:  candidates are the elements whose (key >> shift) == prefix
//             (shift == 32 means "every element").
#define MODE_HALF 0
#define MODE_KEY 1

// Classification of one element against the current candidate definition:
// +1 = definite winner (above the candidate set), 0 = candidate, -1 = below.
__device__ __forceinline__ int classify(float x, int mode, u32 shift, u32 prefix) {
    if (mode == MODE_HALF) {
        u32 b = radix_coarse_bin(x);
        return (b > prefix) ? 1 : (b == prefix ? 0 : -1);
    }
    if (shift >= 32u) return 0;
    u32 p = radix_key(x) >> shift;
    return (p > prefix) ? 1 : (p == prefix ? 0 : -1);
}

struct RadixShared {
    u32 hist[RADIX_BINS];
    u32 cand_key[RADIX_CAP];
    i32 cand_idx[RADIX_CAP];
    u32 scratch[32];
    Crossing cross;
    u32 win_count;   // winner slots handed out, in [0, k - need_final)
    u32 cand_count;  // candidates compacted into cand_key/cand_idx
    u32 tie_count;   // tie slots handed out, in [0, need_final)
    u32 is_last;     // split / multi-pass: this CTA arrived last for its row
};

template <int BLK>
__device__ __forceinline__ void zero_hist(u32* hist) {
    for (u32 b = threadIdx.x; b < RADIX_BINS; b += BLK) hist[b] = 0u;
}

// Where a selection reads its input from.
//  Row source (COHERENT = false): a logits row, read with ld.global.nc;
//    position p has index base + p.
//  Merge source (COHERENT = true): candidate values other CTAs wrote during
//    this launch, read L2-coherently (ld.global.cg, never the non-coherent
//    path); position p has index map[p].
template <bool COHERENT>
struct Source {
    const float* vals;
    const i32* map;
    u32 base;
    u32 n;

    __device__ __forceinline__ u32 load4(u32 i4, u32 nvec, float4* v) const {
        if (!COHERENT) return load_row_f4(vals, i4, nvec, n, v);
        const u32 src = (i4 < nvec) ? i4 : (nvec - 1u);
        *v = __ldcg(reinterpret_cast<const float4*>(vals) + src);
        u32 mask = 0;
        if (i4 < nvec) {
#pragma unroll
            for (u32 c = 0; c < 4u; ++c)
                if (i4 * 4u + c < n) mask |= 1u << c;
        }
        return mask;
    }

    __device__ __forceinline__ i32 index(u32 p) const { return COHERENT ? __ldcg(map + p) : (i32)(base + p); }
};

// One histogram pass over the source. Level 0 bins the coarse key; other
// levels bin `digit_mask` bits of the key at `low_shift`, restricted to
// elements whose (key >> prefix_shift) == prefix (prefix_shift == 32: no
// restriction).
template <int BLK, bool COHERENT>
__device__ __forceinline__ void hist_pass(const Source<COHERENT>& src, bool half_level, u32 prefix_shift, u32 prefix,
                                          u32 low_shift, u32 digit_mask, u32* hist) {
    const u32 nvec = (src.n + 3u) >> 2;
    // RADIX_UNROLL float4 loads in flight per thread before any is used.
    for (u32 base = 0; base < nvec; base += BLK * RADIX_UNROLL) {
        float4 v[RADIX_UNROLL];
        u32 valid[RADIX_UNROLL];
#pragma unroll
        for (u32 u = 0; u < RADIX_UNROLL; ++u) valid[u] = src.load4(base + u * BLK + threadIdx.x, nvec, &v[u]);
#pragma unroll
        for (u32 u = 0; u < RADIX_UNROLL; ++u) {
#pragma unroll
            for (u32 c = 0; c < 4u; ++c) {
                if (!(valid[u] & (1u << c))) continue;
                float x = f4_get(v[u], c);
                if (half_level) {
                    red_shared_add(&hist[radix_coarse_bin(x)], 1u);
                } else {
                    u32 key = radix_key(x);
                    if (prefix_shift >= 32u || (key >> prefix_shift) == prefix)
                        red_shared_add(&hist[(key >> low_shift) & digit_mask], 1u);
                }
            }
        }
    }
}

// Select the k largest of a source with src.n > k: writes k indices to
// out_idx (and, if out_val is not null, their values to out_val at the same
// slots). Called by the whole CTA of BLK threads.
template <int BLK, bool COHERENT>
__device__ void radix_select(const Source<COHERENT>& src, u32 k, i32* out_idx, float* out_val, RadixShared& sm) {
    const u32 n = src.n;
    if (threadIdx.x == 0) {
        sm.win_count = 0u;
        sm.cand_count = 0u;
        sm.tie_count = 0u;
    }
    // ---- level 0: coarse (fp16) bins over the whole source ---------------
    zero_hist<BLK>(sm.hist);
    __syncthreads();
    hist_pass<BLK>(src, true, 32u, 0u, 0u, 0u, sm.hist);
    __syncthreads();
    find_crossing<RADIX_BINS, BLK>(sm.hist, k, sm.scratch, &sm.cross);

    int mode;
    u32 shift;   // candidate definition: (key >> shift) == prefix
    u32 prefix;
    u32 need;    // how many candidates still have to be selected
    u32 cand_m;  // size of the candidate set
    if (sm.cross.count <= RADIX_CAP) {
        mode = MODE_HALF;
        shift = 32u;
        prefix = sm.cross.bin;
        need = k - sm.cross.above;
        cand_m = sm.cross.count;
    } else {
        // ---- levels 1..3 over the source (fp32 key digits 11/11/10) ------
        mode = MODE_KEY;
        shift = 32u;
        prefix = 0u;
        need = k;
        cand_m = n;
        while (shift > 0u && cand_m > RADIX_CAP && cand_m != need) {
            const u32 bits = (shift == 10u) ? 10u : 11u;
            const u32 low = shift - bits;
            __syncthreads();  // everyone has read sm.cross of the previous level
            zero_hist<BLK>(sm.hist);
            __syncthreads();
            hist_pass<BLK>(src, false, shift, prefix, low, (1u << bits) - 1u, sm.hist);
            __syncthreads();
            find_crossing<RADIX_BINS, BLK>(sm.hist, need, sm.scratch, &sm.cross);
            need -= sm.cross.above;
            prefix = (shift >= 32u) ? sm.cross.bin : ((prefix << bits) | sm.cross.bin);
            shift = low;
            cand_m = sm.cross.count;
        }
    }

    // ---- collect pass over the source -------------------------------------
    // take_all: every candidate is needed, so candidates are winners too.
    // direct_ties: the candidates share one full key; fill ties up to need.
    const bool take_all = (cand_m == need);
    const bool direct_ties = !take_all && mode == MODE_KEY && shift == 0u;
    const u32 win_cap = take_all ? k : k - need;
    {
        const u32 nvec = (n + 3u) >> 2;
        for (u32 base = 0; base < nvec; base += BLK) {
            const u32 i4 = base + threadIdx.x;
            float4 v;
            const u32 valid = src.load4(i4, nvec, &v);
#pragma unroll
            for (u32 c = 0; c < 4u; ++c) {
                const bool ok = (valid >> c) & 1u;
                const float x = f4_get(v, c);
                const int cls = ok ? classify(x, mode, shift, prefix) : -1;
                const u32 pos = i4 * 4u + c;
                const bool win = cls > 0 || (take_all && cls == 0);
                u32 s = warp_reserve(win, &sm.win_count);
                if (win && s < win_cap) {
                    out_idx[s] = src.index(pos);
                    if (out_val) out_val[s] = x;
                }
                if (direct_ties) {
                    u32 t = warp_reserve(cls == 0, &sm.tie_count);
                    if (cls == 0 && t < need) {
                        out_idx[k - need + t] = src.index(pos);
                        if (out_val) out_val[k - need + t] = x;
                    }
                } else if (!take_all) {
                    u32 t = warp_reserve(cls == 0, &sm.cand_count);
                    if (cls == 0 && t < RADIX_CAP) {
                        sm.cand_key[t] = radix_key(x);
                        sm.cand_idx[t] = src.index(pos);
                    }
                }
            }
        }
    }
    if (take_all || direct_ties) return;
    __syncthreads();

    // ---- refine the candidates in shared memory --------------------------
    // Candidates are (full fp32 key, index); continue the fp32 digit levels
    // (from `shift`, or from the top for a level-0 coarse candidate set).
    const u32 m_total = min(sm.cand_count, (u32)RADIX_CAP);
    while (shift > 0u && cand_m != need) {
        const u32 bits = (shift == 10u) ? 10u : 11u;
        const u32 low = shift - bits;
        __syncthreads();
        zero_hist<BLK>(sm.hist);
        __syncthreads();
        for (u32 i = threadIdx.x; i < m_total; i += BLK) {
            const u32 key = sm.cand_key[i];
            if (shift >= 32u || (key >> shift) == prefix)
                red_shared_add(&sm.hist[(key >> low) & ((1u << bits) - 1u)], 1u);
        }
        __syncthreads();
        find_crossing<RADIX_BINS, BLK>(sm.hist, need, sm.scratch, &sm.cross);
        need -= sm.cross.above;
        prefix = (shift >= 32u) ? sm.cross.bin : ((prefix << bits) | sm.cross.bin);
        shift = low;
        cand_m = sm.cross.count;
    }
    // Final emission from the buffer: keys above the prefix are winners; keys
    // equal to it are all taken (cand_m == need) or, at shift 0, identical
    // ties filled first-come up to need.
    const bool take_rest = (cand_m == need);
    const u32 rest_cap = take_rest ? k : k - need;
    const u32 trips = (m_total + BLK - 1u) / BLK;  // warp-uniform loop for the ballots
    for (u32 trip = 0; trip < trips; ++trip) {
        const u32 i = trip * BLK + threadIdx.x;
        int cls = -1;
        u32 key = 0;
        i32 idx = -1;
        if (i < m_total) {
            key = sm.cand_key[i];
            idx = sm.cand_idx[i];
            const u32 p = (shift >= 32u) ? 0u : (key >> shift);
            cls = (shift >= 32u) ? 0 : (p > prefix ? 1 : (p == prefix ? 0 : -1));
        }
        const bool win = cls > 0 || (take_rest && cls == 0);
        u32 s = warp_reserve(win, &sm.win_count);
        if (win && s < rest_cap) {
            out_idx[s] = idx;
            if (out_val) out_val[s] = radix_key_value(key);
        }
        if (!take_rest) {
            u32 t = warp_reserve(cls == 0, &sm.tie_count);
            if (cls == 0 && t < need) {
                out_idx[k - need + t] = idx;
                if (out_val) out_val[k - need + t] = radix_key_value(key);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Tiers "per-row" (512 threads) and "per-row-256" (upstream's "narrow" CTA
// for large batches of moderate rows): one CTA per row.
// ---------------------------------------------------------------------------
template <int BLK>
__device__ __forceinline__ void per_row(const float* logits, const i32* row_n, i32* out, u32 rows, u32 npad, u32 k,
                                        RadixShared& sm) {
    const u32 r = blockIdx.x;
    if (r >= rows) return;
    const u32 n = clamp_row_len(row_n[r], npad);
    i32* out_row = out + (u64)r * k;
    if (n <= k) {
        write_identity_row(out_row, n, k);
        return;
    }
    Source<false> src{logits + (u64)r * npad, nullptr, 0u, n};
    radix_select<BLK>(src, k, out_row, nullptr, sm);
}

extern "C" __global__ void __launch_bounds__(RADIX_BLK) radix_topk(const float* __restrict__ logits,
                                                                  const i32* __restrict__ row_n,
                                                                  const i32* __restrict__ hints,
                                                                  i32* __restrict__ out, u32 rows, u32 npad,
                                                                  u32 k) {
    (void)hints;  // radix ignores hints by design
    __shared__ RadixShared sm;
    per_row<RADIX_BLK>(logits, row_n, out, rows, npad, k, sm);
}

extern "C" __global__ void __launch_bounds__(RADIX_BLK_NARROW)
    radix_topk_narrow(const float* __restrict__ logits, const i32* __restrict__ row_n, const i32* __restrict__ hints,
                      i32* __restrict__ out, u32 rows, u32 npad, u32 k) {
    (void)hints;
    __shared__ RadixShared sm;
    per_row<RADIX_BLK_NARROW>(logits, row_n, out, rows, npad, k, sm);
}

// ---------------------------------------------------------------------------
// Tiers "split" (512 threads) and "split-1024" (upstream's wide CTA once a
// slice holds >= 30 000 values): `bpr` CTAs per row (small batches of long
// rows). CTA (r, s) selects the top k of slice s of row r into the
// workspace (indices and values); the last CTA of the row to finish (elected
// by an atomic counter, with fences on both sides) selects the top k of the
// bpr*k candidates into the output and resets the counter, so the workspace
// restores itself.
// Rows shorter than RADIX_SPLIT_MIN or than bpr*(k+8) are not split: CTA 0
// does the whole row and the others exit. Slices start at multiples of 4
// (16-byte aligned) and differ in length by < 8, so with n >= bpr*(k+8)
// every slice holds more than k elements and yields exactly k candidates.
//
// Workspace layout (bytes): done[rows] u32 | pad to 16 | cand_val[rows][bpr*k]
// f32 | cand_idx[rows][bpr*k] i32. Only done[] must be zero at entry; the
// candidate arrays are written before they are read in every launch.
// ---------------------------------------------------------------------------
#define RADIX_SPLIT_MIN 16384u

template <int BLK>
__device__ __forceinline__ void split_row(const float* logits, const i32* row_n, i32* out, u32 rows, u32 npad, u32 k,
                                          u32 bpr, u32* workspace, RadixShared& sm) {
    const u32 r = blockIdx.x / bpr;
    const u32 s = blockIdx.x % bpr;
    if (r >= rows) return;
    const u32 n = clamp_row_len(row_n[r], npad);
    i32* out_row = out + (u64)r * k;
    const float* row = logits + (u64)r * npad;
    if (n <= k) {
        if (s == 0) write_identity_row(out_row, n, k);
        return;
    }
    if (n < RADIX_SPLIT_MIN || (u64)n < (u64)bpr * (k + 8u)) {
        if (s == 0) {
            Source<false> src{row, nullptr, 0u, n};
            radix_select<BLK>(src, k, out_row, nullptr, sm);
        }
        return;
    }
    u32* done = workspace;
    const u64 per_row = (u64)bpr * k;
    const u64 cand_base = (((u64)rows + 3u) & ~3ull);  // u32 words; keeps 16-byte alignment
    float* cand_val = reinterpret_cast<float*>(workspace + cand_base) + (u64)r * per_row;
    i32* cand_idx = reinterpret_cast<i32*>(workspace + cand_base + (u64)rows * per_row) + (u64)r * per_row;

    const u32 start = (u32)(((u64)s * n / bpr) & ~3ull);
    const u32 end = (s + 1u == bpr) ? n : (u32)(((u64)(s + 1u) * n / bpr) & ~3ull);
    Source<false> slice{row + start, nullptr, start, end - start};
    radix_select<BLK>(slice, k, cand_idx + (u64)s * k, cand_val + (u64)s * k, sm);

    // Publish this slice's candidates, then elect the last CTA of the row.
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) sm.is_last = (atomicAdd(&done[r], 1u) == bpr - 1u) ? 1u : 0u;
    __syncthreads();
    if (!sm.is_last) return;
    __threadfence();
    Source<true> merged{cand_val, cand_idx, 0u, (u32)per_row};
    radix_select<BLK>(merged, k, out_row, nullptr, sm);
    if (threadIdx.x == 0) done[r] = 0u;  // restore the workspace for the next launch
}

extern "C" __global__ void __launch_bounds__(RADIX_BLK)
    radix_topk_split(const float* __restrict__ logits, const i32* __restrict__ row_n, const i32* __restrict__ hints,
                     i32* __restrict__ out, u32 rows, u32 npad, u32 k, u32 bpr, u32* __restrict__ workspace) {
    (void)hints;
    __shared__ RadixShared sm;
    split_row<RADIX_BLK>(logits, row_n, out, rows, npad, k, bpr, workspace, sm);
}

extern "C" __global__ void __launch_bounds__(RADIX_BLK_WIDE)
    radix_topk_split_wide(const float* __restrict__ logits, const i32* __restrict__ row_n,
                          const i32* __restrict__ hints, i32* __restrict__ out, u32 rows, u32 npad, u32 k, u32 bpr,
                          u32* __restrict__ workspace) {
    (void)hints;
    __shared__ RadixShared sm;
    split_row<RADIX_BLK_WIDE>(logits, row_n, out, rows, npad, k, bpr, workspace, sm);
}

// ---------------------------------------------------------------------------
// Tier "multi-pass": the row is shared by the bpr CTAs of grid row y
// (grid (bpr, rows), 512 threads), and the selection is three launches of
// this entry (pass 0, 1, 2) over per-row state in the workspace. The fp32
// key digits are 11 / 11 / 10 bits (no coarse level):
//   pass 0: every CTA histograms key bits [31:21] of its share of the row and
//           adds the non-zero bins into the row's global histogram.
//   pass 1: the row again: keys whose top digit is above D1 are winners
//           (global slot counter); keys whose top digit is D1 are appended
//           to candidate list A and histogrammed on bits [20:10].
//   pass 2: list A, gathering each candidate's value from the row: middle
//           digit above D2 -> winner; equal -> list B, histogrammed on bits
//           [9:0].
// The last CTA of a row to finish a pass (arrival counter, fences on both
// sides, L2-coherent reads) turns the row's histogram into the next digit:
// the crossing of the elements still needed (D1 with need k; D2, D3 with the
// need left after the winners above them). At the end of pass 2 it also
// emits list B: low digit above D3 -> winner, equal to D3 -> identical full
// keys, the first `need` of them into slots [k - need, k). Exact: each pass
// emits exactly the count above the crossing its own histogram found, so
// winners number k - need and ties fill the rest.
// The share of a CTA: float4 number i4 of the row belongs to thread
// (i4 mod bpr*512) of the row, i.e. CTA s reads float4s s*512 + t + j*bpr*512.
// Rows with n <= k: CTA 0 writes identity + -1 in pass 0; nothing else runs
// for them and their state is never touched.
//
// Workspace (u32 words): state[rows][MP_STATE_WORDS] | hist[rows][2048] |
// list_a[rows][npad] i32 | list_b[rows][npad] i32. State and histograms
// must be zero at entry and are zero again after pass 2 (each pass's last
// CTA clears what it consumed); the lists are written before they are read.
// ---------------------------------------------------------------------------
#define MP_ARRIVED 0  // CTAs of the row that finished this pass
#define MP_WIN 1      // winner slots handed out (passes 1, 2 and the final emission)
#define MP_FILL 2     // entries appended to the list this pass writes
#define MP_LIST 3     // entries in list A (set by pass 1's last CTA)
#define MP_DIGIT 4    // crossing digit for the next pass
#define MP_NEED 5     // elements still needed from that digit's candidates
#define MP_STATE_WORDS 8

struct MultiPassShared {
    u32 hist[RADIX_BINS];
    u32 scratch[32];
    Crossing cross;
    u32 is_last;
    u32 tie_count;
};

extern "C" __global__ void __launch_bounds__(RADIX_BLK)
    radix_topk_multipass(const float* __restrict__ logits, const i32* __restrict__ row_n,
                         const i32* __restrict__ hints, i32* __restrict__ out, u32 rows, u32 npad, u32 k, u32 pass,
                         u32* workspace) {
    (void)hints;
    __shared__ MultiPassShared sm;
    const u32 s = blockIdx.x;
    const u32 bpr = gridDim.x;
    const u32 r = blockIdx.y;
    if (r >= rows) return;
    const u32 n = clamp_row_len(row_n[r], npad);
    i32* out_row = out + (u64)r * k;
    if (n <= k) {
        if (pass == 0u && s == 0u) write_identity_row(out_row, n, k);
        return;
    }
    u32* st = workspace + (u64)r * MP_STATE_WORDS;
    u32* ghist = workspace + (u64)rows * MP_STATE_WORDS + (u64)r * RADIX_BINS;
    i32* list_a = reinterpret_cast<i32*>(workspace + (u64)rows * (MP_STATE_WORDS + RADIX_BINS)) + (u64)r * npad;
    i32* list_b = list_a + (u64)rows * npad;
    const float* row = logits + (u64)r * npad;
    const u32 span = bpr * RADIX_BLK;  // threads serving the row

    zero_hist<RADIX_BLK>(sm.hist);
    __syncthreads();
    if (pass < 2u) {
        // Passes 0 and 1 read the row.
        const u32 d1 = (pass == 1u) ? st[MP_DIGIT] : 0u;
        const u32 nvec = (n + 3u) >> 2;
        for (u32 base = s * RADIX_BLK; base < nvec; base += span * RADIX_UNROLL) {
            float4 v[RADIX_UNROLL];
            u32 valid[RADIX_UNROLL];
#pragma unroll
            for (u32 u = 0; u < RADIX_UNROLL; ++u)
                valid[u] = load_row_f4(row, base + u * span + threadIdx.x, nvec, n, &v[u]);
#pragma unroll
            for (u32 u = 0; u < RADIX_UNROLL; ++u) {
                const u32 i4 = base + u * span + threadIdx.x;
#pragma unroll
                for (u32 c = 0; c < 4u; ++c) {
                    const bool ok = (valid[u] >> c) & 1u;
                    const u32 key = radix_key(f4_get(v[u], c));
                    if (pass == 0u) {
                        if (ok) red_shared_add(&sm.hist[key >> 21], 1u);
                        continue;
                    }
                    const u32 top = key >> 21;
                    const bool win = ok && top > d1;
                    const bool cand = ok && top == d1;
                    const i32 pos = (i32)(i4 * 4u + c);
                    const u32 slot = warp_reserve(win, &st[MP_WIN]);
                    if (win && slot < k) out_row[slot] = pos;
                    const u32 at = warp_reserve(cand, &st[MP_FILL]);
                    if (cand) {
                        list_a[at] = pos;
                        red_shared_add(&sm.hist[(key >> 10) & 2047u], 1u);
                    }
                }
            }
        }
    } else {
        // Pass 2 reads list A (written by pass 1, a previous launch).
        const u32 d2 = st[MP_DIGIT];
        const u32 m = st[MP_LIST];
        for (u32 base = s * RADIX_BLK; base < m; base += span) {
            const u32 i = base + threadIdx.x;
            const bool ok = i < m;
            const i32 pos = ok ? list_a[i] : 0;
            const u32 key = ok ? radix_key(ldg_nc_f(row + pos)) : 0u;
            const u32 mid = (key >> 10) & 2047u;
            const bool win = ok && mid > d2;
            const bool cand = ok && mid == d2;
            const u32 slot = warp_reserve(win, &st[MP_WIN]);
            if (win && slot < k) out_row[slot] = pos;
            const u32 at = warp_reserve(cand, &st[MP_FILL]);
            if (cand) {
                list_b[at] = pos;
                red_shared_add(&sm.hist[key & 1023u], 1u);
            }
        }
    }
    __syncthreads();
    for (u32 b = threadIdx.x; b < RADIX_BINS; b += RADIX_BLK) {
        const u32 h = sm.hist[b];
        if (h) red_global_add(&ghist[b], h);
    }

    // Publish this CTA's histogram, list entries and winners, then elect the
    // last CTA of the row.
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) sm.is_last = (atomicAdd(&st[MP_ARRIVED], 1u) == bpr - 1u) ? 1u : 0u;
    __syncthreads();
    if (!sm.is_last) return;
    __threadfence();

    // The row's histogram is complete: take it (and clear it for the next
    // pass), then find the crossing of the elements still needed.
    for (u32 b = threadIdx.x; b < RADIX_BINS; b += RADIX_BLK) {
        sm.hist[b] = ld_cg_u32(&ghist[b]);
        ghist[b] = 0u;
    }
    const u32 need_in = (pass == 0u) ? k : ld_cg_u32(&st[MP_NEED]);
    const u32 filled = ld_cg_u32(&st[MP_FILL]);
    __syncthreads();
    find_crossing<RADIX_BINS, RADIX_BLK>(sm.hist, need_in, sm.scratch, &sm.cross);
    const u32 digit = sm.cross.bin;
    const u32 need = need_in - sm.cross.above;
    if (pass < 2u) {
        if (threadIdx.x == 0) {
            st[MP_DIGIT] = digit;
            st[MP_NEED] = need;
            if (pass == 1u) st[MP_LIST] = filled;
            st[MP_FILL] = 0u;
            st[MP_ARRIVED] = 0u;
        }
        return;
    }

    // Final emission (pass 2's last CTA): list B holds `filled` candidates
    // whose top 22 key bits are (D1, D2).
    if (threadIdx.x == 0) sm.tie_count = 0u;
    __syncthreads();
    for (u32 base = 0; base < filled; base += RADIX_BLK) {
        const u32 i = base + threadIdx.x;
        const bool ok = i < filled;
        const i32 pos = ok ? (i32)ld_cg_u32(reinterpret_cast<const u32*>(list_b + i)) : 0;
        const u32 low = ok ? (radix_key(ldg_nc_f(row + pos)) & 1023u) : 0u;
        const bool win = ok && low > digit;
        const bool tie = ok && low == digit;
        const u32 slot = warp_reserve(win, &st[MP_WIN]);
        if (win && slot < k - need) out_row[slot] = pos;
        const u32 t = warp_reserve(tie, &sm.tie_count);
        if (tie && t < need) out_row[k - need + t] = pos;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        // Leave the row's state as it was before pass 0: all zero.
        st[MP_ARRIVED] = 0u;
        st[MP_WIN] = 0u;
        st[MP_FILL] = 0u;
        st[MP_LIST] = 0u;
        st[MP_DIGIT] = 0u;
        st[MP_NEED] = 0u;
    }
}
