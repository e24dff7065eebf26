// Host emulator driver for kernels/baselines/radix.cu (see tests/emu/radix.rs
// and common.cuh here). Usage: radix_emu <input> <output>.
// Input (little-endian): 10 u32 header {magic 0x55EE0A01, tier, rows, npad,
// k, bpr, workspace words, zeroed words, calls, seed}, f32 logits
// [rows*npad], i32 n [rows], i32 hints [rows*k].
// Tiers: 0 radix_topk, 1 radix_topk_narrow, 2 radix_topk_split,
// 3 radix_topk_split_wide (grid rows*bpr), 4 radix_topk_multipass (grid
// (bpr, rows), launched for pass 0, 1, 2).
// One call = the tier's launch(es). `calls` calls run on one workspace whose
// first `zeroed words` are zero and the rest garbage (0xA5 bytes: candidate
// space must be written before it is read); after every call those words
// must be zero again (exit 5) and the guard words past the workspace intact
// (exit 6). Each launch runs its CTAs one at a time, call 0 in grid order,
// later calls in an order shuffled by `seed` (another CTA arrives last).
// Output: the last call's i32 [rows*k] (INT_MIN where nothing was written),
// then u32 [rows] zeros (the drivers' shared trace field).
#include "prim/common.cuh"

// @PRIM_SCANS@ (replaced by prim/common.cuh's block scans and find_crossing)

#include "radix.cu"

// driver.cuh's load guard asks the kernel family for a row's valid length.
inline u32 ss_row_len(const i32* n, u32 r, u32, u32, u32 npad) { return clamp_row_len(n[r], npad); }

#include "driver.cuh"

#include <algorithm>
#include <random>

struct Launch {
    u32 tier;
    const float* logits;
    const i32* n;
    const i32* hints;
    i32* out;
    u32 rows, npad, k, bpr, pass;
    u32* ws;
};
static Launch g;

static void run_kernel() {
    switch (g.tier) {
        case 0: radix_topk(g.logits, g.n, g.hints, g.out, g.rows, g.npad, g.k); break;
        case 1: radix_topk_narrow(g.logits, g.n, g.hints, g.out, g.rows, g.npad, g.k); break;
        case 2: radix_topk_split(g.logits, g.n, g.hints, g.out, g.rows, g.npad, g.k, g.bpr, g.ws); break;
        case 3: radix_topk_split_wide(g.logits, g.n, g.hints, g.out, g.rows, g.npad, g.k, g.bpr, g.ws); break;
        default: radix_topk_multipass(g.logits, g.n, g.hints, g.out, g.rows, g.npad, g.k, g.pass, g.ws); break;
    }
}

static const u32 GUARD_WORDS = 64;
static const u32 GUARD = 0xC0DEC0DEu;

int main(int argc, char** argv) {
    u32 h[10];
    FILE* in = emu::open_input(argc, argv, 0x55EE0A01u, h, 10);
    if (!in) return 2;
    const u32 tier = h[1], rows = h[2], npad = h[3], k = h[4], bpr = h[5];
    const u64 ws_words = h[6], zeroed = h[7];
    const u32 calls = h[8], seed = h[9];
    emu::LaunchArrays a;
    if (!emu::read_arrays(in, rows, npad, k, a)) return 2;
    std::fclose(in);
    static const u32 BLOCK[5] = {512, 256, 512, 1024, 512};
    const bool split = tier == 2 || tier == 3, multipass = tier == 4;
    if (tier > 4 || calls == 0 || zeroed > ws_words || ((split || multipass) && (bpr == 0 || ws_words == 0))) {
        std::fprintf(stderr, "EMU: bad launch (tier %u, bpr %u, workspace %llu words)\n", tier, bpr,
                     (unsigned long long)ws_words);
        return 2;
    }
    std::vector<i32> row_len;
    emu::guard_loads(a, npad, 0u, 0u, row_len);
    std::vector<u32> ws(ws_words + GUARD_WORDS, 0xA5A5A5A5u);
    std::fill(ws.begin(), ws.begin() + zeroed, 0u);
    std::fill(ws.begin() + ws_words, ws.end(), GUARD);
    std::vector<i32> out;
    emu::trace.assign(rows, 0u);
    std::mt19937 rng(seed);
    const u32 per_row = (split || multipass) ? bpr : 1u;
    for (u32 call = 0; call < calls; ++call) {
        out.assign((size_t)rows * k, INT_MIN);
        g = Launch{tier, a.logits.data(), a.n.data(), a.hints.data(), out.data(), rows, npad, k, bpr, 0u, ws.data()};
        const u32 launches = multipass ? 3u : 1u;
        for (u32 pass = 0; pass < launches; ++pass) {
            g.pass = pass;
            // CTA list: (x, y) in grid order, shuffled after the first call.
            std::vector<std::pair<u32, u32>> ctas;
            for (u32 r = 0; r < rows; ++r)
                for (u32 s = 0; s < per_row; ++s) ctas.push_back(multipass ? std::make_pair(s, r) : std::make_pair(r * per_row + s, 0u));
            if (call > 0) std::shuffle(ctas.begin(), ctas.end(), rng);
            emu::grid_dim = multipass ? dim3e{bpr, rows, 1u} : dim3e{rows * per_row, 1u, 1u};
            for (const auto& c : ctas) emu::run_cta(c.first, c.second, BLOCK[tier], run_kernel);
        }
        for (u64 w = 0; w < zeroed; ++w) {
            if (ws[w] != 0u) {
                std::fprintf(stderr, "EMU: call %u left workspace word %llu = %u\n", call, (unsigned long long)w, ws[w]);
                return 5;
            }
        }
        for (u64 w = ws_words; w < ws.size(); ++w) {
            if (ws[w] != GUARD) {
                std::fprintf(stderr, "EMU: call %u wrote past the workspace (word %llu)\n", call, (unsigned long long)w);
                return 6;
            }
        }
    }
    return emu::write_result(argv[2], out);
}
