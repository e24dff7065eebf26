// Host emulator driver for kernels/ss/main.cu (see common.cuh here and
// tests/emu/ss_main.rs). Usage: emu <input> <output>.
// Input (little-endian): 10 u32 header {magic 0x55EE0001, entry id, grid x,
// grid y, block, dyn smem bytes, rows, npad, k, emulated rows}, 20 u32
// SsMainParams (next_n = 0: the n array holds per-row lengths; >= 1: its
// first rows/next_n entries are kv_lens and hints are request-level), f32 logits [rows*npad], i32 n [rows], i32 hints [rows*k].
// Output: i32 [rows*k] (rows not emulated keep INT_MIN), then u32 [rows]
// path-trace bits (SS_TR_* in kernels/ss/main.cu). Exit 0 on success;
// non-zero with a message on stderr for a deadlock, a bad load or a
// workspace left non-zero.
//
// Built with EMU_CONCURRENT_PARTS, the R parts of a SPLIT row run together
// (cluster.cuh's scheduler: a fiber per thread of every part, CTA order
// shuffled every pass), so a part can arrive, or the finisher wait, while the
// others are still between barriers; the hand-off's spins yield
// (common.cuh). The test build then moves the kernel's two shared-memory
// declarations into each CTA's own region: [SsShared | dynamic].
#ifdef EMU_CONCURRENT_PARTS
#define EMU_CLUSTER_STACK_BYTES (64 * 1024)
#define EMU_CLUSTER_SMEM_BYTES (320 * 1024)
#include "cluster.cuh"
static const size_t EMU_STATIC_SMEM = 4096;
template <class T>
inline T* emu_cta_static() {
    static_assert(sizeof(T) <= EMU_STATIC_SMEM, "SsShared outgrew the emulator's static region");
    return (T*)emu_cluster_smem();
}
inline u64* emu_cta_dyn() { return (u64*)((unsigned char*)emu_cluster_smem() + EMU_STATIC_SMEM); }
#endif
#include "ss_main.cu"

#include "driver.cuh"

#include <algorithm>
#include <random>

typedef void (*Entry)(const float*, const i32*, const i32*, i32*, const SsMainParams, unsigned char*);

template <int BLK, int U, bool SPLIT>
void small_entry(SS_MAIN_ARGS) {
    ss_main_body<BLK, U, SPLIT>(SS_MAIN_PASS);
}

// Ids 0..9 follow arms::ss::ENTRY_SHAPES; 10.. are small CTAs for stress.
static Entry entry_by_id(u32 id) {
    switch (id) {
        case 0: return ss_main_b1024_u1;
        case 1: return ss_main_b1024_u2;
        case 2: return ss_main_b1024_u4;
        case 3: return ss_main_b1024_u8;
        case 4: return ss_main_b512_u8;
        case 5: return ss_main_b256_u8;
        case 6: return ss_main_split_u1;
        case 7: return ss_main_split_u2;
        case 8: return ss_main_split_u4;
        case 9: return ss_main_split_u8;
        case 10: return small_entry<64, 2, false>;
        case 11: return small_entry<64, 2, true>;
        case 12: return small_entry<128, 1, true>;
        // U = 8 at BLK 64: many tiles per row, so the pipelined pass's
        // L2-prefetch-only (non-split, PFD 0) and whole-next-tile (SPLIT,
        // PFD 8) schedules cross tile boundaries and the partial last tile.
        case 13: return small_entry<64, 8, false>;
        case 14: return small_entry<64, 8, true>;
        default: return nullptr;
    }
}

struct Launch {
    Entry entry;
    const float* logits;
    const i32* n;
    const i32* hints;
    i32* out;
    SsMainParams p;
    unsigned char* workspace;
};
static Launch g_launch;

static void run_kernel() {
    g_launch.entry(g_launch.logits, g_launch.n, g_launch.hints, g_launch.out, g_launch.p, g_launch.workspace);
}

