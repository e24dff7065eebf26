// ss/common.cuh — self-sampling (GVR V2) primitives beyond prim/common.cuh:
// the warp-0 multi-target 256-bin scan, block min/max in key space, the one
// streaming bin expression, list "sources" and exact key-space narrowing
// with the two-predicate ballot emit.
#pragma once

#include "prim/common.cuh"
#include "ss/knobs.cuh"

#define SS_BINS 256u
#define SS_SENT_LO (-3.0e38f)
#define SS_SENT_HI (3.0e38f)
#define SS_MIN_WIDTH (1e-30f)

// Phase probe (diagnostics for `gvr-bench phases`; off in every timed
// build). With SS_PHASE_PROBE=1 thread 0 of each CTA writes, into row
// `cta` of the module global gvr_phase_stamps, the SM clock at each mark it
// passes, the number of streaming passes it made, and the global timer at
// entry and exit. Marks are chronological; a family skips the ones it does
// not have (src/gpu/probe.rs names them and turns stamps into phases):
//   ENTRY → LEN (row length known) → SAMPLE (sample min/max, main and clus)
//   → HIST (the sample's histogram is built) → THRESHOLD (first admission
//   threshold or bracket) → PASS (end of the
//   last streaming pass or histogram) → HANDOFF (SPLIT: the last arriver;
//   clusters: every rank's histogram complete) → VERIFY (crossing known)
//   → EMIT (certain winners written) → EXIT (the CTA leaves).
// CTA 0 also records the grid's CTA count, so the host can tell when CTAs
// past SS_PROBE_CTAS went unprobed.
// Off (SS_PHASE_PROBE 0, ss/knobs.cuh), every mark compiles to nothing.
#define SS_PROBE_CTAS 8192u
#define SS_PROBE_SLOTS 16u
#define SS_MARK_ENTRY 0u
#define SS_MARK_LEN 1u
#define SS_MARK_SAMPLE 2u
#define SS_MARK_THRESHOLD 3u
#define SS_MARK_PASS 4u
#define SS_MARK_HANDOFF 5u
#define SS_MARK_VERIFY 6u
#define SS_MARK_EMIT 7u
#define SS_MARK_EXIT 8u
#define SS_MARK_HIST 9u  // between SAMPLE and THRESHOLD: the sample's histogram is built
#define SS_SLOT_PASSES 12u
#define SS_SLOT_GT_ENTRY 13u
#define SS_SLOT_GT_EXIT 14u
#define SS_SLOT_GRID_CTAS 15u  // written by CTA 0 only: the launch's CTA count
#if SS_PHASE_PROBE
extern "C" {
__device__ unsigned long long gvr_phase_stamps[SS_PROBE_CTAS * SS_PROBE_SLOTS];
}
// This CTA's stamp row, or null past SS_PROBE_CTAS (those CTAs go unprobed).
// Formed anew at every mark: the empty volatile asm keeps the compiler from
// holding the row's address in a register across the kernel (it spilled in
// the 64-register clus entries).
__device__ __forceinline__ unsigned long long* ss_probe_row() {
    const u32 cta = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    unsigned long long* base = gvr_phase_stamps;
#ifndef SS_EMULATION
    asm volatile("" : "+l"(base));
#endif
    return cta < SS_PROBE_CTAS ? base + (u64)cta * SS_PROBE_SLOTS : nullptr;
}
__device__ __forceinline__ void ss_probe_mark(u32 slot) {
    if (threadIdx.x != 0u) return;
    unsigned long long* r = ss_probe_row();
    if (r) r[slot] = gvr_probe_clock();
}
__device__ __forceinline__ void ss_probe_count_pass() {
    if (threadIdx.x != 0u) return;
    unsigned long long* r = ss_probe_row();
    if (r) r[SS_SLOT_PASSES] += 1ull;
}
// ENTRY at construction, EXIT at every return of the body that holds it.
struct SsProbeScope {
    __device__ SsProbeScope() {
        if (threadIdx.x != 0u) return;
        unsigned long long* r = ss_probe_row();
        if (!r) return;
        if (blockIdx.x == 0u && blockIdx.y == 0u && blockIdx.z == 0u)
            r[SS_SLOT_GRID_CTAS] = (u64)gridDim.x * gridDim.y * gridDim.z;
        r[SS_SLOT_GT_ENTRY] = gvr_probe_gtimer();
        r[SS_MARK_ENTRY] = gvr_probe_clock();
    }
    __device__ ~SsProbeScope() {
        if (threadIdx.x != 0u) return;
        unsigned long long* r = ss_probe_row();
        if (!r) return;
        r[SS_MARK_EXIT] = gvr_probe_clock();
        r[SS_SLOT_GT_EXIT] = gvr_probe_gtimer();
    }
};
#define SS_PROBE_SCOPE() SsProbeScope ss_probe_scope_
#define SS_PROBE(mark) ss_probe_mark(mark)
#define SS_PROBE_PASS() ss_probe_count_pass()
#else
#define SS_PROBE_SCOPE() \
    do {                 \
    } while (0)
