// radix_mcta.cu — single-pass multi-CTA radix top-K ("radix-mcta" arm),
// after the FlashInfer / TRT-LLM CuTeDSL design.
//
// A "group" of `cpg` CTAs serves one row at a time; groups loop over rows
// (row = group, group + groups, ...). Each CTA stages its contiguous chunk
// of the row in shared memory ONCE as ascending u32 ordered keys, so the row
// is read from global memory exactly once. Then 8-bit radix rounds (4 for
// fp32) run from shared memory: each CTA histograms its keys that match the
// prefix chosen so far, adds the histogram into the group's global histogram
// with atomics, and the group meets at a software barrier (arrival counter
// in global memory); after the barrier every CTA reads the same merged
// histogram and finds the same crossing bin, so all CTAs take identical
// decisions without further communication. The result is the exact K-th key
// ("pivot") at some digit depth. Collect: keys above the pivot prefix are
// winners (slot from a global counter), keys equal to it are ties that claim
// slots through a second global counter and are written while slot < need.
//
// CO-RESIDENCY RULE: the software barrier needs every CTA of a group resident
// at the same time. The host launches at most `SM count` CTAs in total
// (grid = groups * cpg <= SMs) and the kernel can always hold at least one
// CTA per SM, so the whole grid is resident when nothing else runs on the
// device. A spin that never completes traps after a few seconds instead of
// hanging the GPU.
//
// Workspace (per group, MCTA_WS_WORDS u32, zeroed once by the host): three
// rotating 256-bin histograms, arrival / exit / done counters, winner and tie
// counters. The kernel restores it to zero before it exits (the last CTA of
// each row resets the row counters; the last CTA of the group to exit resets
// the rest), so no memset is needed between launches.

#include "prim/common.cuh"

#define MCTA_BLK 1024
#define MCTA_BINS 256
#define MCTA_WS_WORDS 1024
// Workspace layout (u32 offsets inside a group's block).
#define WS_HIST 0          // [3][256] rotating merged histograms
#define WS_ARRIVE 768      // barrier arrivals in this launch
#define WS_EXIT 769        // CTAs that finished the launch
#define WS_DONE 770        // CTAs that finished the current row's collect
#define WS_WIN 771         // winner slots handed out for the current row
#define WS_TIE 772         // tie slots handed out for the current row
#define WS_USED 773

// Spins allowed at a barrier before trapping (with ~100 ns sleeps: seconds).
#define MCTA_SPIN_LIMIT 40000000u

__device__ __forceinline__ void group_barrier(u32* ws, u32 target) {
    __syncthreads();  // every thread's global atomics of this round are issued
    if (threadIdx.x == 0) {
        __threadfence();
        red_release_gpu_add(ws + WS_ARRIVE, 1u);
        u32 spins = 0;
        while (ld_acquire_gpu(ws + WS_ARRIVE) < target) {
            __nanosleep(64);
            if (++spins > MCTA_SPIN_LIMIT) asm volatile("trap;");
        }
        __threadfence();
    }
    __syncthreads();
}

