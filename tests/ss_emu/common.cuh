// Host emulation of the CUDA subset kernels/ss/main.cu uses, standing in
// for kernels/prim/common.cuh when the kernel is compiled with g++ by
// tests/emu/ss_main.rs. One CTA runs at a time; each CUDA thread is a
// ucontext fiber on one OS thread, switched only at barriers and warp
// collectives (so atomics are trivially atomic). `__shared__` objects are
// function statics (one CTA at a time makes that per-CTA). Arithmetic is
// IEEE single precision as on the GPU (SSE, no FTZ, explicit fmaf).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <csetjmp>
#include <ucontext.h>
#include <utility>
#include <vector>

typedef unsigned int u32;
typedef int i32;
typedef unsigned long long u64;
typedef long long i64;
typedef unsigned short u16;

#define GVR_FULL_MASK 0xffffffffu
#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)

struct alignas(16) float4 {
    float x, y, z, w;
};
struct alignas(16) uint4 {
    u32 x, y, z, w;
};
struct dim3e {
    u32 x, y, z;
};
inline uint4 make_uint4(u32 a, u32 b, u32 c, u32 d) { return uint4{a, b, c, d}; }

// ---------------------------------------------------------------- fibers
namespace emu {
// A fiber starts once through its ucontext; every later switch is a
// _setjmp/_longjmp pair (no signal-mask system call, unlike swapcontext).
struct Fiber {
    ucontext_t ctx;
    jmp_buf jb;
    dim3e tid;
    bool started;
    bool done;
};
inline jmp_buf sched_jb;
inline std::vector<Fiber> fibers;
inline std::vector<char> stacks;
inline u32 current = 0;
inline u32 live = 0;
inline u32 block_dim = 0;
inline u64 block_gen = 0;
inline u32 block_arrived = 0;
inline u64 warp_gen[32];
inline u32 warp_arrived[32];
inline u32 warp_slots[32][32];
inline dim3e block_idx, grid_dim;

inline void yield() {
    if (_setjmp(fibers[current].jb) == 0) _longjmp(sched_jb, 1);
}

// The scheduler's half of a switch: run fiber i (start it, or continue it
// from its last yield) until it yields or exits back here.
inline void resume(u32 i) {
    current = i;
    if (_setjmp(sched_jb) == 0) {
        Fiber& f = fibers[i];
        if (!f.started) {
            f.started = true;
            setcontext(&f.ctx);
        }
        _longjmp(f.jb, 1);
    }
}

inline u64 events = 0;  // barrier arrivals and exits: no change in a full pass = deadlock

inline void block_barrier() {
    ++events;
    const u64 gen = block_gen;
    if (++block_arrived == live) {
        block_arrived = 0;
        ++block_gen;
        return;
    }
    while (block_gen == gen) yield();
}

inline void warp_barrier() {
    const u32 w = fibers[current].tid.x >> 5;
    const u64 gen = warp_gen[w];
    ++events;
    if (++warp_arrived[w] == 32u) {
        warp_arrived[w] = 0;
        ++warp_gen[w];
        return;
    }
    while (warp_gen[w] == gen) yield();
}

// Publish `v` for the warp, wait for all lanes, return every lane's value.
inline void warp_exchange(u32 v, u32 out[32]) {
    const u32 w = fibers[current].tid.x >> 5, lane = fibers[current].tid.x & 31u;
    warp_slots[w][lane] = v;
    warp_barrier();
    std::memcpy(out, warp_slots[w], sizeof(u32) * 32);
    warp_barrier();  // nobody overwrites the slots before every lane copied them
}
}  // namespace emu

#define threadIdx (emu::fibers[emu::current].tid)
#define blockIdx (emu::block_idx)
#define gridDim (emu::grid_dim)
#define blockDim (dim3e{emu::block_dim, 1u, 1u})

inline void __syncthreads() { emu::block_barrier(); }