#define SS_PROBE(mark) \
    do {               \
    } while (0)
#define SS_PROBE_PASS() \
    do {                \
    } while (0)
#endif

// Reconverge the warp after a survivor walk (a loop whose trip count is
// lane-dependent). Without it ptxas left the lanes of a warp split for the
// rest of the streaming pass: the pass's float4 loads issued at ~10 threads
// per instruction and every warp scan took the WARPSYNC.COLLECTIVE slow
// path (ncu of ss_main_b512_u8). SS_WALK_SYNC 0 (ss/knobs.cuh) leaves it out.
__device__ __forceinline__ void ss_walk_reconverge() {
#if SS_WALK_SYNC
    __syncwarp();
#endif
}

// Warp-aggregated reservation of `mine` consecutive slots per lane on
// `counter`: one warp scan and one atomic per warp; returns this lane's
// first slot. Called by all 32 lanes, converged.
__device__ __forceinline__ u32 ss_warp_reserve_n(u32 mine, u32* counter) {
    const u32 incl = warp_incl_scan(mine);
    u32 base = 0u;
    if (lane_id() == 31u && incl != 0u) base = atomicAdd(counter, incl);
    base = __shfl_sync(GVR_FULL_MASK, base, 31);
    return base + incl - mine;
}

// Survivor walk of one classified tile whose thread t owns float4
// tb + u·BLK + t, u < U, with admission bit 4u + e of `mask` for lane e of
// float4 u. Reserves the warp's slots on `counter` with one atomic,
// re-reads each survivor with a scalar load (the tile was just loaded: mostly
// an L1 hit) and hands it to admit(x, idx, slot). Called
// by all 32 lanes, converged; returns converged. Each lane walks its own
// mask, so the warp takes as many steps as its lane with the most survivors.
// That imbalance is cheaper than the alternatives: a warp-cooperative walk's
// search and a register walk's extra instructions both cost more than they
// saved (docs/decisions.md, SS_WALK_COOP / SS_WALK_REG).
template <int BLK, typename Admit>
__device__ __forceinline__ void ss_walk_survivors(const float* X, u32 tb, u32 mask, u32* counter, Admit admit) {
    const u32 t = threadIdx.x;
    u32 pos = ss_warp_reserve_n((u32)__popc(mask), counter);
    while (mask != 0u) {
        const u32 bit = (u32)__ffs(mask) - 1u;
        mask &= mask - 1u;
        const u32 idx = 4u * (tb + (bit >> 2) * BLK + t) + (bit & 3u);
        admit(ldg_nc_f(X + idx), idx, pos++);
    }
    ss_walk_reconverge();
}

// Staged output (main.cu SS_MAIN_STAGE_OUT): the emit gathers the row's
// indices in the 8-byte staging buffer past the `held` slots its list still
// occupies, and one coalesced copy writes them out, instead of one scattered
// 4-byte store per index. Not for clus: there every rank stores its share in
// parallel, and funnelling it through rank 0 serialises the stores.
// (reg.cu stages by a host rule and keeps its own copy loop: through
// ss_copy_out_staged the barrier of its builds would move.)
// `mode` 0: never; 1: always; 2: where
// k >= 2048 or k >= 4·BLK (four or more indices per thread: where coalescing
// pays for the extra pass; docs/decisions.md). True when the row's
// indices go to the staging slots from `held` on; false when the row writes
// directly (mode off, or the list leaves no room for k indices).
// Block-uniform when `held` is.
template <int BLK>
__device__ __forceinline__ bool ss_stage_out(int mode, u32 held, u32 k, u32 scap) {
    if (!(mode == 1 || (mode == 2 && (k >= 2048u || k >= 4u * (u32)BLK)))) return false;
    return (u64)held * 2u + k <= (u64)scap * 2u;
}

