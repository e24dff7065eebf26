// common.cuh — device primitives shared by every top-K kernel of gvr-bench.
//
// Self-contained on purpose: NVRTC compiles it with its built-in headers
// only (no <cuda/...>, no <cstdint>, no CUB), so fixed-width types are
// defined here and every Hopper-specific instruction is raw PTX.
//
// Conventions used by all kernels:
//  * histograms are ascending: a larger value lands in a bin with a larger
//    index, so "above bin j" means "strictly larger bin index";
//  * a row is read only at positions < n; vector loads past the valid range
//    are redirected to an in-row address and masked by INDEX, never by value
//    (padding may hold +3e38 poison);
//  * every warp-collective helper must be called by all 32 lanes of a warp
//    (kernels keep their loop trip counts warp-uniform for this reason).
#pragma once

typedef unsigned int u32;
typedef int i32;
typedef unsigned long long u64;
typedef long long i64;
typedef unsigned short u16;

#define GVR_FULL_MASK 0xffffffffu

// ---------------------------------------------------------------------------
// Order-preserving key: unsigned order of fkey(x) equals
// numeric order of x over all finite values and ±inf; fkey(-0) < fkey(+0).
// NaN contract (torch.topk's order): every NaN, whatever its sign or
// payload, maps to 0xffffffff, above +inf's key, so all NaNs tie with each
// other and rank above everything else. invkey(0xffffffff) is a NaN, so the
// key stays its own inverse up to the NaN payload.
// ---------------------------------------------------------------------------
__device__ __forceinline__ u32 fkey(float x) {
    u32 u = __float_as_uint(x);
    u32 key = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return x != x ? 0xffffffffu : key;
}

__device__ __forceinline__ float invkey(u32 k) {
    u32 u = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
    return __uint_as_float(u);
}

// fp16 (round-to-nearest-even) ordered 16-bit key. Rounding is monotone
// non-decreasing, so the key is a monotone function of x (values beyond the
// fp16 range saturate to ±inf keys, which keeps monotonicity). Any NaN maps
// to 0xffff, the top, as in fkey, so a coarse pass agrees with the full key.
__device__ __forceinline__ u32 half_key(float x) {
    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    u32 hu = (u32)h;
    u32 key = (hu & 0x8000u) ? (~hu & 0xffffu) : (hu | 0x8000u);
    return x != x ? 0xffffu : key;
}

// ---------------------------------------------------------------------------
// Lane / warp helpers.
// ---------------------------------------------------------------------------
__device__ __forceinline__ u32 lane_id() { return threadIdx.x & 31u; }
__device__ __forceinline__ u32 warp_id() { return threadIdx.x >> 5; }

__device__ __forceinline__ u32 lanemask_lt() {
    u32 m;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
    return m;
}

__device__ __forceinline__ u32 warp_sum(u32 v) { return __reduce_add_sync(GVR_FULL_MASK, v); }
__device__ __forceinline__ u32 warp_max(u32 v) { return __reduce_max_sync(GVR_FULL_MASK, v); }
__device__ __forceinline__ u32 warp_min(u32 v) { return __reduce_min_sync(GVR_FULL_MASK, v); }

// Inclusive prefix sum across the warp (lane L gets sum of lanes 0..L).
__device__ __forceinline__ u32 warp_incl_scan(u32 v) {
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        u32 t = __shfl_up_sync(GVR_FULL_MASK, v, d);
        if ((int)lane_id() >= d) v += t;
    }
    return v;
}

// Warp-aggregated slot reservation on a counter: every lane with `pred`
// gets a unique slot (counter value before its own increment), others get
// 0xffffffff. One atomic per warp. Works for shared or global counters.
__device__ __forceinline__ u32 warp_reserve(bool pred, u32* counter) {
    u32 ballot = __ballot_sync(GVR_FULL_MASK, pred);
    if (ballot == 0u) return 0xffffffffu;
    u32 leader = __ffs(ballot) - 1;
    u32 base = 0;
    if (lane_id() == leader) base = atomicAdd(counter, (u32)__popc(ballot));
    base = __shfl_sync(GVR_FULL_MASK, base, leader);
    return pred ? base + (u32)__popc(ballot & lanemask_lt()) : 0xffffffffu;
}

