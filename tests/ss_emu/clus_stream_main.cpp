// Host emulator driver for kernels/ss/clus.cu (clus), see cluster.cuh
// here and tests/emu/ss_clus_stream.rs. Usage: emu <input> <output>.
// Input (little-endian): 11 u32 header {magic 0x55EE0C51, entry id, cluster
// size, block, dyn smem bytes, rows, npad, k, hint_free (1: null hint
// pointer), emulated rows, kv count}, 14 u32 SsClusParams, i32 kv_lens
// [kv count] (the kernel's length array when next_n >= 1), f32 logits
// [rows*npad], i32 n [rows] (per-row valid lengths: the kernel's length
// array when next_n == 0, and the load guard's either way), i32 hints
// [rows*k].
// Output: i32 [rows*k] (rows not emulated keep INT_MIN), then u32 [rows]
// path-trace bits (CL_TR_* in kernels/ss/clus.cu). Exit 0 on success;
// non-zero with a message on stderr for a deadlock, a bad load or a bad
// DSMEM access.
#include "cluster.cuh"

#include "ss_clus_stream.cu"

#include "driver.cuh"

typedef void (*Body)(const float*, const i32*, const i32*, i32*, const SsClusParams);

template <int BLK, int U>
void body_of(const float* a, const i32* b, const i32* c, i32* d, const SsClusParams p) {
    ss_clus_body<BLK, U>(a, b, c, d, p);
}

// Ids 0..3: the compiled entries (BLK 1024, U 1/2/4/8); 4..8: small CTAs
// (many chunks per row, so the interleaved ownership, partial last chunks
// and the L2 prefetch of the next chunk are exercised on short rows).
static Body body_by_id(u32 id, u32* blk) {
    switch (id) {
        case 0: *blk = 1024; return body_of<1024, 1>;
        case 1: *blk = 1024; return body_of<1024, 2>;
        case 2: *blk = 1024; return body_of<1024, 4>;
        case 3: *blk = 1024; return body_of<1024, 8>;
        case 4: *blk = 64; return body_of<64, 1>;
        case 5: *blk = 64; return body_of<64, 2>;
        case 6: *blk = 64; return body_of<64, 8>;
        case 7: *blk = 128; return body_of<128, 1>;
        case 8: *blk = 128; return body_of<128, 4>;
        default: return nullptr;
    }
}

struct Launch {
    Body body;
    const float* logits;
    const i32* lens;
    const i32* hints;
    i32* out;
    SsClusParams p;
};
static Launch g_launch;

static void run_kernel() { g_launch.body(g_launch.logits, g_launch.lens, g_launch.hints, g_launch.out, g_launch.p); }

int main(int argc, char** argv) {
    u32 h[11];
    FILE* in = emu::open_input(argc, argv, 0x55EE0C51u, h, 11);
    if (!in) return 2;
    const u32 id = h[1], cs = h[2], block = h[3], smem = h[4], rows = h[5], npad = h[6], k = h[7];
    const u32 hint_free = h[8];
    const u32 emu_rows = std::min(h[9], rows);
    const u32 nkv = h[10];
    SsClusParams p;
    if (std::fread(&p, sizeof p, 1, in) != 1) return 2;
    std::vector<i32> kv(nkv);
    if (nkv > 0 && std::fread(kv.data(), 4, nkv, in) != nkv) return 2;
    emu::LaunchArrays a;
    if (!emu::read_arrays(in, rows, npad, k, a)) return 2;
    std::fclose(in);
    u32 blk = 0;
    Body body = body_by_id(id, &blk);
    const u64 need = (u64)CL_PRELUDE_BYTES + ((u64)p.scap + 4u) * 8u + (u64)p.cmp * 8u;
    if (!body || blk != block || cs < 1 || cs > 16 || smem > 256 * 1024 || smem < need || p.npad != npad ||
        p.k != k || (p.next_n >= 1u && nkv * p.next_n != rows)) {
        std::fprintf(stderr, "EMU: bad launch (entry %u, cs %u, block %u, smem %u)\n", id, cs, block, smem);
        return 2;
    }
    std::vector<i32> out((size_t)rows * k, INT_MIN);
    std::vector<i32> row_len;  // n holds the per-row lengths whatever next_n
    emu::guard_loads(a, npad, 0u, 0u, row_len);
    emu::cl::smem_bytes = smem;
    const i32* lens = p.next_n >= 1u ? kv.data() : a.n.data();
    g_launch = Launch{body, a.logits.data(), lens, hint_free ? nullptr : a.hints.data(), out.data(), p};
    emu::grid_dim = dim3e{cs, rows, 1u};
    emu::trace.assign(rows, 0u);
    std::mt19937 rng(991u + rows * 17u + cs);
    for (u32 y = 0; y < emu_rows; ++y) emu::cl::run_cluster(0, y, cs, block, run_kernel, rng, (unsigned char)(0x5A + y));
    return emu::write_result(argv[2], out);
}