// The copy of staged indices [0, count) to the output row, once every
// thread's emit writes are done (block barrier first).
template <int BLK>
__device__ __forceinline__ void ss_copy_out_staged(const i32* staged, i32* out, u32 count) {
    __syncthreads();
    for (u32 i = threadIdx.x; i < count; i += BLK) out[i] = staged[i];
}

// What ss_scan256 leaves in the histogram after scanning it.
#define SS_SCAN_ZERO 0    // cleared, ready for the next phase
#define SS_SCAN_CURSOR 1  // overwritten with after(j): counting-sort cursors

// Crossing of one target: after(bin) < t <= after(bin) + m. `valid` = 0 when
// the target was 0 (nothing pinned). A "fake" crossing (total < t) pins bin 0;
// callers check the total before trusting it.
struct SsCross {
    u32 bin;
    u32 above;
    u32 m;
    u32 valid;
};

// Row lengths and hint rows of a self-sampling launch.
// Every ss entry takes a `lens` array, read one of two ways:
//   next_n == 0: per-row entry (the grid's batch-uniform n is one of these):
//                lens[row] is the row's valid length; hints are [rows, k];
//   next_n >= 1: varlen entry: lens[req] is request req's total cache length
//                (kv_lens, uncompressed tokens); row r serves req = r / next_n
//                with n_r = max(kv - next_n + r % next_n + 1, 0) >> cr_shift;
//                hints are request-level, [rows / next_n, k].
// Either way the length is clamped to [0, npad], so no input reads past the
// row's stride (a zero-window row, kv < next_n, gets n = 0: all -1).
// The varlen formula out of line: the per-row entry (next_n == 0, every grid
// launch) keeps the one load + clamp it always had, with no division code
// laid out next to it.
__device__ __noinline__ u32 ss_varlen_row_len(const i32* lens, u32 row, u32 next_n, u32 cr_shift, u32 npad) {
    const u32 req = row / next_n;
    const u32 back = next_n - 1u - (row - req * next_n);  // kv - back = kv - next_n + row % next_n + 1
    const i32 kv = lens[req];
    if (kv <= (i32)back) return 0u;
    const u32 len = ((u32)kv - back) >> cr_shift;
    return len < npad ? len : npad;
}

__device__ __forceinline__ u32 ss_row_len(const i32* lens, u32 row, u32 next_n, u32 cr_shift, u32 npad) {
    if (next_n == 0u) return clamp_row_len(lens[row], npad);
    return ss_varlen_row_len(lens, row, next_n, cr_shift, npad);
}

// The row length in two steps, so that loads which do not need it can go out
// between them (the loads-ahead of main.cu, reg.cu, reg_clus.cu and
// clus.cu): issue() sends the batch-uniform length's load when
// `early` (varlen lengths come from the formula in wait()), wait() returns
// the row's length as ss_row_len does, waiting for that load only there.
struct SsRowLenEarly {
    i32 raw;
    bool issued;
    __device__ __forceinline__ void issue(const i32* lens, u32 row, u32 next_n, bool early) {
        issued = early && next_n == 0u;
        raw = issued ? ldg_nc_i32(lens + row) : 0;
    }
    __device__ __forceinline__ u32 wait(const i32* lens, u32 row, u32 next_n, u32 cr_shift, u32 npad) const {
        return issued ? clamp_row_len(raw, npad) : ss_row_len(lens, row, next_n, cr_shift, npad);
    }
};

// A sample unit's two float4 (8 values) loaded ahead of the row length, for
// the unit the planned schedule gives the thread first (SS_MAIN_SAMPLE_AHEAD,
// CL_SAMPLE_AHEAD): take() hands them out where the row's own schedule reads
// that unit, else loads the unit at q after the length.
struct SsPairAhead {
    float4 a, b;
    __device__ __forceinline__ void issue(const float* q) {
        a = ldg_nc_f4_ahead(q);
        b = ldg_nc_f4_ahead(q + 4);
    }
    __device__ __forceinline__ void take(bool loaded, const float* q, float4& x, float4& y) const {
        if (loaded) {
            x = a;
            y = b;
        } else {
            x = ldg_nc_f4(q);
            y = ldg_nc_f4(q + 4);
        }
    }
};