// Phase-probe clocks (kernels/prim/common.cuh): one counter for both, advanced
// at every read, so the marks a thread passes are strictly increasing.
namespace emu {
inline unsigned long long probe_ticks = 0;
}
inline unsigned long long gvr_probe_clock() { return ++emu::probe_ticks; }
inline unsigned long long gvr_probe_gtimer() { return ++emu::probe_ticks; }
inline void __threadfence() {}
inline void __nanosleep(unsigned) {}  // a spin on gvr_probe_clock ends by its own ticks

// ---------------------------------------------------------------- intrinsics
inline float __int_as_float(int i) {
    float f;
    std::memcpy(&f, &i, 4);
    return f;
}
inline float __uint_as_float(u32 i) {
    float f;
    std::memcpy(&f, &i, 4);
    return f;
}
inline u32 __float_as_uint(float f) {
    u32 i;
    std::memcpy(&i, &f, 4);
    return i;
}
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return std::fmaf(a, b, c); }
inline double __dsqrt_rn(double x) { return std::sqrt(x); }
// cvt.rzi.u32.f32: truncate, saturate to [0, 2^32 - 1], NaN -> 0.
inline u32 __float2uint_rz(float x) {
    if (!(x > 0.f)) return 0u;
    if (x >= 4294967296.f) return 0xffffffffu;
    return (u32)x;
}
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((u32)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __popc(u32 x) { return __builtin_popcount(x); }

inline u32 atomicAdd(u32* p, u32 v) {
    u32 old = *p;
    *p = old + v;
    return old;
}
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
    unsigned long long old = *p;
    *p = old + v;
    return old;
}
inline u32 atomicMin(u32* p, u32 v) {
    u32 old = *p;
    if (v < old) *p = v;
    return old;
}
inline u32 atomicMax(u32* p, u32 v) {
    u32 old = *p;
    if (v > old) *p = v;
    return old;
}
inline u32 atomicExch(u32* p, u32 v) {
    u32 old = *p;
    *p = v;
    return old;
}

// Lanes are fibers that meet at every exchange: already reconverged.
inline void __syncwarp(u32 = GVR_FULL_MASK) {}
inline u32 __shfl_sync(u32, u32 v, int src) {
    u32 all[32];
    emu::warp_exchange(v, all);
    return all[src & 31];
}
inline u32 __shfl_up_sync(u32, u32 v, u32 d) {
    u32 all[32];
    emu::warp_exchange(v, all);
    const u32 lane = threadIdx.x & 31u;
    return lane >= d ? all[lane - d] : v;
}
inline u32 __ballot_sync(u32, bool pred) {
    u32 all[32];
    emu::warp_exchange(pred ? 1u : 0u, all);
    u32 b = 0;
    for (u32 l = 0; l < 32; ++l) b |= all[l] << l;
    return b;
}

// ---------------------------------------------------------------- common.cuh subset
inline u32 fkey(float x) {  // prim's: every NaN is the top key
    u32 u = __float_as_uint(x);
    u32 key = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return x != x ? 0xffffffffu : key;
}
inline float invkey(u32 k) {
    u32 u = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
    return __uint_as_float(u);
}
inline u32 lane_id() { return threadIdx.x & 31u; }
inline u32 warp_id() { return threadIdx.x >> 5; }
inline u32 lanemask_lt() { return (1u << lane_id()) - 1u; }
inline u32 warp_sum(u32 v) {
    u32 all[32], s = 0;
    emu::warp_exchange(v, all);
    for (u32 x : all) s += x;
    return s;
}
inline u32 warp_max(u32 v) {
    u32 all[32], m = 0;
    emu::warp_exchange(v, all);
    for (u32 x : all) m = x > m ? x : m;
    return m;
}
inline u32 warp_min(u32 v) {
    u32 all[32], m = 0xffffffffu;
    emu::warp_exchange(v, all);
    for (u32 x : all) m = x < m ? x : m;
    return m;
}
inline u32 warp_incl_scan(u32 v) {
    for (int d = 1; d < 32; d <<= 1) {
        u32 t = __shfl_up_sync(GVR_FULL_MASK, v, d);
        if ((int)lane_id() >= d) v += t;
    }
    return v;
}
inline u32 warp_reserve(bool pred, u32* counter) {
    u32 ballot = __ballot_sync(GVR_FULL_MASK, pred);
    if (ballot == 0u) return 0xffffffffu;
    u32 leader = __ffs(ballot) - 1;
    u32 base = 0;
    if (lane_id() == leader) base = atomicAdd(counter, (u32)__popc(ballot));
    base = __shfl_sync(GVR_FULL_MASK, base, leader);
    return pred ? base + (u32)__popc(ballot & lanemask_lt()) : 0xffffffffu;
}
inline void red_shared_add(u32* p, u32 v) { *p += v; }
template <class T>
inline T* opaque_global_ptr(T* p) { return p; }  // a compiler barrier on the GPU only

