// Host emulator driver for kernels/ss_reg.cu (see common.cuh here and
// tests/ss_reg_emu.rs). Usage: reg_emu <input> <output>.
// Input (little-endian): 8 u32 header {magic 0x55EE0002, entry id, rows,
// block, dyn smem bytes, npad, k, emulated rows}, 7 u32 SsRegParams (next_n = 0),
// f32 logits [rows*npad], i32 n [rows], i32 hints [rows*k].
// Output: i32 [rows*k] (rows not emulated keep INT_MIN), then u32 [rows]
// path-trace bits (SS_RTR_* in ss_reg.cu). Exit 0 on success; non-zero with
// a message on stderr for a deadlock or a bad load.
#include "ss_reg.cu"

#include <algorithm>
#include <climits>

typedef void (*Entry)(const float*, const i32*, const i32*, i32*, const SsRegParams);

template <int BLK, int VPT, int NBH, bool IMG>
void small_entry(SS_REG_ARGS) {
    ss_reg_body<BLK, VPT, NBH, IMG>(SS_REG_PASS);
}

// Ids 0..6 follow arms::ss_reg::REG_ENTRIES; 16.. are small CTAs for stress
// (NBH >= 256: the narrowing reuses the histogram's first 256 bins).
static Entry entry_by_id(u32 id, u32* block) {
    switch (id) {
        case 0: *block = 256; return ss_reg_b256_v1;
        case 1: *block = 512; return ss_reg_b512_v1;
        case 2: *block = 1024; return ss_reg_b1024_v1;
        case 3: *block = 512; return ss_reg_b512_v2;
        case 4: *block = 1024; return ss_reg_b1024_v4;
        case 5: *block = 512; return ss_reg_b512_v4;
        case 6: *block = 1024; return ss_regimg_b1024_v1;
        case 16: *block = 64; return small_entry<64, 1, 256, false>;
        case 17: *block = 64; return small_entry<64, 4, 256, true>;
        case 18: *block = 128; return small_entry<128, 2, 512, false>;
        default: return nullptr;
    }
}

static const size_t STACK_BYTES = 64 * 1024;

struct Launch {
    Entry entry;
    const float* logits;
    const i32* n;
    const i32* hints;
    i32* out;
    SsRegParams p;
};
static Launch g_launch;

static void fiber_entry() {
    g_launch.entry(g_launch.logits, g_launch.n, g_launch.hints, g_launch.out, g_launch.p);
    emu::fibers[emu::current].done = true;
    --emu::live;
    ++emu::events;
    // An exiting thread no longer counts for block barriers.
    if (emu::block_arrived > 0 && emu::block_arrived == emu::live) {
        emu::block_arrived = 0;
        ++emu::block_gen;
    }
    _longjmp(emu::sched_jb, 1);  // never return: the fiber's stack is simply abandoned
}

static void run_cta(u32 by, u32 block) {
    emu::block_idx = dim3e{0, by, 0};
    emu::block_dim = block;
    emu::fibers.assign(block, emu::Fiber{});
    emu::live = block;
    emu::block_arrived = 0;
    for (u32 w = 0; w < 32; ++w) emu::warp_arrived[w] = 0;
    for (u32 i = 0; i < block; ++i) {
        emu::Fiber& f = emu::fibers[i];
        f.tid = dim3e{i, 0, 0};
        f.done = false;
        f.started = false;
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = emu::stacks.data() + (size_t)i * STACK_BYTES;
        f.ctx.uc_stack.ss_size = STACK_BYTES;
        f.ctx.uc_link = nullptr;
        makecontext(&f.ctx, fiber_entry, 0);
    }
    u64 pass = 0;
    while (emu::live > 0) {
        const u64 before = emu::events;
        bool ran_fresh = false;
        // Alternate the resume order so shared atomics (cursors, slot
        // reservations) hand out slots in different orders from pass to pass.
        const bool reverse = (pass++ & 1u) != 0;
        for (u32 j = 0; j < block; ++j) {
            const u32 i = reverse ? block - 1u - j : j;
            if (emu::fibers[i].done) continue;
            emu::current = i;
            if (_setjmp(emu::sched_jb) == 0) {
                emu::Fiber& f = emu::fibers[i];
                if (!f.started) {
                    f.started = true;
                    setcontext(&f.ctx);
                }
                _longjmp(f.jb, 1);
            }
            ran_fresh = true;
        }
        if (ran_fresh && emu::events == before) {
            std::fprintf(stderr, "EMU: deadlock in CTA (0, %u): %u threads wait forever\n", by, emu::live);
            std::exit(4);
        }
    }
}

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: reg_emu <input> <output>\n");
        return 2;
    }
    FILE* in = std::fopen(argv[1], "rb");
    if (!in) return 2;
    u32 h[8];
    if (std::fread(h, 4, 8, in) != 8 || h[0] != 0x55EE0002u) return 2;
    const u32 id = h[1], rows = h[2], block = h[3], smem = h[4], npad = h[5], k = h[6];
    const u32 emu_rows = std::min(h[7], rows);
    SsRegParams p;
    if (std::fread(&p, sizeof p, 1, in) != 1) return 2;
    std::vector<float> logits((size_t)rows * npad);
    std::vector<i32> n(rows), hints((size_t)rows * k);
    if (std::fread(logits.data(), 4, logits.size(), in) != logits.size()) return 2;
    if (std::fread(n.data(), 4, n.size(), in) != n.size()) return 2;
    if (std::fread(hints.data(), 4, hints.size(), in) != hints.size()) return 2;
    std::fclose(in);
    u32 entry_block = 0;
    Entry entry = entry_by_id(id, &entry_block);
    if (!entry || block != entry_block) {
        std::fprintf(stderr, "EMU: bad launch (entry %u, block %u)\n", id, block);
        return 2;
    }
    std::vector<i32> out((size_t)rows * k, INT_MIN);
    std::vector<u32> dyn((smem + 3) / 4 + 4);
    ss_reg_dyn = dyn.data();
    emu::stacks.assign((size_t)block * STACK_BYTES, 0);
    emu::logits_base = logits.data();
    emu::logits_len = logits.size();
    // Per-row valid lengths for the load guard (under a varlen launch the n
    // array holds kv_lens: use the kernel's own row-length formula).
    std::vector<i32> row_len(rows);
    for (u32 r = 0; r < rows; ++r) row_len[r] = (i32)ss_row_len(n.data(), r, p.next_n, p.cr_shift, npad);
    emu::guard_npad = npad;
    emu::guard_n = row_len.data();
    g_launch = Launch{entry, logits.data(), n.data(), hints.data(), out.data(), p};
    emu::grid_dim = dim3e{1u, rows, 1u};
    emu::trace.assign(rows, 0u);
    for (u32 y = 0; y < emu_rows; ++y) {
        std::memset(dyn.data(), 0xAB, dyn.size() * 4);  // stale shared memory
        run_cta(y, block);
    }
    FILE* o = std::fopen(argv[2], "wb");
    if (!o) return 2;
    std::fwrite(out.data(), 4, out.size(), o);
    std::fwrite(emu::trace.data(), 4, emu::trace.size(), o);
    std::fclose(o);
    return 0;
}