// The hint row a row reads (request-level under varlen), or nullptr in
// hint-free mode (no hint array was passed).
__device__ __forceinline__ const i32* ss_hint_row(const i32* hints, u32 row, u32 next_n, u32 k) {
    if (hints == nullptr) return nullptr;
    const u32 hrow = next_n == 0u ? row : row / next_n;
    return hints + (u64)hrow * k;
}

__device__ __forceinline__ float ss_neg_inf() { return __int_as_float(0xff800000); }

// The one bin expression of the streaming families: min(sat_u32((x - lo)*sc), 255).
// Explicit round-to-nearest intrinsics so the compiler can never contract
// one call site differently from another: counts and cursors must agree bit
// for bit. cvt.rzi.u32 saturates and maps NaN to 0; a NaN x goes to the top
// bin instead (NaN ranks above +inf). The test is on x, not on the product,
// so a NaN product of non-NaN inputs (inf - inf, inf * 0) keeps bin 0.
__device__ __forceinline__ u32 ss_bin(float x, float lo, float sc) {
    u32 b = __float2uint_rz(__fmul_rn(__fsub_rn(x, lo), sc));
    b = b < SS_BINS - 1u ? b : SS_BINS - 1u;
    return x != x ? SS_BINS - 1u : b;
}

#ifndef SS_EMULATION  // the host emulator (tests/ss_emu) supplies its own
__device__ __forceinline__ u64 ld_cg_u64(const u64* p) {
    u64 v;
    asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
// Slab words of the SPLIT spin hand-off (main.cu): each word is
// its own flag, so its store and load are morally strong (no data race in
// the PTX memory model) and 64-bit single-copy atomic.
__device__ __forceinline__ u64 ld_relaxed_gpu_u64(const u64* p) {
    u64 v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_relaxed_gpu_u64(u64* p, u64 v) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
// Waits until a slab word is written (non-zero) and returns it. Cannot
// deadlock where the writer has already arrived: it is resident and owes
// only this store. A word that never comes (a part that wrote fewer words
// than it announced: a kernel bug, or logits changed under the launch) traps
// after SS_SLAB_WAIT_POLLS polls (seconds, if a poll is an L2 round trip of
// ~0.3 us: an estimate, not timed): the launch fails with an error instead
// of hanging the GPU.
#define SS_SLAB_WAIT_POLLS (1u << 24)
__device__ __forceinline__ u64 ss_slab_wait(const u64* w) {
    u64 v;
    u32 polls = 0u;
    while ((v = ld_relaxed_gpu_u64(w)) == 0ull) {
        if (++polls == SS_SLAB_WAIT_POLLS) __trap();
    }
    return v;
}
#endif

// A written word of the spin hand-off's slab: the pair with bit 63 set (an
// index is below 2^31), so a word is never zero once written and zero means
// "not yet". The slab is zero between launches (the finisher restores it).
#define SS_SLAB_WRITTEN (1ull << 63)

// Staged (value, index) pair: value bits in the low word, index in the high
// word (the SPLIT slab layout, used for shared staging too).
__device__ __forceinline__ u64 ss_pack(float x, u32 idx) {
    return ((u64)idx << 32) | (u64)__float_as_uint(x);
}

// ---------------------------------------------------------------------------
// Warp 0 only. Lane L owns bins [8L, 8L+8). Finds the crossings of up to
// three targets (0 = none) in one pass, then rewrites the histogram in
// `mode`. Returns the histogram total to every lane of warp 0; lane 0..31
// write `res[i]` for the owning lane only, so the caller must barrier before
// other warps read `res`.
//
// COUNTED finds each crossing without the serial walk over the owner's
// eight bins: the sums after(j) + h[j] fall with j, so the bins reaching the
// target are a prefix 0..c-1 of the lane's and the crossing is bin c - 1
// (c = 0: the fake crossing, bin 0) — eight independent compares and selects
// instead of a dependent chain. Same results in every field (the emulator
// tests compare the two forms' outputs bit for bit). Which entries count is
// each module's choice (SS_SCAN_FORM of main.cu, CL_SCAN_FORM of clus.cu):
// it shortens the SPLIT and cluster chains and costs one-CTA rows at B >= 256,
// where co-resident CTAs already hide the walk (docs/decisions.md).
// ---------------------------------------------------------------------------
template <bool COUNTED>
__device__ __forceinline__ u32 ss_scan256(u32* hist, u32 t0, u32 t1, u32 t2, SsCross* res, int mode) {
    const u32 lane = lane_id();
    uint4 lo4 = *reinterpret_cast<const uint4*>(hist + lane * 8u);
    uint4 hi4 = *reinterpret_cast<const uint4*>(hist + lane * 8u + 4u);
    u32 h[8] = {lo4.x, lo4.y, lo4.z, lo4.w, hi4.x, hi4.y, hi4.z, hi4.w};
    u32 span = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) span += h[j];
    const u32 incl = warp_incl_scan(span);
    const u32 total = __shfl_sync(GVR_FULL_MASK, incl, 31);
    const u32 after_lane = total - incl;  // count in bins owned by higher lanes
    const u32 targets[3] = {t0, t1, t2};
    u32 after[8];  // after[j]: the count in every bin above bin 8·lane + j (the cursors)
    const auto fill_after = [&] {
        u32 run = after_lane;
#pragma unroll
        for (int j = 7; j >= 0; --j) {
            after[j] = run;
            run += h[j];
        }
    };
    if constexpr (COUNTED) fill_after();
#pragma unroll
    for (int i = 0; i < 3; ++i) {
        const u32 t = targets[i];
        if (t == 0u) {
            if (lane == 0u) res[i].valid = 0u;
            continue;
        }
        // Unique owner: after_lane is non-increasing in the lane index; lane 0
        // also takes the fake crossing when total < t.
        const bool owns = after_lane < t && (t <= after_lane + span || lane == 0u);
        if (owns) {
            u32 bin, above, m;
            if constexpr (COUNTED) {
                u32 c = 0u;
#pragma unroll
                for (int j = 0; j < 8; ++j) c += after[j] + h[j] >= t ? 1u : 0u;
                const u32 js = c > 0u ? c - 1u : 0u;
                above = after[0];
                m = h[0];
#pragma unroll
                for (int j = 1; j < 8; ++j) {
                    above = js == (u32)j ? after[j] : above;
                    m = js == (u32)j ? h[j] : m;
                }
                bin = lane * 8u + js;
            } else {
                u32 run = after_lane;
                bin = lane * 8u;
                above = run;
                m = h[0];
                bool found = false;
#pragma unroll
                for (int j = 7; j >= 0; --j) {
                    if (!found && run + h[j] >= t) {
                        bin = lane * 8u + (u32)j;
                        above = run;
                        m = h[j];
                        found = true;
                    }
                    if (!found) run += h[j];
                }
                if (!found) {  // fake crossing: bin 0, above = after(0)
                    bin = 0u;
                    above = run - h[0];
                    m = h[0];
                }
            }
            res[i].bin = bin;
            res[i].above = above;
            res[i].m = m;
            res[i].valid = 1u;
        }
    }
    if (mode == SS_SCAN_CURSOR) {
        if constexpr (!COUNTED) fill_after();  // the walk's form needs them only here
        *reinterpret_cast<uint4*>(hist + lane * 8u) = make_uint4(after[0], after[1], after[2], after[3]);
        *reinterpret_cast<uint4*>(hist + lane * 8u + 4u) = make_uint4(after[4], after[5], after[6], after[7]);
    } else {
        *reinterpret_cast<uint4*>(hist + lane * 8u) = make_uint4(0u, 0u, 0u, 0u);
        *reinterpret_cast<uint4*>(hist + lane * 8u + 4u) = make_uint4(0u, 0u, 0u, 0u);
    }
    return total;
}

// Each warp's min / max to red[warp] / red[32 + warp], then a barrier.
__device__ __forceinline__ void ss_publish_warp_minmax(u32 kmin, u32 kmax, u32* red) {
    const u32 a = warp_min(kmin), b = warp_max(kmax);
    if (lane_id() == 0u) {
        red[warp_id()] = a;
        red[32 + warp_id()] = b;
    }
    __syncthreads();
}

// Block-wide (min, max) of keys. `red` needs 64 u32 of shared memory. Every
// thread gets the result; ends with a barrier so `red` may be reused.
template <int BLK>
__device__ __forceinline__ void ss_block_minmax(u32* kmin, u32* kmax, u32* red) {
    const u32 NW = BLK / 32;
    ss_publish_warp_minmax(*kmin, *kmax, red);
    if (warp_id() == 0u) {
        u32 a = (lane_id() < NW) ? red[lane_id()] : 0xffffffffu;
        u32 b = (lane_id() < NW) ? red[32 + lane_id()] : 0u;
        a = warp_min(a);
        b = warp_max(b);
        if (lane_id() == 0u) {
            red[0] = a;
            red[32] = b;
        }
    }
    __syncthreads();
    *kmin = red[0];
    *kmax = red[32];
    __syncthreads();
}

// ss_block_minmax with one barrier instead of three: every warp reduces the
// per-warp partials itself. `red` (64 words) is read after the barrier, so
// the caller may not write it again before a later barrier.
template <int BLK>
__device__ __forceinline__ void ss_block_minmax_once(u32* kmin, u32* kmax, u32* red) {
    const u32 NW = BLK / 32;
    ss_publish_warp_minmax(*kmin, *kmax, red);
    const u32 l = lane_id();
    *kmin = warp_min(l < NW ? red[l] : 0xffffffffu);
    *kmax = warp_max(l < NW ? red[32 + l] : 0u);
}

// Lazy hint bracket: min/max of the hinted values (indices outside
// [0, n) ignored), or the ±3e38 sentinels when not GMIN < GMAX — always the
// sentinels in hint-free mode (hint_row == nullptr). Block-uniform (in a
// cluster, identical in every rank: same hint row, same values). `red` is
// ss_block_minmax's scratch.
template <int BLK>
__device__ __forceinline__ void ss_gather_hints(const float* X, const i32* hint_row, u32 n, u32 k, u32* red,
                                                float* gmin, float* gmax) {
    u32 kmin = 0xffffffffu, kmax = 0u;
    for (u32 j = threadIdx.x; hint_row != nullptr && j < k; j += BLK) {
        const u32 h = (u32)hint_row[j];
        if (h < n) {
            const u32 key = fkey(ldg_nc_f(X + h));
            kmin = kmin < key ? kmin : key;
            kmax = kmax > key ? kmax : key;
        }
    }
    ss_block_minmax<BLK>(&kmin, &kmax, red);
    const float lo = invkey(kmin), hi = invkey(kmax);
    if (lo < hi) {
        *gmin = lo;
        *gmax = hi;
    } else {
        *gmin = SS_SENT_LO;
        *gmax = SS_SENT_HI;
    }
}

// The admission test x >= tf with NaN admitted (NaN ranks above +inf):
// !(x < tf) is one unordered compare, the same cost as x >= tf.
__device__ __forceinline__ bool ss_admits(float x, float tf) { return !(x < tf); }

// Admission bits of one float4 (bit e set iff ss_admits(lane e, tf)).
__device__ __forceinline__ u32 ss_admit_bits(const float4 v, float tf) {
    return (ss_admits(v.x, tf) ? 1u : 0u) | (ss_admits(v.y, tf) ? 2u : 0u) | (ss_admits(v.z, tf) ? 4u : 0u) |
           (ss_admits(v.w, tf) ? 8u : 0u);
}

// Stage one admitted survivor: histogram it (when HIST) and store it in slot
// min(pos, scap) — slot scap is the trash slot that absorbs overflow.
template <bool HIST>
__device__ __forceinline__ void ss_admit(float x, u32 idx, u32 pos, float tf, float sc, u32 scap, u64* stage,
                                         u32* hist) {
    if (HIST) red_shared_add(hist + ss_bin(x, tf, sc), 1u);
    stage[pos < scap ? pos : scap] = ss_pack(x, idx);
}

// Bulk-prefetch float4 [f0, f1) of row X into L2 (cp.async.bulk.prefetch,
// sm_90): one instruction, no register, nothing to wait for. The range is
// always inside the row's valid float4 prefix, so it never touches memory
// the kernel would not read anyway (the emulator checks both ends).
__device__ __forceinline__ void ss_prefetch_l2(const float* X, u32 f0, u32 f1) {
    if (f1 <= f0) return;
#ifdef SS_EMULATION
    emu::check_load(X + (u64)f0 * 4u, true);
    emu::check_load(X + (u64)(f1 - 1u) * 4u, true);
#else
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(X + (u64)f0 * 4u), "r"((f1 - f0) * 16u)
                 : "memory");
#endif
}

