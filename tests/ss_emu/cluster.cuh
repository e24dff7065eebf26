// Thread-block cluster extension of the fiber emulator (common.cuh here).
//
// All CS CTAs of one cluster run together: every CUDA thread of every CTA is
// a fiber (fiber f = CTA f / block, thread f % block), so a CTA can wait at a
// cluster barrier while its peers run. common.cuh keeps its single-CTA state
// (block barrier generation, live count, warp exchange slots, blockIdx) in
// globals; this file keeps one copy of that state per CTA and swaps it in
// whenever the scheduler resumes a fiber of another CTA, so common.cuh's
// __syncthreads and warp collectives work unchanged and stay per-CTA.
//
// Provides what a cluster kernel uses: cluster_ctarank / cluster_nctarank,
// cluster_sync (an aligned barrier over every live thread of the cluster),
// cluster_map_ptr (DSMEM: the same offset in a peer CTA's dynamic shared
// memory, bounds-checked, and never into a CTA that has exited), emu_cluster_smem() (this CTA's dynamic shared
// memory; kernels use it instead of `extern __shared__`), and
// emu::cl::run_cluster(), the scheduler. Deadlock (a full pass with no
// barrier progress) exits with status 4. main.cpp's EMU_CONCURRENT_PARTS build
// runs the R parts of a SPLIT row with the same scheduler (no cluster there:
// only the interleaving of CTAs that share a row's workspace).
#pragma once

#include "prim/common.cuh"

#include <algorithm>
#include <random>