extern "C" __global__ void __launch_bounds__(MCTA_BLK, 1)
    radix_mcta_topk(const float* __restrict__ logits, const i32* __restrict__ row_n,
                    const i32* __restrict__ hints, i32* __restrict__ out, u32 rows, u32 npad, u32 k,
                    u32 cpg, u32 chunk, u32* __restrict__ workspace) {
    (void)hints;  // radix ignores hints by design
    extern __shared__ __align__(16) u32 keys[];  // [chunk] staged ordered keys
    __shared__ u32 hist[MCTA_BINS];
    __shared__ u32 scratch[32];
    __shared__ Crossing cross;

    const u32 group = blockIdx.x / cpg;
    const u32 part = blockIdx.x % cpg;
    const u32 groups = gridDim.x / cpg;
    u32* ws = workspace + (u64)group * MCTA_WS_WORDS;
    u32 barriers = 0;  // barriers this group has passed in this launch
    u32 rounds = 0;    // radix rounds this group has run (selects the histogram buffer)

    for (u32 r = group; r < rows; r += groups) {
        const u32 n = clamp_row_len(row_n[r], npad);
        i32* out_row = out + (u64)r * k;
        if (n <= k) {  // uniform over the group: every CTA skips the body
            if (part == 0) write_identity_row(out_row, n, k);
            continue;
        }
        const float* row = logits + (u64)r * npad;
        const u32 start = part * chunk;
        const u32 len = (start < n) ? min(chunk, n - start) : 0u;

        // ---- stage the chunk once (start is a multiple of 4: 16-B aligned)
        {
            const u32 nvec = (len + 3u) >> 2;
#pragma unroll 4
            for (u32 i4 = threadIdx.x; i4 < nvec; i4 += MCTA_BLK) {
                float4 v;
                (void)load_row_f4(row + start, i4, nvec, len, &v);
                // One 16-byte store (no bank conflicts). Lanes past `len` may
                // hold pad keys, but every reader stops at `len`, and
                // 4 * nvec <= chunk because chunk is a multiple of 64.
                reinterpret_cast<uint4*>(keys)[i4] = make_uint4(fkey(v.x), fkey(v.y), fkey(v.z), fkey(v.w));
            }
        }

        // ---- 8-bit radix rounds over the group ---------------------------
        u32 prefix = 0;
        u32 shift = 32;  // candidates: (key >> shift) == prefix; 32 = all
        u32 need = k;
        u32 cand_m = n;
        while (shift > 0u && cand_m != need) {
            const u32 low = shift - 8u;
            for (u32 b = threadIdx.x; b < MCTA_BINS; b += MCTA_BLK) hist[b] = 0u;
            __syncthreads();  // also orders the staging stores before the reads
            for (u32 i = threadIdx.x; i < len; i += MCTA_BLK) {
                const u32 key = keys[i];
                if (shift >= 32u || (key >> shift) == prefix) red_shared_add(&hist[(key >> low) & 255u], 1u);
            }
            __syncthreads();
            u32* merged = ws + WS_HIST + (rounds % 3u) * MCTA_BINS;
            for (u32 b = threadIdx.x; b < MCTA_BINS; b += MCTA_BLK)
                if (hist[b] != 0u) red_global_add(&merged[b], hist[b]);
            // The buffer of round `rounds + 1` was last read before barrier
            // `rounds - 1` by everyone, so part 0 may clear it now.
            if (part == 0) {
                u32* next = ws + WS_HIST + ((rounds + 1u) % 3u) * MCTA_BINS;
                for (u32 b = threadIdx.x; b < MCTA_BINS; b += MCTA_BLK) next[b] = 0u;
            }
            ++barriers;
            group_barrier(ws, barriers * cpg);
            for (u32 b = threadIdx.x; b < MCTA_BINS; b += MCTA_BLK) hist[b] = ld_cg_u32(&merged[b]);
            __syncthreads();
            find_crossing<MCTA_BINS, MCTA_BLK>(hist, need, scratch, &cross);
            need -= cross.above;
            prefix = (shift >= 32u) ? cross.bin : ((prefix << 8) | cross.bin);
            shift = low;
            cand_m = cross.count;
            ++rounds;
            __syncthreads();  // cross / hist are rewritten by the next round
        }

        // ---- collect ------------------------------------------------------
        // take_all: all candidates are needed (winners); otherwise the pivot
        // is a full key (shift 0) and equal keys are interchangeable ties.
        const bool take_all = (cand_m == need);
        const u32 win_cap = take_all ? k : k - need;
        const u32 trips = (len + MCTA_BLK - 1u) / MCTA_BLK;  // warp-uniform for the ballots
        for (u32 trip = 0; trip < trips; ++trip) {
            const u32 i = trip * MCTA_BLK + threadIdx.x;
            int cls = -1;
            u32 key = 0;
            if (i < len) {
                key = keys[i];
                if (shift >= 32u) {
                    cls = 0;
                } else {
                    const u32 p = key >> shift;
                    cls = (p > prefix) ? 1 : (p == prefix ? 0 : -1);
                }
            }
            const i32 idx = (i32)(start + i);
            const bool win = cls > 0 || (take_all && cls == 0);
            const u32 s = warp_reserve(win, ws + WS_WIN);
            if (win && s < win_cap) out_row[s] = idx;
            if (!take_all) {
                const u32 t = warp_reserve(cls == 0, ws + WS_TIE);
                if (cls == 0 && t < need) out_row[k - need + t] = idx;
            }
        }
        // The last CTA of the row to finish resets the row counters. Nobody
        // touches them again before the next row's first barrier, which this
        // CTA only reaches after the reset.
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            if (atomicAdd(ws + WS_DONE, 1u) == cpg - 1u) {
                atomicExch(ws + WS_WIN, 0u);
                atomicExch(ws + WS_TIE, 0u);
                atomicExch(ws + WS_DONE, 0u);
                __threadfence();
            }
        }
        __syncthreads();
    }

    // ---- restore the workspace for the next launch ------------------------
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicAdd(ws + WS_EXIT, 1u) == cpg - 1u) {
            for (u32 b = 0; b < 3u * MCTA_BINS; ++b) ws[WS_HIST + b] = 0u;
            atomicExch(ws + WS_ARRIVE, 0u);
            atomicExch(ws + WS_EXIT, 0u);
            __threadfence();
        }
    }
}
