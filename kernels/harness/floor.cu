// floor.cu — the latency floor of a top-K launch (`grid --floor`), not a top-K.
//
// Any exact top-K must read every valid value of a row (unless the row has at
// most k values: then the row is its own answer) and make each output
// slot depend on all of them, so at least one all-to-one exchange separates
// the last load of the row from the first store of its k indices. These
// kernels do exactly that and nothing else: the CTAs of a row read it once
// (float4 loads, eight per thread in flight), fold it into one maximum key,
// meet once (a block barrier; across CTAs a global last-arriver hand-off or
// a cluster barrier), and one CTA writes k indices that wait on the maximum.
// Their time is a lower bound for a kernel of that launch shape, not a
// reachable target: they select nothing. The output is the short-row
// contract's identity (slot j holds j while j < n, else -1), which the host
// checks so that a floor that skipped its work cannot pass.
//
// Entry points (any blockDim.x that is a multiple of 32, at most 1024), with
// the argument list of the top-K families (hints unused):
//   floor_grid    grid (parts, rows): parts == 1 is one CTA per row; parts > 1
//                 hand off through `ws` (two zeroed words per row, restored
//                 to zero by the last arriver, so no clearing between reps).
//                 With one CTA per row it also has the two wave tricks of the
//                 ss kernels' many-rows launches (off at zero): the next-wave
//                 L2 prefetch (`ahead`) and the first-wave stagger
//                 (`stagger`), so that no trick an ss launch uses leaves the
//                 floor slower than that launch;
//   floor_cluster grid (parts, rows), clusters of (parts, 1, 1), parts ≤ 16:
//                 partial maxima into rank 0's shared memory, one cluster
//                 barrier.
//   floor_ring    grid (1, rows): one CTA per row streams it through a ring of
//                 FLOOR_RING_STAGES shared-memory chunks of FLOOR_RING_CHUNK
//                 bytes filled by bulk copies (TMA), so the bytes in flight
//                 are set by the ring, not by registers (dynamic shared
//                 memory: stages · chunk bytes).

#include "prim/common.cuh"

// Launch scalars, filled by src/floor/arm.rs `FloorParams` (same order).
struct FloorParams {
    u32 npad;
    u32 k;
    u32 slice;    // values per part, a multiple of 4; parts · slice ≥ every row's n
    u32 ahead;    // next-wave prefetch: the CTA of row r sends row r + ahead to L2 (0 = off)
    u32 sms;      // SMs, and CTAs of this launch one SM holds (the stagger's slots)
    u32 per_sm;
    u32 stagger;  // wave stagger span in SM cycles (0 = off)
};

#define FLOOR_UNROLL 8
#define FLOOR_MAX_WARPS 32
#define FLOOR_MAX_PARTS 16

// Values of a row that a top-K must read: none when the row has at most k
// values (the row is its own answer, written without a load), else all n.
__device__ __forceinline__ u32 floor_read_len(u32 n, u32 k) { return n > k ? n : 0u; }

// CUDA's max() overloads, spelled out so the host emulator compiles this file.
__device__ __forceinline__ u32 floor_umax(u32 a, u32 b) { return a > b ? a : b; }

// Largest key of values [lo, hi) of X; lo a multiple of 4, X 16-byte aligned.
__device__ __forceinline__ u32 floor_slice_max(const float* __restrict__ X, u32 lo, u32 hi) {
    u32 m = 0u;
    const float4* X4 = reinterpret_cast<const float4*>(X);
    const u32 lo4 = lo >> 2, hi4 = hi >> 2;
    const u32 step = blockDim.x;
    u32 i = lo4 + threadIdx.x;
    for (; i + (FLOOR_UNROLL - 1) * step < hi4; i += FLOOR_UNROLL * step) {  // whole tiles: every load first
        float4 v[FLOOR_UNROLL];
#pragma unroll
        for (int j = 0; j < FLOOR_UNROLL; ++j) v[j] = X4[i + (u32)j * step];
#pragma unroll
        for (int j = 0; j < FLOOR_UNROLL; ++j) {
            const u32 a = floor_umax(fkey(v[j].x), fkey(v[j].y)), b = floor_umax(fkey(v[j].z), fkey(v[j].w));
            m = floor_umax(m, floor_umax(a, b));
        }
    }
    for (; i < hi4; i += step) {
        const float4 v = X4[i];
        const u32 a = floor_umax(fkey(v.x), fkey(v.y)), b = floor_umax(fkey(v.z), fkey(v.w));
        m = floor_umax(m, floor_umax(a, b));
    }
    for (u32 i = 4u * hi4 + threadIdx.x; i < hi; i += step) m = floor_umax(m, fkey(X[i]));
    return m;
}

