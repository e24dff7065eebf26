// Host emulator driver for kernels/ss/reg.cu (see common.cuh here and
// tests/emu/ss_reg.rs). Usage: reg_emu <input> <output>.
// Input (little-endian): 8 u32 header {magic 0x55EE0002, entry id, rows,
// block, dyn smem bytes, npad, k, emulated rows}, the u32 words of SsRegParams,
// f32 logits [rows*npad], i32 n [rows], i32 hints [rows*k].
// Output: i32 [rows*k] (rows not emulated keep INT_MIN), then u32 [rows]
// path-trace bits (SS_RTR_* in kernels/ss/reg.cu). Exit 0 on success; non-zero with
// a message on stderr for a deadlock or a bad load.
#include "ss_reg.cu"

#include "driver.cuh"

#include <algorithm>

typedef void (*Entry)(const float*, const i32*, const i32*, i32*, const SsRegParams);

template <int BLK, int VPT, int NBH, bool IMG, int MINB>
void small_entry(SS_REG_ARGS) {
    ss_reg_body<BLK, VPT, NBH, IMG, MINB>(SS_REG_PASS);
}

// Ids 0..7 follow arms::ss_reg::REG_ENTRIES; 16.. are small CTAs for stress
// (NBH >= 256: the narrowing reuses the histogram's first 256 bins; MINB 1
// or 2 picks either form of the crossing scan).
static Entry entry_by_id(u32 id, u32* block) {
    switch (id) {
        case 0: *block = 256; return ss_reg_b256_v1;
        case 1: *block = 512; return ss_reg_b512_v1;
        case 2: *block = 1024; return ss_reg_b1024_v1;
        case 3: *block = 512; return ss_reg_b512_v2;
        case 4: *block = 1024; return ss_reg_b1024_v4;
        case 5: *block = 512; return ss_reg_b512_v4;
        case 6: *block = 1024; return ss_regimg_b1024_v1;
        case 7: *block = 1024; return ss_reg_b1024_v2;
        case 16: *block = 64; return small_entry<64, 1, 256, false, 1>;
        case 17: *block = 64; return small_entry<64, 4, 256, true, 2>;
        case 18: *block = 128; return small_entry<128, 2, 512, false, 1>;
        default: return nullptr;
    }
}

struct Launch {
    Entry entry;
    const float* logits;
    const i32* n;
    const i32* hints;
    i32* out;
    SsRegParams p;
};
static Launch g_launch;

static void run_kernel() { g_launch.entry(g_launch.logits, g_launch.n, g_launch.hints, g_launch.out, g_launch.p); }

int main(int argc, char** argv) {
    u32 h[8];
    FILE* in = emu::open_input(argc, argv, 0x55EE0002u, h, 8);
    if (!in) return 2;
    const u32 id = h[1], rows = h[2], block = h[3], smem = h[4], npad = h[5], k = h[6];
    const u32 emu_rows = std::min(h[7], rows);
    SsRegParams p;
    if (std::fread(&p, sizeof p, 1, in) != 1) return 2;
    emu::LaunchArrays a;
    if (!emu::read_arrays(in, rows, npad, k, a)) return 2;
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
    std::vector<i32> row_len;
    emu::guard_loads(a, npad, p.next_n, p.cr_shift, row_len);
    g_launch = Launch{entry, a.logits.data(), a.n.data(), a.hints.data(), out.data(), p};
    emu::grid_dim = dim3e{1u, rows, 1u};
    emu::trace.assign(rows, 0u);
    for (u32 y = 0; y < emu_rows; ++y) {
        std::memset(dyn.data(), 0xAB, dyn.size() * 4);  // stale shared memory
        emu::run_cta(0, y, block, run_kernel);
    }
    return emu::write_result(argv[2], out);
}