// The 0xAB guard words [used, total) of a CTA's dynamic shared memory are
// untouched: nothing was written past the launch's `smem` bytes.
static bool guard_intact(const u64* dyn, size_t used, size_t total, u32 smem, u32 row) {
    for (size_t i = used; i < total; ++i) {
        if (dyn[i] != 0xABABABABABABABABull) {
            std::fprintf(stderr, "EMU: shared memory written %zu B past the launch's %u B (row %u)\n",
                         (i - used) * 8, smem, row);
            return false;
        }
    }
    return true;
}

int main(int argc, char** argv) {
    u32 h[10];
    FILE* in = emu::open_input(argc, argv, 0x55EE0001u, h, 10);
    if (!in) return 2;
    const u32 id = h[1], gx = h[2], gy = h[3], block = h[4], smem = h[5], rows = h[6], npad = h[7], k = h[8];
    const u32 emu_rows = std::min(h[9], rows);
    SsMainParams p;
    if (std::fread(&p, sizeof p, 1, in) != 1) return 2;
    emu::LaunchArrays a;
    if (!emu::read_arrays(in, rows, npad, k, a)) return 2;
    std::fclose(in);
    Entry entry = entry_by_id(id);
    if (!entry || gy != rows || block > 1024 || block % 32 != 0) {
        std::fprintf(stderr, "EMU: bad launch (entry %u, grid y %u, rows %u, block %u)\n", id, gy, rows, block);
        return 2;
    }
    std::vector<i32> out((size_t)rows * k, INT_MIN);
    std::vector<unsigned char> workspace(2048 + (size_t)160 * 16384 * 8, 0);
    // A guard of 0xAB words past the launch's bytes catches shared-memory
    // writes past the dynamic allocation (checked after every CTA).
    const size_t dyn_words = (smem + 7) / 8 + 2, guard_words = 4096, dyn_total = dyn_words + guard_words;
    std::vector<i32> row_len;
    emu::guard_loads(a, npad, p.next_n, p.cr_shift, row_len);
    g_launch = Launch{entry, a.logits.data(), a.n.data(), a.hints.data(), out.data(), p, workspace.data()};
    emu::grid_dim = dim3e{gx, gy, 1u};
    emu::trace.assign(rows, 0u);
    std::mt19937 rng(12345u + rows * 7u + gx);
#ifdef EMU_CONCURRENT_PARTS
    emu::cl::smem_bytes = EMU_STATIC_SMEM + dyn_total * 8;
    if (emu::cl::smem_bytes > EMU_CLUSTER_SMEM_BYTES) {
        std::fprintf(stderr, "EMU: %u B of dynamic shared memory do not fit the emulator's CTA\n", smem);
        return 2;
    }
    for (u32 y = 0; y < emu_rows; ++y) {
        emu::cl::run_cluster(0, y, gx, block, run_kernel, rng, 0xAB);  // stale shared memory
        for (u32 c = 0; c < gx; ++c) {
            const u64* cta_dyn = (const u64*)(emu::cl::smem[c] + EMU_STATIC_SMEM);
            if (!guard_intact(cta_dyn, dyn_words, dyn_total, smem, y)) return 6;
        }
    }
#else
    std::vector<u64> dyn(dyn_total);
    ss_dyn = dyn.data();
    std::vector<u32> parts(gx);
    for (u32 y = 0; y < emu_rows; ++y) {
        for (u32 x = 0; x < gx; ++x) parts[x] = x;
        std::shuffle(parts.begin(), parts.end(), rng);  // arrival order must not matter
        for (u32 x : parts) {
            std::memset(dyn.data(), 0xAB, dyn_total * 8);  // stale shared memory
            emu::run_cta(x, y, block, run_kernel);
            if (!guard_intact(dyn.data(), dyn_words, dyn_total, smem, y)) return 6;
        }
    }
#endif
    // The SPLIT workspace must be back to zero (self-restoring): the
    // counters and every slab word (a word left written would pass for a
    // part's survivor in the next launch).
    for (size_t i = 0; i < workspace.size(); ++i) {
        if (workspace[i] != 0) {
            std::fprintf(stderr, "EMU: workspace byte %zu left at %u\n", i, workspace[i]);
            return 5;
        }
    }
    return emu::write_result(argv[2], out);
}