// Loads are bounds-checked against the registered buffers: a read outside
// them (or at a position >= n of its row, see emu::row_guard) aborts.
namespace emu {
inline const float* logits_base = nullptr;
inline u64 logits_len = 0;
inline u32 guard_npad = 0;
inline const i32* guard_n = nullptr;
inline bool strict_rows = true;  // vector loads may touch the padded row's last float4
inline void check_load(const float* p, bool vector) {
    const i64 off = p - logits_base;
    if (off < 0 || (u64)off + (vector ? 4u : 1u) > logits_len) {
        std::fprintf(stderr, "EMU: load outside logits at offset %lld\n", (long long)off);
        std::abort();
    }
    const u64 row = (u64)off / guard_npad, col = (u64)off % guard_npad;
    const u64 n = guard_n[row] < 0 ? 0 : (u64)guard_n[row];
    if (!vector && col >= n) {
        std::fprintf(stderr, "EMU: scalar load past n (row %llu col %llu n %llu)\n", (unsigned long long)row,
                     (unsigned long long)col, (unsigned long long)n);
        std::abort();
    }
    // Vector loads: either inside the valid prefix's float4s or the redirect
    // target (last float4 of the padded row); their lanes are masked by index.
    if (vector && col + 4 > (n >> 2) * 4 && col != guard_npad - 4) {
        std::fprintf(stderr, "EMU: vector load past the row (row %llu col %llu n %llu)\n",
                     (unsigned long long)row, (unsigned long long)col, (unsigned long long)n);
        std::abort();
    }
}
}  // namespace emu

inline float4 ldg_nc_f4(const float* p) {
    emu::check_load(p, true);
    float4 v;
    std::memcpy(&v, p, 16);
    return v;
}
inline float ldg_nc_f(const float* p) {
    emu::check_load(p, false);
    return *p;
}
// Loads issued before the row length is known: inside the buffer, but
// anything past its row's n reads as +3e38 (a value that wins every
// selection), so a kernel that used such a load without checking the length
// emits an index >= n and fails the exactness check.
namespace emu {
inline float ahead_value(const float* p, u32 lane) {
    const i64 off = p - logits_base;
    if (off < 0 || (u64)off + lane + 1u > logits_len) {
        std::fprintf(stderr, "EMU: load-ahead outside logits at offset %lld\n", (long long)(off + lane));
        std::abort();
    }
    const u64 row = ((u64)off + lane) / guard_npad, col = ((u64)off + lane) % guard_npad;
    const u64 n = guard_n[row] < 0 ? 0 : (u64)guard_n[row];
    return col < n ? p[lane] : 3e38f;
}
}  // namespace emu
inline float4 ldg_nc_f4_ahead(const float* p) {
    return float4{emu::ahead_value(p, 0), emu::ahead_value(p, 1), emu::ahead_value(p, 2), emu::ahead_value(p, 3)};
}
inline float ldg_nc_f_ahead(const float* p) { return emu::ahead_value(p, 0); }
inline i32 ldg_nc_i32(const i32* p) { return *p; }  // hint rows: not bounds-registered
inline u64 ld_cg_u64(const u64* p) { return *p; }
inline u64 ld_relaxed_gpu_u64(const u64* p) { return *(const volatile u64*)p; }
inline void st_relaxed_gpu_u64(u64* p, u64 v) { *p = v; }
// One CTA runs at a time, so every other part of the row has finished before
// the finisher waits: a word still zero is one no part will ever write, and
// on the GPU the wait would never end. With EMU_CONCURRENT_PARTS the waiting
// fiber yields until a part writes the word (a deadlock if none ever does).
inline u64 ss_slab_wait(const u64* w) {
    while (*(const volatile u64*)w == 0ull) {
#ifdef EMU_CONCURRENT_PARTS
        emu::yield();
#else
        std::fprintf(stderr, "EMU: waiting on a slab word no part wrote (the GPU would hang)\n");
        std::abort();
#endif
    }
    return *w;
}