// Block maximum, every thread gets it (one barrier; `scratch` FLOOR_MAX_WARPS words).
__device__ __forceinline__ u32 floor_block_max(u32 m, u32* scratch) {
    m = warp_max(m);
    if (lane_id() == 0u) scratch[warp_id()] = m;
    __syncthreads();
    const u32 nw = blockDim.x >> 5;
    u32 all = 0u;
    for (u32 w = 0u; w < nw; ++w) all = floor_umax(all, scratch[w]);
    return all;
}

// The k output slots of a row, each store waiting on the row's maximum.
__device__ __forceinline__ void floor_write(i32* __restrict__ O, u32 n, u32 k, u32 m) {
    for (u32 j = threadIdx.x; j < k; j += blockDim.x) {
        u32 slot = j;
        asm volatile("" : "+r"(slot) : "r"(m));  // the compiler may not start the store before m
        O[j] = slot < n ? (i32)slot : -1;
    }
}

// Wave stagger, as kernels/ss/main.cu's ss_wave_stagger: the CTAs of the
// first wave (rows below per_sm · sms, dealt round-robin over the SMs) start
// j/per_sm of the span late, j being the CTA's place on its SM. Later waves
// inherit the offsets. One thread waits, the barrier holds the rest.
__device__ __forceinline__ void floor_stagger(u32 row, const FloorParams& p) {
    if (p.stagger == 0u || p.per_sm == 0u || p.sms == 0u || row >= p.per_sm * p.sms) return;
    const u64 wait = (u64)p.stagger * (row / p.sms) / p.per_sm;
    if (threadIdx.x == 0u) {
#ifdef SS_EMULATION
        emu::trace.at(row) += (u32)wait;  // the test compares it with the host's plan
#endif
        const u64 t0 = gvr_probe_clock();
        while (gvr_probe_clock() - t0 < wait) __nanosleep(200);
    }
    __syncthreads();
}

// Next-wave prefetch, as kernels/ss/common.cuh's ss_prefetch_next_wave: this
// warp's share of the valid float4 prefix of row `next` (n values) goes to
// L2 in one bulk prefetch, no request under 1 KB. Issued once the CTA's own
// row has arrived, so it does not compete with the loads the CTA waits on.
__device__ __forceinline__ void floor_prefetch_row(const float* X, u32 n, u32 next) {
    const u32 f1 = n >> 2, nw = blockDim.x >> 5;
    u32 chunk = (f1 + nw - 1u) / nw;
    chunk = chunk > 64u ? chunk : 64u;
    const u32 a = warp_id() * chunk;
    if (a >= f1) return;
    const u32 b = a + chunk < f1 ? a + chunk : f1;
#ifdef SS_EMULATION
    emu::check_load(X + (u64)a * 4u, true);
    emu::check_load(X + (u64)(b - 1u) * 4u, true);
    emu::trace.at(next) += b - a;  // float4 sent per row: the test wants each prefix once
#else
    (void)next;
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(X + (u64)a * 4u), "r"((b - a) * 16u)
                 : "memory");
#endif
}

extern "C" __global__ void __launch_bounds__(1024, 1)
    floor_grid(const float* __restrict__ logits, const i32* __restrict__ row_n, const i32* __restrict__ hints,
               i32* __restrict__ out, const FloorParams p, u32* __restrict__ ws) {
    const u32 npad = p.npad, k = p.k, slice = p.slice;
    __shared__ u32 scratch[FLOOR_MAX_WARPS];
    __shared__ u32 handoff[2];  // the row's maximum, and whether this part finishes the row
    const u32 row = blockIdx.y, part = blockIdx.x, parts = gridDim.x;
    if (parts == 1u) floor_stagger(row, p);
    const u32 n = clamp_row_len(row_n[row], npad);
    // The next wave's row length travels with this row's (lane 0 of each warp).
    const u32 next = row + p.ahead;
    const u32 next_n = p.ahead != 0u && parts == 1u && next < gridDim.y && next > row && lane_id() == 0u
                           ? clamp_row_len(row_n[next], npad)
                           : 0u;
    const u32 next_read = floor_read_len(next_n, k);
    const u32 rn = floor_read_len(n, k);
    const u32 lo = rn < part * slice ? rn : part * slice, hi = rn < lo + slice ? rn : lo + slice;
    u32 m = floor_slice_max(logits + (u64)row * npad, lo, hi);
    if (next_read != 0u) floor_prefetch_row(logits + (u64)next * npad, next_read, next);
    m = floor_block_max(m, scratch);
    if (parts > 1u) {
        if (threadIdx.x == 0u) {
            u32* w = ws + 2u * row;
            atomicMax(w, m);
            __threadfence();
            const bool done = atomicAdd(w + 1, 1u) == parts - 1u;
            if (done) {
                __threadfence();
                m = atomicExch(w, 0u);  // every part's maximum, and the word restored
                w[1] = 0u;
            }
            handoff[0] = m;
            handoff[1] = done ? 1u : 0u;
        }
        __syncthreads();
        if (handoff[1] == 0u) return;
        m = handoff[0];
    }
    floor_write(out + (u64)row * k, n, k, m);
}