namespace emu {
namespace cl {
struct CtaState {
    u64 block_gen;
    u32 block_arrived;
    u32 live;
    u64 warp_gen[32];
    u32 warp_arrived[32];
    u32 warp_slots[32][32];
    dim3e block_idx;
};
inline std::vector<CtaState> ctas;
inline std::vector<unsigned char*> smem;  // per-CTA dynamic shared memory
inline size_t smem_bytes = 0;
inline u32 cs = 1;            // CTAs in the cluster
inline u32 block = 0;         // threads per CTA
inline u32 cur_cta = 0;       // whose state is in common.cuh's globals
inline u64 cluster_gen = 0;
inline u32 cluster_arrived = 0;
inline u32 cluster_live = 0;  // live threads of the whole cluster
inline char* stacks = nullptr;  // malloc'd, so untouched stack pages are never committed
inline size_t stacks_bytes = 0;
#ifndef EMU_CLUSTER_STACK_BYTES
#define EMU_CLUSTER_STACK_BYTES (48 * 1024)
#endif
inline const size_t STACK_BYTES = EMU_CLUSTER_STACK_BYTES;
#ifndef EMU_CLUSTER_SMEM_BYTES
#define EMU_CLUSTER_SMEM_BYTES (256 * 1024)  // each CTA's shared memory (smem_bytes at most)
#endif
inline void (*body)() = nullptr;

inline void save(u32 c) {
    CtaState& s = ctas[c];
    s.block_gen = block_gen;
    s.block_arrived = block_arrived;
    s.live = live;
    std::memcpy(s.warp_gen, warp_gen, sizeof warp_gen);
    std::memcpy(s.warp_arrived, warp_arrived, sizeof warp_arrived);
    std::memcpy(s.warp_slots, warp_slots, sizeof warp_slots);
    s.block_idx = block_idx;
}
inline void load(u32 c) {
    const CtaState& s = ctas[c];
    block_gen = s.block_gen;
    block_arrived = s.block_arrived;
    live = s.live;
    std::memcpy(warp_gen, s.warp_gen, sizeof warp_gen);
    std::memcpy(warp_arrived, s.warp_arrived, sizeof warp_arrived);
    std::memcpy(warp_slots, s.warp_slots, sizeof warp_slots);
    block_idx = s.block_idx;
}
inline void switch_to(u32 c) {
    if (c == cur_cta) return;
    save(cur_cta);
    load(c);
    cur_cta = c;
}
inline u32 cta_of_current() { return current / block; }

inline void cluster_barrier() {
    ++events;
    const u64 gen = cluster_gen;
    if (++cluster_arrived == cluster_live) {
        cluster_arrived = 0;
        ++cluster_gen;
        return;
    }
    while (cluster_gen == gen) yield();
}

inline void fiber_entry() {
    body();
    fibers[current].done = true;
    --live;  // this CTA's state is loaded: the fiber belongs to cur_cta
    --cluster_live;
    ++events;
    if (block_arrived > 0 && block_arrived == live) {  // exited threads leave block barriers
        block_arrived = 0;
        ++block_gen;
    }
    if (cluster_arrived > 0 && cluster_arrived == cluster_live) {
        cluster_arrived = 0;
        ++cluster_gen;
    }
    _longjmp(sched_jb, 1);
}

// Run one cluster: CTAs (x0 .. x0+cs-1, y) with `nblock` threads each, or
// with `ranks_along_y` CTAs (x0, y .. y+cs-1) (a __cluster_dims__(1, cs, 1)
// kernel). `run` is the kernel call; `rng` shuffles the resume order every pass.
inline void run_cluster(u32 x0, u32 y, u32 ncs, u32 nblock, void (*run)(), std::mt19937& rng, unsigned char fill,
                        bool ranks_along_y = false) {
    cs = ncs;
    block = nblock;
    body = run;
    block_dim = nblock;
    const size_t total = (size_t)ncs * nblock;
    if (stacks_bytes < total * STACK_BYTES) {
        std::free(stacks);
        stacks_bytes = total * STACK_BYTES;
        stacks = (char*)std::malloc(stacks_bytes);
        if (!stacks) {
            std::fprintf(stderr, "EMU: no memory for %zu fiber stacks\n", total);
            std::exit(3);
        }
    }
    fibers.assign(total, Fiber{});
    ctas.assign(ncs, CtaState{});
    while (smem.size() < ncs) smem.push_back((unsigned char*)std::aligned_alloc(64, EMU_CLUSTER_SMEM_BYTES));
    for (u32 c = 0; c < ncs; ++c) {
        std::memset(smem[c], fill, smem_bytes);  // stale shared memory
        ctas[c].live = nblock;
        ctas[c].block_idx = ranks_along_y ? dim3e{x0, y + c, 0} : dim3e{x0 + c, y, 0};
    }
    cur_cta = 0;
    load(0);
    cluster_gen = 0;
    cluster_arrived = 0;
    cluster_live = (u32)total;
    for (size_t i = 0; i < total; ++i) {
        Fiber& f = fibers[i];
        f.tid = dim3e{(u32)(i % nblock), 0, 0};
        f.done = false;
        f.started = false;
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = stacks + i * STACK_BYTES;
        f.ctx.uc_stack.ss_size = STACK_BYTES;
        f.ctx.uc_link = nullptr;
        makecontext(&f.ctx, fiber_entry, 0);
    }
    std::vector<u32> order(ncs);
    for (u32 c = 0; c < ncs; ++c) order[c] = c;
    u64 pass = 0;
    while (cluster_live > 0) {
        const u64 before = events;
        bool ran = false;
        std::shuffle(order.begin(), order.end(), rng);
        const bool reverse = (pass++ & 1u) != 0;
        for (u32 c : order) {
            switch_to(c);
            for (u32 j = 0; j < nblock; ++j) {
                const u32 t = reverse ? nblock - 1u - j : j;
                const u32 i = c * nblock + t;
                if (fibers[i].done) continue;
                resume(i);
                ran = true;
            }
        }
        if (ran && events == before) {
            std::fprintf(stderr, "EMU: deadlock in the CTAs run together (%u.., %u): %u threads wait forever\n", x0, y,
                         cluster_live);
            std::exit(4);
        }
    }
}
}  // namespace cl
}  // namespace emu

inline u32 cluster_ctarank() { return emu::cl::cta_of_current(); }
inline u32 cluster_nctarank() { return emu::cl::cs; }
inline void cluster_sync() { emu::cl::cluster_barrier(); }
inline u32* emu_cluster_smem() { return (u32*)emu::cl::smem[emu::cl::cta_of_current()]; }

// DSMEM: the same byte offset in CTA `rank`'s dynamic shared memory. Aborts
// on a pointer outside this CTA's dynamic shared memory or a bad rank.
template <class T>
inline T* cluster_map_ptr(T* local, u32 rank) {
    const unsigned char* base = emu::cl::smem[emu::cl::cta_of_current()];
    const i64 off = (const unsigned char*)local - base;
    if (rank >= emu::cl::cs || off < 0 || (size_t)off + sizeof(T) > emu::cl::smem_bytes) {
        std::fprintf(stderr, "EMU: bad DSMEM map (rank %u of %u, offset %lld)\n", rank, emu::cl::cs, (long long)off);
        std::abort();
    }
    // A peer whose threads have all exited no longer owns its shared memory.
    const u32 peer_live = rank == emu::cl::cur_cta ? emu::live : emu::cl::ctas[rank].live;
    if (peer_live == 0u) {
        std::fprintf(stderr, "EMU: DSMEM access to CTA %u of the cluster after it exited\n", rank);
        std::abort();
    }
    return (T*)(emu::cl::smem[rank] + off);
}