// ---------------------------------------------------------------------------
// Block scans. `scratch` needs 32 u32 of shared memory; both helpers end with
// a barrier so `scratch` may be reused immediately after.
// ---------------------------------------------------------------------------
template <int BLK>
__device__ __forceinline__ u32 block_incl_scan(u32 v, u32* scratch, u32* total) {
    static_assert(BLK % 32 == 0 && BLK <= 1024, "block size");
    const int NW = BLK / 32;
    u32 incl = warp_incl_scan(v);
    if (lane_id() == 31u) scratch[warp_id()] = incl;
    __syncthreads();
    if (warp_id() == 0) {
        u32 w = (lane_id() < (u32)NW) ? scratch[lane_id()] : 0u;
        u32 ws = warp_incl_scan(w);
        if (lane_id() < (u32)NW) scratch[lane_id()] = ws;  // inclusive warp totals
    }
    __syncthreads();
    u32 warp_base = (warp_id() == 0) ? 0u : scratch[warp_id() - 1];
    *total = scratch[NW - 1];
    u32 result = warp_base + incl;
    __syncthreads();
    return result;
}

template <int BLK>
__device__ __forceinline__ u32 block_sum(u32 v, u32* scratch) {
    u32 total;
    (void)block_incl_scan<BLK>(v, scratch, &total);
    return total;
}

// ---------------------------------------------------------------------------
// Crossing bin over an ascending shared histogram.
// Given target t >= 1, finds bin B with after(B) < t <= after(B) + h[B],
// where after(B) = sum of h[j] for j > B. If the histogram total is < t the
// crossing is "fake": bin 0 is pinned (callers that need a real crossing
// guarantee total >= t by construction). Each thread owns SPAN contiguous
// bins. Result is broadcast through `res` (bin, above, count); ends with a
// barrier, so every thread may read `res` right after the call.
// ---------------------------------------------------------------------------
struct Crossing {
    u32 bin;
    u32 above;
    u32 count;
};

template <int NB, int BLK>
__device__ __forceinline__ void find_crossing(const u32* hist, u32 t, u32* scratch, Crossing* res) {
    const int SPAN = (NB + BLK - 1) / BLK;
    const int first = (int)threadIdx.x * SPAN;
    u32 mine = 0;
#pragma unroll
    for (int j = 0; j < SPAN; ++j) {
        int b = first + j;
        if (b < NB) mine += hist[b];
    }
    u32 total;
    u32 incl = block_incl_scan<BLK>(mine, scratch, &total);
    u32 above = total - incl;  // count in bins owned by higher threads
    // Exactly one thread satisfies this (above is non-increasing in thread
    // index); thread 0 also takes the fake crossing when total < t.
    bool owns = (above < t) && (above + mine >= t || threadIdx.x == 0);
    if (owns) {
        u32 run = above;
        u32 bin = (u32)first;
        u32 cnt = (first < NB) ? hist[first] : 0u;
        u32 run_at = above + mine - cnt;
        for (int j = SPAN - 1; j >= 0; --j) {
            int b = first + j;
            if (b >= NB) continue;
            u32 h = hist[b];
            if (run + h >= t) {
                bin = (u32)b;
                cnt = h;
                run_at = run;
                break;
            }
            run += h;
        }
        res->bin = bin;
        res->above = run_at;
        res->count = cnt;
    }
    __syncthreads();
}

