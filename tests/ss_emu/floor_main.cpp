// Host emulator driver for kernels/harness/floor.cu's floor_grid (see
// tests/emu/floor.rs). Usage: floor_emu <input> <output>.
// Input (little-endian): 6 u32 header {magic 0x55EE00F1, rows, block, parts,
// npad, k}, the u32 words of FloorParams, f32 logits [rows*npad], i32 n
// [rows], i32 hints [rows*k].
// The grid (parts, rows) runs twice on one workspace, the second time with
// the parts of each row in reverse order (another CTA arrives last); after
// each launch every workspace word must be zero again (exit 5 otherwise).
// Output: the second launch's i32 [rows*k] (INT_MIN where nothing was
// written), then its u32 [rows] trace: per row, the stagger wait planned for
// it plus the float4 of it that the next-wave prefetch sent to L2.
#include "floor.cu"

#include "ss/common.cuh"

#include "driver.cuh"

struct Launch {
    const float* logits;
    const i32* n;
    const i32* hints;
    i32* out;
    FloorParams p;
    u32* ws;
};
static Launch g_launch;

static void run_kernel() {
    floor_grid(g_launch.logits, g_launch.n, g_launch.hints, g_launch.out, g_launch.p, g_launch.ws);
}

int main(int argc, char** argv) {
    u32 h[6];
    FILE* in = emu::open_input(argc, argv, 0x55EE00F1u, h, 6);
    if (!in) return 2;
    const u32 rows = h[1], block = h[2], parts = h[3], npad = h[4], k = h[5];
    FloorParams p;
    if (std::fread(&p, sizeof p, 1, in) != 1) return 2;
    emu::LaunchArrays a;
    if (!emu::read_arrays(in, rows, npad, k, a)) return 2;
    std::fclose(in);
    if (block == 0 || block % 32 != 0 || block > 1024 || parts == 0 || p.npad != npad || p.k != k) {
        std::fprintf(stderr, "EMU: bad launch (block %u, parts %u)\n", block, parts);
        return 2;
    }
    // The next-wave prefetch's bulk ranges are checked like loads.
    std::vector<i32> row_len;
    emu::guard_loads(a, npad, 0u, 0u, row_len);
    std::vector<i32> out;
    std::vector<u32> ws(2 * (size_t)rows, 0u);
    emu::grid_dim = dim3e{parts, rows, 1u};
    for (int launch = 0; launch < 2; ++launch) {
        out.assign((size_t)rows * k, INT_MIN);
        emu::trace.assign(rows, 0u);
        g_launch = Launch{a.logits.data(), a.n.data(), a.hints.data(), out.data(), p, ws.data()};
        for (u32 y = 0; y < rows; ++y) {
            for (u32 j = 0; j < parts; ++j) emu::run_cta(launch == 0 ? j : parts - 1u - j, y, block, run_kernel);
        }
        for (size_t w = 0; w < ws.size(); ++w) {
            if (ws[w] != 0u) {
                std::fprintf(stderr, "EMU: launch %d left workspace word %zu = %u\n", launch, w, ws[w]);
                return 5;
            }
        }
    }
    return emu::write_result(argv[2], out);
}
