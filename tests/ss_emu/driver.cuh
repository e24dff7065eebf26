// The host side the emulator drivers share (main.cpp, reg_main.cpp,
// clus_main.cpp, clus_stream_main.cpp): the launch's arrays from the input
// file, the per-row load guard, the result file, and the single-CTA fiber
// scheduler (cluster.cuh schedules whole clusters). Include it after the
// kernel source: the load guard uses the kernel's own ss_row_len.
#pragma once

#include "prim/common.cuh"

#include <climits>

namespace emu {
// f32 logits [rows*npad], i32 n [rows], i32 hints [rows*k], in that order.
struct LaunchArrays {
    std::vector<float> logits;
    std::vector<i32> n;
    std::vector<i32> hints;
};

// Checks the command line (`<input> <output>`), opens the input and reads
// its header of `words` u32, the first of which must be `magic`; nullptr
// (the driver exits 2) otherwise.
inline FILE* open_input(int argc, char** argv, u32 magic, u32* header, size_t words) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s <input> <output>\n", argv[0]);
        return nullptr;
    }
    FILE* in = std::fopen(argv[1], "rb");
    if (!in) return nullptr;
    if (std::fread(header, 4, words, in) != words || header[0] != magic) {
        std::fclose(in);
        return nullptr;
    }
    return in;
}

// Reads the arrays that follow a driver's header; false on a short file.
inline bool read_arrays(FILE* in, u32 rows, u32 npad, u32 k, LaunchArrays& a) {
    a.logits.resize((size_t)rows * npad);
    a.n.resize(rows);
    a.hints.resize((size_t)rows * k);
    return std::fread(a.logits.data(), 4, a.logits.size(), in) == a.logits.size() &&
           std::fread(a.n.data(), 4, a.n.size(), in) == a.n.size() &&
           std::fread(a.hints.data(), 4, a.hints.size(), in) == a.hints.size();
}

// The load guard needs each row's valid length: the n array itself, or under
// a varlen launch (next_n >= 1: n holds kv_lens) the kernel's row-length
// formula. `row_len` must outlive the emulated launch.
inline void guard_loads(const LaunchArrays& a, u32 npad, u32 next_n, u32 cr_shift, std::vector<i32>& row_len) {
    const u32 rows = (u32)a.n.size();
    row_len.resize(rows);
    for (u32 r = 0; r < rows; ++r) row_len[r] = (i32)ss_row_len(a.n.data(), r, next_n, cr_shift, npad);
    logits_base = a.logits.data();
    logits_len = a.logits.size();
    guard_npad = npad;
    guard_n = row_len.data();
}

// i32 out [rows*k], then the u32 path-trace word of every row.
inline int write_result(const char* path, const std::vector<i32>& out) {
    FILE* o = std::fopen(path, "wb");
    if (!o) return 2;
    std::fwrite(out.data(), 4, out.size(), o);
    std::fwrite(trace.data(), 4, trace.size(), o);
#if defined(SS_PHASE_PROBE) && SS_PHASE_PROBE
    // A probe build appends its stamp array (kernels/ss/common.cuh) after the trace.
    std::fwrite(gvr_phase_stamps, 8, SS_PROBE_CTAS * SS_PROBE_SLOTS, o);
#endif
    std::fclose(o);
    return 0;
}

inline const size_t CTA_STACK_BYTES = 64 * 1024;
inline void (*cta_body)() = nullptr;  // runs the kernel for the current thread

inline void cta_fiber_entry() {
    cta_body();
    fibers[current].done = true;
    --live;
    ++events;
    // An exiting thread no longer counts for block barriers.
    if (block_arrived > 0 && block_arrived == live) {
        block_arrived = 0;
        ++block_gen;
    }
    _longjmp(sched_jb, 1);  // never return: the fiber's stack is simply abandoned
}

// Runs CTA (bx, by) of `block` threads to completion, each thread a fiber
// calling `body`; exits with status 4 on a deadlock.
inline void run_cta(u32 bx, u32 by, u32 block, void (*body)()) {
    cta_body = body;
    block_idx = dim3e{bx, by, 0};
    block_dim = block;
    stacks.resize((size_t)block * CTA_STACK_BYTES);
    fibers.assign(block, Fiber{});
    live = block;
    block_arrived = 0;
    for (u32 w = 0; w < 32; ++w) warp_arrived[w] = 0;
    for (u32 i = 0; i < block; ++i) {
        Fiber& f = fibers[i];
        f.tid = dim3e{i, 0, 0};
        f.done = false;
        f.started = false;
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = stacks.data() + (size_t)i * CTA_STACK_BYTES;
        f.ctx.uc_stack.ss_size = CTA_STACK_BYTES;
        f.ctx.uc_link = nullptr;
        makecontext(&f.ctx, cta_fiber_entry, 0);
    }
    u64 pass = 0;
    while (live > 0) {
        const u64 before = events;
        bool ran_fresh = false;
        // Alternate the resume order so shared atomics (slot reservations,
        // cursors) hand out slots in different orders from pass to pass.
        const bool reverse = (pass++ & 1u) != 0;
        for (u32 j = 0; j < block; ++j) {
            const u32 i = reverse ? block - 1u - j : j;
            if (fibers[i].done) continue;
            resume(i);
            ran_fresh = true;
        }
        if (ran_fresh && events == before) {
            std::fprintf(stderr, "EMU: deadlock in CTA (%u, %u): %u threads wait forever\n", bx, by, live);
            std::exit(4);
        }
    }
}
}  // namespace emu