// A global-memory pointer whose value the compiler cannot see through.
// `out + row * k` kept visible lets it fold the row offset into every later
// `O[slot]`, so each store recomputed a 64-bit address (IADD3, IMAD.X, LEA,
// LEA.HI.X and a constant reload); behind this, `O[slot]` is one
// IMAD.WIDE.U32. The assumption keeps the stores STG rather than generic.
template <class T>
__device__ __forceinline__ T* opaque_global_ptr(T* p) {
    asm("" : "+l"(p));
    __builtin_assume(__isGlobal(p));
    return p;
}

// ---------------------------------------------------------------------------
// Result-less shared / global reductions (RED instead of ATOM).
// ---------------------------------------------------------------------------
__device__ __forceinline__ u32 smem_addr(const void* p) {
    return (u32)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void red_shared_add(u32* p, u32 v) {
    asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(smem_addr(p)), "r"(v) : "memory");
}

__device__ __forceinline__ void red_global_add(u32* p, u32 v) {
    asm volatile("red.relaxed.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// ---------------------------------------------------------------------------
// Clocks of the phase probe (ss/common.cuh SS_PHASE_PROBE): the SM's cycle
// counter and the global nanosecond timer. The "memory" clobber makes each
// read a compiler barrier, so a mark stays between the loads and stores
// around it in the source.
// ---------------------------------------------------------------------------
__device__ __forceinline__ unsigned long long gvr_probe_clock() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
    return t;
}

__device__ __forceinline__ unsigned long long gvr_probe_gtimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
    return t;
}

// ---------------------------------------------------------------------------
// Global loads.
// ---------------------------------------------------------------------------
__device__ __forceinline__ float4 ldg_nc_f4(const float* p) {
    float4 v;
    asm volatile("ld.global.nc.v4.f32 {%0,%1,%2,%3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(p));
    return v;
}

__device__ __forceinline__ float ldg_nc_f(const float* p) {
    float v;
    asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(p));
    return v;
}

// Loads of a row issued before its length is known (speculative): the
// address is inside the row's stride, but the value may lie past n and is
// used only once the length says it is the row's. The same instruction as
// ldg_nc_f4 / ldg_nc_f; separate names so the host emulator can poison what
// lies past n (tests/ss_emu/common.cuh) instead of refusing the load.
__device__ __forceinline__ float4 ldg_nc_f4_ahead(const float* p) { return ldg_nc_f4(p); }
__device__ __forceinline__ float ldg_nc_f_ahead(const float* p) { return ldg_nc_f(p); }