// Next-wave prefetch. A one-CTA-per-row launch with more rows than resident
// CTAs runs in waves, and a CTA of a later wave begins with its row's DRAM
// round trip while nothing else on its SM covers it. The CTA of row r sends
// row r + ahead toward L2 (the host sets `ahead` to the launch's resident CTAs,
// so that is the row a CTA of the next wave will take; 0 = off): the valid
// float4 prefix of its logits, one share per warp (ONE, SS_NEXT_WAVE_ONE where
// the caller builds it: all of it from thread 0), and with `hints` its hint
// row when that row is longer than `hint_min_n` (the caller reads hints only
// then). Rows are blockIdx.y, gridDim.y of them; launches with per-row
// lengths only (next_n = 0).
//
// Two steps: the next row's length is loaded with the CTA's own row (its
// round trip then overlaps that row's; loaded just before the prefetch, every
// warp waited for it), the prefetch itself goes out once the row has arrived.

// The length of row blockIdx.y + ahead for this warp's prefetch (lane 0; with
// ONE the CTA's, thread 0), or 0 when this thread sends nothing.
template <bool ONE>
__device__ __forceinline__ u32 ss_next_wave_len(const i32* row_n, u32 ahead, u32 next_n, u32 npad) {
    const u32 next = blockIdx.y + ahead;
    // Per-row lengths only (the varlen form's row arithmetic costs the 32-register entries a spill).
    if (ahead == 0u || next_n != 0u || (ONE ? threadIdx.x : lane_id()) != 0u || next >= gridDim.y ||
        next < ahead)
        return 0u;
    return clamp_row_len(row_n[next], npad);
}