// Path trace (see SS_TRACE in kernels/ss/main.cu): OR of the bits each row reported.
namespace emu {
inline std::vector<u32> trace;
}
inline void ss_emu_trace(u32 row, u32 bit) { emu::trace.at(row) |= bit; }

inline void write_identity_row(i32* out_row, u32 n, u32 k) {
    for (u32 s = threadIdx.x; s < k; s += blockDim.x) out_row[s] = (s < n) ? (i32)s : -1;
}
inline u32 clamp_row_len(i32 declared, u32 npad) {
    if (declared <= 0) return 0u;
    return ((u32)declared < npad) ? (u32)declared : npad;
}

// ---------------------------------------------------------------- kernels/baselines/radix.cu subset
// (tests/emu/radix.rs). The block scans and find_crossing come from the real
// prim/common.cuh: the test pastes them into the driver.

// cvt.rn.f16.f32 (round to nearest even; overflow to inf, subnormals kept).
inline u16 emu_f16_rn(float f) {
    const u32 x = __float_as_uint(f);
    const u32 sign = (x >> 16) & 0x8000u;
    const u32 exp = (x >> 23) & 0xffu;
    u32 man = x & 0x7fffffu;
    if (exp == 0xffu) return (u16)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0u));
    const int e = (int)exp - 127 + 15;
    if (e >= 31) return (u16)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -11) return (u16)sign;
        man |= 0x800000u;
        const u32 shift = (u32)(14 - e);
        u32 h = man >> shift;
        const u32 rem = man & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
        return (u16)(sign | h);
    }
    u32 h = ((u32)e << 10) | (man >> 13);
    const u32 rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry rounds into the exponent (or inf)
    return (u16)(sign | h);
}
inline u32 half_key(float x) {  // prim's: every NaN is the top key
    const u32 hu = emu_f16_rn(x);
    const u32 key = (hu & 0x8000u) ? (~hu & 0xffffu) : (hu | 0x8000u);
    return x != x ? 0xffffu : key;
}
inline u32 min(u32 a, u32 b) { return a < b ? a : b; }
inline float f4_get(const float4& v, u32 c) { return c == 0 ? v.x : (c == 1 ? v.y : (c == 2 ? v.z : v.w)); }
// prim's masked float4 row load: the vector at min(i4, nvec - 1), lanes
// masked by index. Lanes past the row's n read as +3e38 (emu::ahead_value),
// so a kernel that used a lane the mask excludes would select poison.
inline u32 load_row_f4(const float* row, u32 i4, u32 nvec, u32 n, float4* v) {
    const u32 src = (i4 < nvec) ? i4 : (nvec - 1u);
    *v = ldg_nc_f4_ahead(row + (u64)src * 4u);
    u32 mask = 0;
    if (i4 < nvec) {
        for (u32 c = 0; c < 4u; ++c)
            if (i4 * 4u + c < n) mask |= 1u << c;
    }
    return mask;
}
template <class T>
inline T __ldcg(const T* p) { return *p; }
inline u32 ld_cg_u32(const u32* p) { return *p; }
inline void red_global_add(u32* p, u32 v) { *p += v; }