// The host emulator (tests/emu/floor.rs) runs CTAs one at a time and has no
// cluster barrier or bulk copy for these kernels: the GPU test
// (tests/gpu/floor.rs) covers them.
#ifndef SS_EMULATION
extern "C" __global__ void __launch_bounds__(1024, 1)
    floor_cluster(const float* __restrict__ logits, const i32* __restrict__ row_n, const i32* __restrict__ hints,
                  i32* __restrict__ out, const FloorParams p) {
    const u32 npad = p.npad, k = p.k, slice = p.slice;
    __shared__ u32 scratch[FLOOR_MAX_WARPS];
    __shared__ u32 partial[FLOOR_MAX_PARTS];
    const u32 row = blockIdx.y, part = cluster_ctarank(), parts = cluster_nctarank();
    cluster_arrive();  // rank 0 must be running before anyone writes its shared memory
    const u32 n = clamp_row_len(row_n[row], npad);
    const u32 rn = floor_read_len(n, k);
    const u32 lo = rn < part * slice ? rn : part * slice, hi = rn < lo + slice ? rn : lo + slice;
    const u32 m = floor_block_max(floor_slice_max(logits + (u64)row * npad, lo, hi), scratch);
    cluster_wait();
    if (threadIdx.x == 0u) dsmem_st_u32(cluster_map(&partial[part], 0u), m);
    cluster_sync();  // release/acquire: rank 0 sees every part's maximum
    if (part != 0u) return;
    u32 all = 0u;
    for (u32 r = 0u; r < parts; ++r) all = floor_umax(all, partial[r]);
    floor_write(out + (u64)row * k, n, k, all);
}

#ifndef FLOOR_RING_STAGES
#define FLOOR_RING_STAGES 4
#endif
#ifndef FLOOR_RING_CHUNK
#define FLOOR_RING_CHUNK 16384  // bytes per bulk copy, a multiple of 16
#endif

extern "C" __global__ void __launch_bounds__(1024, 1)
    floor_ring(const float* __restrict__ logits, const i32* __restrict__ row_n, const i32* __restrict__ hints,
               i32* __restrict__ out, const FloorParams p) {
    constexpr u32 STAGES = FLOOR_RING_STAGES, CHUNK4 = FLOOR_RING_CHUNK / 16u;
    static_assert(FLOOR_RING_CHUNK % 16 == 0 && STAGES >= 1, "chunks of whole float4");
    extern __shared__ __align__(128) float4 ring[];  // STAGES · CHUNK4
    __shared__ u64 full[STAGES], empty[STAGES];
    __shared__ u32 scratch[FLOOR_MAX_WARPS];
    const u32 t = threadIdx.x, row = blockIdx.y;
    const u32 n = clamp_row_len(row_n[row], p.npad);
    const u32 rn = floor_read_len(n, p.k), n4 = rn >> 2;
    const float* X = logits + (u64)row * p.npad;
    const u32 chunks = (n4 + CHUNK4 - 1u) / CHUNK4;
    // Chunk c into stage c % STAGES (thread 0 only).
    auto issue = [&](u32 c) {
        const u32 f0 = c * CHUNK4, len = n4 - f0 < CHUNK4 ? n4 - f0 : CHUNK4;
        u64* bar = &full[c % STAGES];
        mbar_arrive_expect_tx(bar, len * 16u);
        bulk_copy_g2s(ring + (c % STAGES) * CHUNK4, X + (u64)f0 * 4u, len * 16u, bar);
    };
    if (t == 0u) {
        for (u32 s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1u);
            mbar_init(&empty[s], blockDim.x >> 5);
        }
        mbar_init_fence();
    }
    __syncthreads();
    if (t == 0u)
        for (u32 c = 0; c < STAGES && c < chunks; ++c) issue(c);
    u32 m = 0u;
    for (u32 c = 0; c < chunks; ++c) {
        const u32 s = c % STAGES, parity = (c / STAGES) & 1u;
        mbar_wait(&full[s], parity);
        const u32 f0 = c * CHUNK4, len = n4 - f0 < CHUNK4 ? n4 - f0 : CHUNK4;
        for (u32 i = t; i < len; i += blockDim.x) {
            const float4 v = ring[s * CHUNK4 + i];
            const u32 a = floor_umax(fkey(v.x), fkey(v.y)), b = floor_umax(fkey(v.z), fkey(v.w));
            m = floor_umax(m, floor_umax(a, b));
        }
        __syncwarp();
        if (lane_id() == 0u) mbar_arrive(&empty[s]);
        // The stage is refilled once every warp has read it.
        if (t == 0u && c + STAGES < chunks) {
            mbar_wait(&empty[s], parity);
            issue(c + STAGES);
        }
    }
    for (u32 i = 4u * n4 + t; i < rn; i += blockDim.x) m = floor_umax(m, fkey(X[i]));
    floor_write(out + (u64)row * p.k, n, p.k, floor_block_max(m, scratch));
}
#endif  // SS_EMULATION