// The prefetch of row blockIdx.y + ahead, of length `n` from ss_next_wave_len.
template <int BLK, bool ONE>
__device__ __forceinline__ void ss_prefetch_next_wave(const float* logits, const i32* hints, u32 hint_min_n, u32 ahead,
                                                      u32 npad, u32 k, u32 n) {
    if (n <= k) return;  // nothing to send (0), or a short row, written without reading it
    const u32 next = blockIdx.y + ahead;
    const u32 f1 = n >> 2;
    const u32 nw = (u32)(BLK / 32);
    // One request (thread 0 alone reaches here, ss_next_wave_len) or one share per warp.
    u32 chunk = ONE ? f1 : (f1 + nw - 1u) / nw;
    chunk = chunk > 64u ? chunk : 64u;  // no request under 1 KB
    const u32 a = ONE ? 0u : warp_id() * chunk;
    const float* X = logits + (u64)next * npad;
    if (a < f1) ss_prefetch_l2(X, a, a + chunk < f1 ? a + chunk : f1);
    // Bulk sizes and addresses are 16-byte multiples: any k the ss arms admit is.
    if (hints != nullptr && n > hint_min_n && (k & 3u) == 0u && (ONE || warp_id() == nw - 1u)) {
        const i32* H = hints + (u64)next * k;
#ifndef SS_EMULATION
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(H), "r"(k * 4u) : "memory");
#endif
    }
}