__device__ __forceinline__ i32 ldg_nc_i32(const i32* p) {
    i32 v;
    asm volatile("ld.global.nc.s32 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
}

// L2-coherent load (bypasses L1): for data other CTAs wrote during this launch.
__device__ __forceinline__ u32 ld_cg_u32(const u32* p) {
    u32 v;
    asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ u32 ld_acquire_gpu(const u32* p) {
    u32 v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void red_release_gpu_add(u32* p, u32 v) {
    asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Masked float4 row load: float4 number `i4` of a row with `nvec` = ceil(n/4)
// float4s. Out-of-range vectors are redirected to float4 `nvec - 1` (inside
// the row, so the address is always legal) and every lane is then masked by
// its element index against n. Returns the valid-lane mask in bits 0..3.
__device__ __forceinline__ u32 load_row_f4(const float* row, u32 i4, u32 nvec, u32 n, float4* v) {
    u32 src = (i4 < nvec) ? i4 : (nvec - 1u);
    *v = ldg_nc_f4(row + (u64)src * 4u);
    u32 mask = 0;
    if (i4 < nvec) {
        u32 e = i4 * 4u;
#pragma unroll
        for (u32 c = 0; c < 4u; ++c)
            if (e + c < n) mask |= 1u << c;
    }
    return mask;
}

__device__ __forceinline__ float f4_get(const float4& v, u32 c) {
    return c == 0 ? v.x : (c == 1 ? v.y : (c == 2 ? v.z : v.w));
}

// ---------------------------------------------------------------------------
// Short-row contract (n <= k): identity indices then -1. Called by one CTA.
// ---------------------------------------------------------------------------
__device__ __forceinline__ void write_identity_row(i32* out_row, u32 n, u32 k) {
    for (u32 s = threadIdx.x; s < k; s += blockDim.x) out_row[s] = (s < n) ? (i32)s : -1;
}

// Clamp a row's declared valid length to [0, npad]: never read past the stride.
__device__ __forceinline__ u32 clamp_row_len(i32 declared, u32 npad) {
    if (declared <= 0) return 0u;
    return ((u32)declared < npad) ? (u32)declared : npad;
}

// ---------------------------------------------------------------------------
// Thread-block cluster helpers (sm_90), raw PTX so no cooperative_groups
// header is needed. DSMEM addresses are 32-bit shared::cluster addresses.
// ---------------------------------------------------------------------------
__device__ __forceinline__ u32 cluster_ctarank() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

__device__ __forceinline__ u32 cluster_nctarank() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
    return r;
}

// Map a local shared pointer to the same offset in CTA `rank` of the cluster.
__device__ __forceinline__ u32 cluster_map(const void* local, u32 rank) {
    u32 remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_addr(local)), "r"(rank));
    return remote;
}

__device__ __forceinline__ u32 dsmem_ld_u32(u32 addr) {
    u32 v;
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
    return v;
}

__device__ __forceinline__ uint4 dsmem_ld_v4(u32 addr) {
    uint4 v;
    asm volatile("ld.shared::cluster.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(addr)
                 : "memory");
    return v;
}

__device__ __forceinline__ void dsmem_st_u32(u32 addr, u32 v) {
    asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}

__device__ __forceinline__ void dsmem_st_u64(u32 addr, u64 v) {
    asm volatile("st.shared::cluster.u64 [%0], %1;" ::"r"(addr), "l"(v) : "memory");
}

__device__ __forceinline__ u32 dsmem_atomic_add(u32 addr, u32 v) {
    u32 old;
    asm volatile("atom.shared::cluster.add.u32 %0, [%1], %2;" : "=r"(old) : "r"(addr), "r"(v) : "memory");
    return old;
}

// Aligned cluster barrier: arrive has release semantics and wait acquire, so
// DSMEM writes before arrive are visible after wait. Never use the relaxed
// arrive here (it races DSMEM traffic).
__device__ __forceinline__ void cluster_arrive() {
    asm volatile("barrier.cluster.arrive.aligned;" ::: "memory");
}

__device__ __forceinline__ void cluster_wait() {
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
}

__device__ __forceinline__ void cluster_sync() {
    cluster_arrive();
    cluster_wait();
}

// ---------------------------------------------------------------------------
// Bulk copies global → shared memory (the TMA unit, sm_90) completing on an
// mbarrier: one thread issues a whole chunk, no registers hold the data in
// flight. A "full" barrier counts the issuing thread's expect_tx arrival and
// the copy's bytes; consumers wait on its phase parity.
// ---------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(u64* bar, u32 arrivals) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(arrivals) : "memory");
}

// Makes initialised barriers visible to the async (TMA) proxy; a block
// barrier must follow before any thread uses them.
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

__device__ __forceinline__ void mbar_arrive(u64* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}

// The issuing thread's arrival, announcing `bytes` of copies on this phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(u64* bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ bool mbar_try_wait(u64* bar, u32 parity) {
    u32 done;
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");
    return done != 0u;
}

__device__ __forceinline__ void mbar_wait(u64* bar, u32 parity) {
    while (!mbar_try_wait(bar, parity)) {
    }
}

// `bytes` (a multiple of 16; both addresses 16-byte aligned) from global
// `src` to shared `dst`, completing on `bar`.
__device__ __forceinline__ void bulk_copy_g2s(void* dst, const void* src, u32 bytes, u64* bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     smem_addr(dst)),
                 "l"(src), "r"(bytes), "r"(smem_addr(bar))
                 : "memory");
}
