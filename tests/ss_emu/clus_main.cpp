// Host emulator driver for kernels/ss/reg_clus.cu (reg_clus), see cluster.cuh
// here and tests/emu/ss_clus.rs. Usage: emu <input> <output>.
// Input (little-endian): 12 u32 header {magic 0x55EE0C02, entry id, cluster
// size, block, dyn smem bytes, rows, npad, k, hint_free, emulated rows,
// next_n, cr_shift}, f32 logits [rows*npad], i32 n [rows] (per-row lengths,
// or kv_lens in its first rows/next_n entries when next_n >= 1), i32 hints
// [rows*k] (request-level under next_n >= 1).
// Output: i32 [rows*k] (rows not emulated keep INT_MIN), then u32 [rows]
// path-trace bits (RC_TR_* in kernels/ss/reg_clus.cu). Exit 0 on success; non-zero with a
// message on stderr for a deadlock, a bad load or a bad DSMEM access.
#include "cluster.cuh"

#include "ss_clus.cu"

#include "driver.cuh"

typedef void (*Body)(const float*, const i32*, const i32*, i32*, const RcParams);

template <int BLK, int VPT>
void body_of(const float* a, const i32* b, const i32* c, i32* d, const RcParams p) {
    ss_regclus_body<BLK, VPT>(a, b, c, d, p);
}

// Ids 0..2: the compiled entries (BLK 1024, VPT 1/2/4); 3..8: small CTAs
// (BLK 64 and 128) with proportionally small candidate slabs.
static Body body_by_id(u32 id, u32* blk) {
    switch (id) {
        case 0: *blk = 1024; return body_of<1024, 1>;
        case 1: *blk = 1024; return body_of<1024, 2>;
        case 2: *blk = 1024; return body_of<1024, 4>;
        case 3: *blk = 64; return body_of<64, 1>;
        case 4: *blk = 64; return body_of<64, 2>;
        case 5: *blk = 64; return body_of<64, 4>;
        case 6: *blk = 128; return body_of<128, 1>;
        case 7: *blk = 128; return body_of<128, 2>;
        case 8: *blk = 128; return body_of<128, 4>;
        default: return nullptr;
    }
}

struct Launch {
    Body body;
    const float* logits;
    const i32* n;
    const i32* hints;
    i32* out;
    RcParams p;
};
static Launch g_launch;

static void run_kernel() { g_launch.body(g_launch.logits, g_launch.n, g_launch.hints, g_launch.out, g_launch.p); }

int main(int argc, char** argv) {
    u32 h[12];
    FILE* in = emu::open_input(argc, argv, 0x55EE0C02u, h, 12);
    if (!in) return 2;
    const u32 id = h[1], cs = h[2], block = h[3], smem = h[4], rows = h[5], npad = h[6], k = h[7];
    const u32 hint_free = h[8];
    const u32 emu_rows = std::min(h[9], rows);
    const u32 next_n = h[10], cr_shift = h[11];
    emu::LaunchArrays a;
    if (!emu::read_arrays(in, rows, npad, k, a)) return 2;
    std::fclose(in);
    u32 blk = 0;
    Body body = body_by_id(id, &blk);
    if (!body || blk != block || cs < 1 || cs > 8 || smem > 256 * 1024 || smem < RC_SMEM_WORDS(blk) * 4) {
        std::fprintf(stderr, "EMU: bad launch (entry %u, cs %u, block %u, smem %u)\n", id, cs, block, smem);
        return 2;
    }
    std::vector<i32> out((size_t)rows * k, INT_MIN);
    std::vector<i32> row_len;
    emu::guard_loads(a, npad, next_n, cr_shift, row_len);
    emu::cl::smem_bytes = smem;
    g_launch = Launch{body, a.logits.data(), a.n.data(), a.hints.data(), out.data(), RcParams{npad, k, hint_free, next_n, cr_shift}};
    emu::grid_dim = dim3e{cs, rows, 1u};
    emu::trace.assign(rows, 0u);
    std::mt19937 rng(777u + rows * 13u + cs);
    for (u32 y = 0; y < emu_rows; ++y) emu::cl::run_cluster(0, y, cs, block, run_kernel, rng, (unsigned char)(0xA5 + y));
    return emu::write_result(argv[2], out);
}