// ---------------------------------------------------------------------------
// List sources: item i → (value x, index). Narrowing and the survivor emit are
// written once over these.
// ---------------------------------------------------------------------------
struct SsSrcStage {  // shared staging buffer of packed pairs
    const u64* p;
    __device__ __forceinline__ void get(u32 i, float* x, u32* idx) const {
        u64 v = p[i];
        *x = __uint_as_float((u32)v);
        *idx = (u32)(v >> 32);
    }
};

struct SsSrcSlab {  // global SPLIT slab written by other CTAs: L2-coherent reads
    const u64* p;
    __device__ __forceinline__ void get(u32 i, float* x, u32* idx) const {
        // The words are the others' relaxed stores themselves (no release to
        // acquire), so they are read with strong loads too.
        u64 v = ld_relaxed_gpu_u64(p + i);
        *x = __uint_as_float((u32)v);
        *idx = (u32)(v >> 32) & 0x7fffffffu;  // SS_SLAB_WRITTEN off
    }
};

struct SsSrcRow {  // the row itself, scalar loads (never past n: callers bound i)
    const float* row;
    __device__ __forceinline__ void get(u32 i, float* x, u32* idx) const {
        *x = ldg_nc_f(row + i);
        *idx = i;
    }
};

struct SsSrcCand {  // crossing-bin candidates: (fkey << 32) | index
    const u64* p;
    __device__ __forceinline__ void get(u32 i, float* x, u32* idx) const {
        u64 v = p[i];
        *x = invkey((u32)(v >> 32));  // exact inverse: fkey(*x) == v >> 32
        *idx = (u32)v;
    }
};

// Scratch of the narrowing / emit (part of the kernel's static shared block).
struct SsNarrowShared {
    u32* hist;  // 256 bins, 16-byte aligned
    SsCross* cross;
    u32* win;   // emit counters
    u32* tie;
};

