// Host emulator driver for kernels/baselines/sglang_v2.cu (the `sglang-v2`
// arm), see tests/emu/sglang_v2.rs. Runs one whole call as the host does:
// the plan kernel (one CTA), the cluster kernel when the host routes long
// rows to clusters (grid (G, 8), clusters of 8 CTAs along y, each cluster
// run with the cluster scheduler of cluster.cuh), then the per-row kernel
// (one CTA per row). Usage: emu <input> <output>.
// Input (little-endian): 8 u32 header {magic 0x55EE5C07, rows, npad, k,
// row entry (0 reg2, 1 reg4, 2 stream), cluster grid G (0: no cluster
// launch), skip_long, plan only}, f32 logits [rows*npad], i32 n [rows],
// i32 hints [rows*k] (unused).
// Output: i32 [rows*k] (slots never written keep INT_MIN), u32 [rows]
// path-trace bits (SG_TR_* in sglang_v2.cu), then 3 u32 workspace words
// after the call: fallback rows, long-row threshold, long rows; then the
// long-row list (row, n) of the plan, 2 u32 per long row. Exit 0 on
// success; non-zero with a message on stderr for a deadlock, a bad load or
// a bad DSMEM access.
#include "cluster.cuh"

#include "sglang_v2.cu"

// The per-row length driver.cuh's load guard needs (no varlen form here).
inline u32 ss_row_len(const i32* n, u32 r, u32, u32, u32 npad) { return clamp_row_len(n[r], npad); }

#include "driver.cuh"

struct Launch {
    const float* logits;
    const i32* n;
    u32* ws;
    i32* out;
    u32 rows, npad, k, entry, skip_long;
};
static Launch g;

static void run_plan() { sg_plan_body(g.n, g.ws, g.rows, g.npad); }
static void run_cluster8() { sg_cluster_body(g.logits, g.ws, g.out, g.npad, g.k); }
static void run_row() {
    switch (g.entry) {
        case 0: sg_row_body<2>(g.logits, g.n, g.ws, g.out, g.rows, g.npad, g.k, g.skip_long); break;
        case 1: sg_row_body<4>(g.logits, g.n, g.ws, g.out, g.rows, g.npad, g.k, g.skip_long); break;
        default: sg_row_body<0>(g.logits, g.n, g.ws, g.out, g.rows, g.npad, g.k, g.skip_long); break;
    }
}

int main(int argc, char** argv) {
    u32 h[8];
    FILE* in = emu::open_input(argc, argv, 0x55EE5C07u, h, 8);
    if (!in) return 2;
    const u32 rows = h[1], npad = h[2], k = h[3], entry = h[4], grid = h[5], skip_long = h[6], plan_only = h[7];
    emu::LaunchArrays a;
    if (!emu::read_arrays(in, rows, npad, k, a)) return 2;
    std::fclose(in);
    if (entry > 2 || grid > 30 || npad % 4 != 0) {
        std::fprintf(stderr, "EMU: bad launch (entry %u, grid %u, npad %u)\n", entry, grid, npad);
        return 2;
    }
    std::vector<i32> out((size_t)rows * k, INT_MIN);
    std::vector<i32> row_len;
    emu::guard_loads(a, npad, 0u, 0u, row_len);
    // Stale workspace: the plan must write every word the call reads.
    std::vector<u32> ws(SG_WS_META + 2 + 2 * (size_t)rows, 0xdeadbeefu);
    emu::cl::smem_bytes = SG_SMEM_BYTES;
    emu::trace.assign(rows, 0u);
    g = Launch{a.logits.data(), a.n.data(), ws.data(), out.data(), rows, npad, k, entry, skip_long};
    std::mt19937 rng(4242u + rows * 7u + k);

    emu::grid_dim = dim3e{1u, 1u, 1u};
    emu::cl::run_cluster(0, 0, 1, SG_BLK, run_plan, rng, 0x5Au);
    if (!plan_only) {
        if (grid > 0) {
            emu::grid_dim = dim3e{grid, SG_CL_SIZE, 1u};
            for (u32 x = 0; x < grid; ++x)
                emu::cl::run_cluster(x, 0, SG_CL_SIZE, SG_BLK, run_cluster8, rng, (unsigned char)(0xA5 + x), true);
        }
        emu::grid_dim = dim3e{rows, 1u, 1u};
        for (u32 r = 0; r < rows; ++r) emu::cl::run_cluster(r, 0, 1, SG_BLK, run_row, rng, (unsigned char)(0x3C + r));
    }

    FILE* o = std::fopen(argv[2], "wb");
    if (!o) return 2;
    std::fwrite(out.data(), 4, out.size(), o);
    std::fwrite(emu::trace.data(), 4, emu::trace.size(), o);
    const u32 nlong = ws[SG_WS_META + 1];
    const u32 tail[3] = {ws[SG_WS_FALLBACK], ws[SG_WS_META], nlong};
    std::fwrite(tail, 4, 3, o);
    if (nlong <= rows) std::fwrite(ws.data() + SG_WS_META + 2, 4, 2 * (size_t)nlong, o);
    std::fclose(o);
    return 0;
}