// ---------------------------------------------------------------------------
// Exact key-space narrowing of `count` items whose keys all lie
// in [lo, hi] (`in_range` of them), selecting the `need` largest, then the
// two-predicate ballot emit: keys > ethr to out[base + p] (p < winners), keys
// == ethr to out[base + winners + p] (p < ties). Block-uniform: every thread
// must call it with the same arguments. Zeroes the histogram first (callers
// may leave cursors in it).
// ---------------------------------------------------------------------------
template <int BLK, bool COUNTED = false, class Src>
__device__ __noinline__ void ss_narrow_emit(const Src src, u32 count, u32 lo, u32 hi, u32 need, u32 in_range,
                                            int levels, i32* out, u32 base, SsNarrowShared sh) {
    for (u32 b = threadIdx.x; b < SS_BINS; b += BLK) sh.hist[b] = 0u;
    if (threadIdx.x == 0) {
        *sh.win = 0u;
        *sh.tie = 0u;
    }
    __syncthreads();
    u32 winners = 0, ties = 0;
    i64 ethr = 0;
    int level = 0;
    for (;;) {  // block-uniform loop: every decision below depends on shared results only
        if (need == in_range) {  // the whole remaining range is needed
            ethr = (i64)lo - 1;
            winners += in_range;
            ties = 0;
            break;
        }
        if (lo >= hi || level == levels) {  // one key value left (or the safety cap)
            ethr = (i64)lo;
            ties = need;
            break;
        }
        const u32 bitlen = 32u - (u32)__clz((int)((hi - lo) | 1u));
        const u32 shift = bitlen > 8u ? bitlen - 8u : 0u;
        for (u32 i = threadIdx.x; i < count; i += BLK) {
            float x;
            u32 idx;
            src.get(i, &x, &idx);
            const u32 key = fkey(x);
            if (key >= lo && key <= hi) {
                u32 b = (key - lo) >> shift;
                red_shared_add(sh.hist + (b < SS_BINS - 1u ? b : SS_BINS - 1u), 1u);
            }
        }
        __syncthreads();
        if (warp_id() == 0u) (void)ss_scan256<COUNTED>(sh.hist, need, 0u, 0u, sh.cross, SS_SCAN_ZERO);
        __syncthreads();
        const SsCross c = sh.cross[0];
        // in_range > need >= 1 here, so the crossing is real and above < need.
        winners += c.above;
        need -= c.above;
        in_range = c.m;
        const u64 new_lo = (u64)lo + ((u64)c.bin << shift);
        if (c.bin != SS_BINS - 1u) {
            // Clamp to the old top: keys above it were already counted as winners.
            const u64 top = new_lo + ((u64)1 << shift) - 1u;
            hi = (top < (u64)hi) ? (u32)top : hi;
        }
        lo = (u32)new_lo;
        ++level;
        __syncthreads();  // everyone has read sh.cross before the next scan writes it
    }
    for (u32 i0 = 0; i0 < count; i0 += BLK) {  // uniform trip count: ballots below
        const u32 i = i0 + threadIdx.x;
        bool win = false, tie = false;
        u32 idx = 0;
        if (i < count) {
            float x;
            src.get(i, &x, &idx);
            const i64 key = (i64)fkey(x);
            win = key > ethr;
            tie = key == ethr;
        }
        const u32 ws = warp_reserve(win, sh.win);
        if (win && ws < winners) out[base + ws] = (i32)idx;
        const u32 ts = warp_reserve(tie, sh.tie);
        if (tie && ts < ties) out[base + winners + ts] = (i32)idx;
    }
}

// ---------------------------------------------------------------------------
// Generic pointer to the same shared-memory object in CTA `rank` of this
// thread-block cluster (mapa on a generic address): ordinary loads, stores
// and atomics through it reach the peer's shared memory (DSMEM). Ordering
// across CTAs comes from cluster_sync() (release/acquire). The host
// emulator (tests/ss_emu/cluster.cuh) supplies its own.
// ---------------------------------------------------------------------------
#ifndef SS_EMULATION
template <class T>
__device__ __forceinline__ T* cluster_map_ptr(T* local, u32 rank) {
    u64 remote;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(remote) : "l"(reinterpret_cast<u64>(local)), "r"(rank));
    return reinterpret_cast<T*>(remote);
}
#endif
