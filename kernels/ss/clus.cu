// clus.cu — self-sampling GVR V2, clustered streaming family
// `clus` (arm `ss-clus`).
//
// One row per thread-block cluster of CS CTAs (grid (CS, rows), cluster
// (CS,1,1), CS ∈ {2,4,8}; any CS works, CS = 1 is main's one-CTA algorithm).
// It is main's one-CTA-per-row algorithm with the row pass
// spread over the cluster:
//
// 1. Sample (QUAD geometry when sampled: a unit is one 64-byte line =
//    4 float4 = 16 values; units j < SMP at float4 4·SS2·j). Every rank
//    draws the SAME sample and computes the same ladder (T, H, TSH floor,
//    hint floor), so TF and SC are bit-identical in all ranks — the bin of
//    an element is the same whichever rank computes it, in every CTA.
// 2. Row pass per rank: chunks of BLK·U float4; chunk g belongs to
//    rank g mod CS (interleaved: balanced for any n), the 0–3 element scalar
//    tail to rank 0. Admit x >= TF, local 256-bin histogram, 8-byte staging
//    (trash slot SCAP absorbs a rank's overflow).
// 3. Merge (merge_scan0): block barrier, cluster barrier, then warp 0
//    of every rank reads all ranks' histograms over DSMEM (16-byte loads),
//    forms the cluster total per bin and the sum over lower ranks, scans the
//    totals for k and writes RANK-BIASED cursors
//    after_cluster(j) + Σ_{r<rank} h_r[j] into `mrg` (the local `hist` stays
//    intact: peers are reading it). The cluster total is the exact number of
//    survivors in the row; accept iff it is >= k. Otherwise the
//    retry ladder of main (TSH floor → hint floor → whole-row fallback);
//    every input of each decision is identical in all ranks (same sample,
//    merged totals, same hint gather), so the conditional cluster barriers
//    cannot deadlock. A retry starts with a cluster barrier (peers may still
//    be reading this rank's histogram) before clearing it.
// 4. Emit: per rank, from its staging (or, when its own staging
//    overflowed, a re-sweep of its owned chunks with the same test and bin),
//    bin >= B → p = atomicAdd(mrg[bin]) is a cluster-global output slot;
//    p < lim1 → the output; else (crossing bin, not whole) one 8-byte DSMEM
//    store of (fkey << 32 | index) into RANK 0's ck64[p − above] (< CMP).
// 5. Exit rendezvous: one cluster barrier (all DSMEM traffic retired, no
//    peer reads anybody's histogram any more); ranks ≠ 0 exit. Rank 0 alone
//    refines the crossing bin from its own ck64 (O(m²) rank for m ≤ 288,
//    else key narrowing) or — no verified crossing, or a crossing bin
//    above CMP — selects the whole row by key-space narrowing
//    (exact for any input).
//
// Short rows (n ≤ k): rank 0 writes identity then −1; all ranks skip the
// body (cluster-uniform, no barrier). n = 0: all −1.
//
// Entry points: ss_clus_u{1,2,4,8} (BLK 1024, 1 CTA/SM: 64 registers).
// Launch: grid (CS, rows), cluster (CS,1,1), block 1024, dynamic shared
// memory CL_PRELUDE_BYTES + (scap + 4)·8 + cmp·8 bytes, identical layout in
// every CTA (DSMEM mapping requires it).

#include "ss/common.cuh"

// Launch scalars (src/topk/families/clus.rs `ClusStreamArgs`, same order,
// all u32). smp..tgt2 are the host's QUAD schedule for a row of length
// n_plan; rows of another length recompute it (cl_row_schedule).
struct SsClusParams {
    u32 n_plan;
    u32 npad;
    u32 k;
    u32 scap;      // staging capacity per CTA (dynamic smem)
    u32 cmp;       // crossing-bin candidate capacity (rank 0's ck64)
    u32 smp;
    u32 ss2;
    u32 tgt;
    u32 tgt2;
    u32 aim_base;  // aim before the sqrt(6n) floor and the clamps
    u32 amin;      // cluster aim floor (3k for CS 2, 7k/2 beyond; 0 for CS 1)
    u32 sfac;
    u32 next_n;    // 0: lens holds per-row lengths; >= 1: kv_lens (ss_row_len)
    u32 cr_shift;  // varlen compress ratio as a shift (0: cr 1, 2: cr 4)
};

#define CL_RANK_MAX 288u
#define CL_REFINE_LEVELS 6
#define CL_FALLBACK_LEVELS 8

// Dynamic shared memory (u32 words), identical in every CTA of the cluster:
// hist[256] | mrg[256] | red[64] | cross[3] | scalars | stage[scap+4] (u64) | ck64[cmp] (u64).
#define CL_HIST 0u
#define CL_MRG 256u
#define CL_RED 512u
#define CL_CROSS 576u  // 3 SsCross = 12 words
#define CL_SCAL 592u   // scalars below (48 words reserved)
#define CL_PRELUDE 640u
#define CL_PRELUDE_BYTES (CL_PRELUDE * 4u)
// Scalars (word offsets from CL_SCAL).
#define CL_S_COUNT 0u     // staging reservation counter (exact survivors of this rank)
#define CL_S_WIN 1u       // narrowing emit counters
#define CL_S_TIE 2u
#define CL_S_TOTAL 3u     // sample histogram total
#define CL_S_KMIN 4u
#define CL_S_KMAX 5u
#define CL_S_LAD_H 6u     // ladder state (float bits), block-uniform
#define CL_S_LAD_FLOOR 7u
#define CL_S_LAD_GMIN 8u
#define CL_S_LAD_GMAX 9u
#define CL_S_LAD_GATH 10u
#define CL_S_MBIN 12u     // merged crossing: bin, above, m, cluster total
#define CL_S_MABOVE 13u
#define CL_S_MM 14u
#define CL_S_MTOT 15u
#define CL_S_N 16u        // row length, first owned float4, chunk stride: re-read from
#define CL_S_FIRST 17u    // shared memory after barriers instead of staying live in
#define CL_S_STEP 18u     // registers across the attempt loop (64-register budget)

// Path trace for the host emulator (tests/ss_emu/clus_stream_main.cpp):
// OR of the bits of every rank; compiles to nothing on the GPU.
#define CL_TR_HINT_START 1u   // T started at the hint floor (unsampled / degenerate sample)
#define CL_TR_RETRY 2u        // at least one extra streaming pass
#define CL_TR_FALLBACK 4u     // no verified crossing: whole-row narrowing
#define CL_TR_DEGEN 8u        // crossing bin > CMP: whole-row narrowing
#define CL_TR_RESWEEP 32u     // a rank's staging overflowed: it re-swept its chunks
#define CL_TR_WHOLE_BIN 64u   // crossing bin needed whole
#define CL_TR_RANK 128u       // O(m²) rank refine
#define CL_TR_NARROW 256u     // key-narrowing refine
#define CL_TR_SAMPLE 512u     // the sample gave the first rung
#define CL_TR_TSH 1024u       // retry at the TSH floor
#define CL_TR_HINT_FLOOR 2048u  // retry at the hint floor
#ifdef SS_EMULATION
#define CL_TRACE(bit)                                        \
    do {                                                     \
        if (threadIdx.x == 0) ss_emu_trace(blockIdx.y, bit); \
    } while (0)
#define CL_SMEM() (emu_cluster_smem())
#else
#define CL_TRACE(bit) \
    do {              \
    } while (0)
extern __shared__ __align__(16) u32 cl_dyn[];
#define CL_SMEM() (cl_dyn)
#endif

struct ClSched {
    u32 smp, ss2, tgt, tgt2;
};

// Per-row QUAD sample schedule: the launch's own numbers
// when n == n_plan, else recomputed exactly (integer / double math, every
// thread the same result). Rust twin: `ss_clus_stream::row_schedule`.
// A final guard keeps SMP·SS2 ≤ (n/4)/4, so the sample never reads past
// the row's valid float4 prefix whatever the host passed.
__device__ __forceinline__ ClSched cl_row_schedule(const SsClusParams& p, u32 n) {
    ClSched s;
    s.smp = 0u;
    s.ss2 = 1u;
    s.tgt = 0u;
    s.tgt2 = 0u;
    const u32 quarter = (n >> 2) >> 2;
    if (n == p.n_plan) {
        s.smp = p.smp;
        s.ss2 = p.ss2 > 0u ? p.ss2 : 1u;
        s.tgt = p.tgt;
        s.tgt2 = p.tgt2;
    } else if (n > p.scap && (n >> 2) >= 4u) {
        const u32 k = p.k;
        u32 aim = p.aim_base;
        const u32 floor6 = (u32)(0.5 + __dsqrt_rn(6.0 * (double)n));
        aim = aim > floor6 ? aim : floor6;
        aim = aim > p.amin ? aim : p.amin;
        aim = aim < (p.scap >> 1) ? aim : (p.scap >> 1);
        aim = aim > k ? aim : k;
        u64 sel = (u64)p.sfac * (u64)n / (u64)(aim > 0u ? aim : 1u);
        if (sel < 256u) sel = 256u;
        if (sel > (u64)(n >> 1)) sel = n >> 1;
        const u32 q1 = quarter > 1u ? quarter : 1u;
        u32 quads = (u32)(sel >> 4);
        if (quads < 1u) quads = 1u;
        if (quads > q1) quads = q1;
        u32 ss2 = q1 / quads;
        if (ss2 < 1u) ss2 = 1u;
        u32 smp = q1 / ss2;
        if (smp < 1u) smp = 1u;
        const u64 tgt = (u64)aim * 16u * smp / n;
        const u64 tgt2 = (u64)k * 16u * smp / n;
        s.smp = smp;
        s.ss2 = ss2;
        s.tgt = tgt > 1u ? (u32)tgt : 1u;
        s.tgt2 = tgt2 > 1u ? (u32)tgt2 : 1u;
    }
    if (s.smp == 0u || s.tgt == 0u || (u64)s.smp * s.ss2 > (u64)quarter) {
        s.smp = 0u;
        s.tgt = 0u;
        s.tgt2 = 0u;
    }
    return s;
}

// Row pass of one rank: its chunks [tb, tb + BLK·U) for tb = first,
// first + step, ... (< n4), plus the scalar tail [4·n4, n) when `tail`.
// Loads past a chunk's end are redirected to the last float4 of the padded
// row and masked by index, never by value. Survivors are re-read with
// scalar loads while staging (the float4 do not stay live: register cap).
// Lane 0 of each warp prefetches its share of the rank's NEXT chunk into L2
// (CL_L2_NEXT; CL_L2_FIRST: the first chunk at kernel start). The knobs of
// this file (CL_*) live in ss/knobs.cuh.
#define CL_COUNTED (CL_SCAN_FORM != 0)

template <int BLK, int U>
__device__ __forceinline__ void cl_row_pass(const float* X, u32 first, u32 step, u32 n4, u32 n, bool tail,
                                            u32 redirect, float tf, float sc, u32 scap, u64* stage, u32* hist,
                                            u32* count) {
    const u32 t = threadIdx.x;
    for (u32 tb = first; tb < n4; tb += step) {  // block-uniform trip count
        const u32 c1 = n4 - tb < (u32)(BLK * U) ? n4 : tb + (u32)(BLK * U);
        u32 mask = 0;
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const u32 i = tb + (u32)u * BLK + t;
            const float4 v = ldg_nc_f4(X + (u64)(i < c1 ? i : redirect) * 4u);
            const u32 bits = ss_admit_bits(v, tf);
            mask |= (i < c1 ? bits : 0u) << (4 * u);  // masked by index, never by value
        }
        if (CL_L2_NEXT && lane_id() == 0u) {  // next owned chunk toward L2 (one bulk request per warp)
            const u64 nx = (u64)tb + step + (u64)warp_id() * (u32)(32 * U);
            if (nx < (u64)n4) {
                const u64 e = nx + (u32)(32 * U);
                ss_prefetch_l2(X, (u32)nx, e < (u64)n4 ? (u32)e : n4);
            }
        }
        ss_walk_survivors<BLK>(X, tb, mask, count, [&](float x, u32 idx, u32 pos) {
            ss_admit<true>(x, idx, pos, tf, sc, scap, stage, hist);
        });
    }
    if (tail) {  // n mod 4 trailing elements, scalar loads (never past n)
        const u32 e = ((n >> 2) << 2) + t;
        if (e < n) {
            const float x = ldg_nc_f(X + e);
            if (ss_admits(x, tf)) ss_admit<true>(x, e, atomicAdd(count, 1u), tf, sc, scap, stage, hist);
        }
    }
}

// merge_scan0, warp 0 only: lane L owns bins [8L, 8L+8). Reads bin
// counts of every rank over DSMEM (two 16-byte loads per rank), forms the
// cluster totals and the sum over lower ranks, scans the totals for target
// k (≥ 1) and writes the rank-biased cursors after_cluster(j) + Σ_{r<rank}
// h_r[j] into `mrg`; the crossing (bin, above, m) and the cluster total go
// to res[0..4). A total < k pins bin 0 (fake crossing; callers check the
// total). The caller barriers before other warps read `res` or `mrg`.
//
// cl_scan_merged is its scan half: lane L holds the cluster totals `tot` and
// the lower-rank sums `low` of bins [8L, 8L+8).
__device__ __forceinline__ void cl_scan_merged(const u32* tot, const u32* low, u32* mrg, u32 k, u32* res) {
    const u32 lane = lane_id();
    u32 span = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) span += tot[j];
    const u32 incl = warp_incl_scan(span);
    const u32 total = __shfl_sync(GVR_FULL_MASK, incl, 31);
    const u32 after_lane = total - incl;  // cluster count in bins owned by higher lanes
    // Unique owner: after_lane is non-increasing in the lane index; lane 0
    // also takes the fake crossing when total < k.
    const bool owns = after_lane < k && (k <= after_lane + span || lane == 0u);
    u32 run = after_lane;
    u32 bin = 0u, above = 0u, m = 0u;
    bool found = false;
    u32 c[8];
#pragma unroll
    for (int j = 7; j >= 0; --j) {
        if (!found && run + tot[j] >= k) {
            bin = lane * 8u + (u32)j;
            above = run;
            m = tot[j];
            found = true;
        }
        c[j] = run + low[j];
        run += tot[j];
    }
    if (owns) {
        if (!found) {  // fake crossing: bin 0, above = after(0)
            bin = 0u;
            above = run - tot[0];
            m = tot[0];
        }
        res[0] = bin;
        res[1] = above;
        res[2] = m;
    }
    if (lane == 0u) res[3] = total;
    *reinterpret_cast<uint4*>(mrg + lane * 8u) = make_uint4(c[0], c[1], c[2], c[3]);
    *reinterpret_cast<uint4*>(mrg + lane * 8u + 4u) = make_uint4(c[4], c[5], c[6], c[7]);
}

__device__ __noinline__ void cl_merge_scan(u32* hist, u32* mrg, u32 rank, u32 cs, u32 k, u32* res) {
    const u32 lane = lane_id();
    u32 tot[8], low[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        tot[j] = 0u;
        low[j] = 0u;
    }
    for (u32 r = 0; r < cs; ++r) {
        const uint4 a = *cluster_map_ptr(reinterpret_cast<uint4*>(hist + lane * 8u), r);
        const uint4 b = *cluster_map_ptr(reinterpret_cast<uint4*>(hist + lane * 8u + 4u), r);
        const u32 h[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        const bool lower = r < rank;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            tot[j] += h[j];
            low[j] += lower ? h[j] : 0u;
        }
    }
    cl_scan_merged(tot, low, mrg, k, res);
}

// CL_MERGE_SPREAD (the host sets 1 for clusters of 8): the merge's bin reads
// spread over the CTA. In warp 0 a cluster of 8 waits on four dependent DSMEM
// round trips; spread, each of the first 256 threads loads its bin from every
// rank (one 4-byte load per rank, all independent: one round trip), keeps the
// lower-rank sum in a register and writes the total to `mrg`; warp 0 scans
// the totals as before, writing after(j); then each owner adds its lower-rank
// sum. Two more CTA barriers, which smaller clusters do not repay.
#if CL_MERGE_SPREAD
__device__ __noinline__ void cl_merge_scan_totals(u32* mrg, u32 k, u32* res) {
    const u32 lane = lane_id();
    u32 tot[8];
    const u32 low[8] = {0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u};
#pragma unroll
    for (int j = 0; j < 8; ++j) tot[j] = mrg[lane * 8u + (u32)j];
    __syncwarp();  // every lane's totals read before any lane writes its cursors
    cl_scan_merged(tot, low, mrg, k, res);
}

template <int BLK>
__device__ __forceinline__ void cl_merge_spread(u32* hist, u32* mrg, u32 rank, u32 cs, u32 k, u32* res) {
    constexpr u32 PER = (SS_BINS + (u32)BLK - 1u) / (u32)BLK;
    u32 low[PER];
#pragma unroll
    for (u32 q = 0; q < PER; ++q) {
        const u32 b = threadIdx.x + q * (u32)BLK;
        low[q] = 0u;
        if (b < SS_BINS) {
            u32 c[8];
#pragma unroll
            for (u32 r = 0; r < 8u; ++r) c[r] = r < cs ? *cluster_map_ptr(hist + b, r) : 0u;
            u32 tot = 0u;
#pragma unroll
            for (u32 r = 0; r < 8u; ++r) {
                tot += c[r];
                low[q] += r < rank ? c[r] : 0u;
            }
            mrg[b] = tot;
        }
    }
    __syncthreads();
    if (warp_id() == 0u) cl_merge_scan_totals(mrg, k, res);
    __syncthreads();
#pragma unroll
    for (u32 q = 0; q < PER; ++q) {
        const u32 b = threadIdx.x + q * (u32)BLK;
        if (b < SS_BINS) mrg[b] += low[q];
    }
}
#endif

// Emit of one admitted element with the merged, rank-biased cursors:
// winners (and the whole crossing bin when needed whole) straight to the
// output, crossing-bin candidates into rank 0's ck64 over DSMEM.
__device__ __forceinline__ void cl_emit_one(float x, u32 idx, float tf, float sc, u32 cbin, u32 above, u32 lim1,
                                            bool whole, u32 cmp, u32* mrg, u64* ck64, i32* out) {
    if (!ss_admits(x, tf)) return;
    const u32 bin = ss_bin(x, tf, sc);
    if (bin < cbin) return;  // certain loser
    const u32 slot = atomicAdd(mrg + bin, 1u);
    if (slot < lim1) {
        out[slot] = (i32)idx;  // certain winner (or the whole crossing bin)
    } else if (!whole) {
        const u32 q = slot - above;
        if (q < cmp) *cluster_map_ptr(ck64 + q, 0u) = ((u64)fkey(x) << 32) | (u64)idx;
    }
}

// Emit of one rank: from its staging when complete, else a re-sweep of its
// own chunks (+ tail on rank 0) with scalar loads, same test and bin.
template <int BLK, int U>
__device__ __noinline__ void cl_emit(const float* X, const u64* stage, u32 list_n, bool complete, u32 first,
                                     u32 step, u32 n4, u32 n, bool tail, float tf, float sc, u32 cbin, u32 above,
                                     u32 lim1, bool whole, u32 cmp, u32* mrg, u64* ck64, i32* out) {
    const u32 t = threadIdx.x;
    if (complete) {
        for (u32 i = t; i < list_n; i += BLK) {
            const u64 v = stage[i];
            cl_emit_one(__uint_as_float((u32)v), (u32)(v >> 32), tf, sc, cbin, above, lim1, whole, cmp, mrg, ck64,
                        out);
        }
        return;
    }
    for (u32 tb = first; tb < n4; tb += step) {
        const u32 c1 = n4 - tb < (u32)(BLK * U) ? n4 : tb + (u32)(BLK * U);
        for (u32 e = 4u * tb + t; e < 4u * c1; e += BLK)
            cl_emit_one(ldg_nc_f(X + e), e, tf, sc, cbin, above, lim1, whole, cmp, mrg, ck64, out);
    }
    if (tail) {
        const u32 e = 4u * n4 + t;
        if (e < n) cl_emit_one(ldg_nc_f(X + e), e, tf, sc, cbin, above, lim1, whole, cmp, mrg, ck64, out);
    }
}

template <int BLK, int U>
__device__ __forceinline__ void ss_clus_body(const float* __restrict__ logits, const i32* __restrict__ lens,
                                             const i32* __restrict__ hints, i32* __restrict__ out,
                                             const SsClusParams& p) {
    u32* const sm = CL_SMEM();
    u32* const hist = sm + CL_HIST;
    u32* const mrg = sm + CL_MRG;
    u32* const red = sm + CL_RED;
    SsCross* const cross = reinterpret_cast<SsCross*>(sm + CL_CROSS);
    u32* const sc_ = sm + CL_SCAL;
    SS_PROBE_SCOPE();
    const u32 t = threadIdx.x;
    const u32 rank = cluster_ctarank();
    const u32 cs = cluster_nctarank();
    const u32 row = blockIdx.y;
    const u32 k = p.k;
    if (k == 0u) return;                  // cluster-uniform: nothing to write
    if (blockIdx.x >= cs) return;         // one cluster per row: extra grid columns (whole clusters) do nothing
    const float* X = logits + (u64)row * p.npad;
    SsRowLenEarly len;  // the length's load first, waited for after the sample's
    len.issue(lens, row, p.next_n, CL_SAMPLE_AHEAD != 0);
    // Half-unit t of the planned schedule (the sample loop below, j = t).
    const bool ahead = CL_SAMPLE_AHEAD != 0 && p.n_plan > k && p.n_plan <= p.npad && t < 2u * p.smp;
    SsPairAhead sample0;
    if (ahead) {
        const u32 unit = t < p.smp ? t : t - p.smp;
        const u32 ss2 = p.ss2 > 0u ? p.ss2 : 1u;
        sample0.issue(X + ((u64)unit * ss2 * 4u + (t < p.smp ? 0u : 2u)) * 4u);
    }
    const u32 n = len.wait(lens, row, p.next_n, p.cr_shift, p.npad);
    SS_PROBE(SS_MARK_LEN);
    if (n <= k) {  // short row, cluster-uniform
        if (rank == 0u) write_identity_row(out + (u64)row * k, n, k);
        return;
    }
    const ClSched rs = cl_row_schedule(p, n);
    const u32 n4 = n >> 2;
    const u32 first = rank * (u32)(BLK * U);
    const u32 step = cs * (u32)(BLK * U);
    u64* const stage = reinterpret_cast<u64*>(sm + CL_PRELUDE);

    if (CL_L2_FIRST && lane_id() == 0u && first < n4) {  // this rank's first chunk toward L2, behind the sample
        const u32 a = first + warp_id() * (u32)(32 * U);
        if (a < n4) ss_prefetch_l2(X, a, n4 - a < (u32)(32 * U) ? n4 : a + (u32)(32 * U));
    }
    for (u32 b = t; b < SS_BINS; b += BLK) hist[b] = 0u;
    if (t == 0u) {
        sc_[CL_S_COUNT] = 0u;
        sc_[CL_S_N] = n;
        sc_[CL_S_FIRST] = first;
        sc_[CL_S_STEP] = step;
    }

    // ---- P1/P2: QUAD sample and threshold ladder ----
    // Half-unit j < 2·SMP: unit j mod SMP, lower (j < SMP) or upper two float4.
    u32 kmin = 0xffffffffu, kmax = 0u;
    const bool ahead_hit = ahead && n == p.n_plan;  // rs is the planned schedule: half-unit t is loaded
    for (u32 j = t; j < 2u * rs.smp; j += BLK) {
        const u32 unit = j < rs.smp ? j : j - rs.smp;
        const float* q = X + ((u64)unit * rs.ss2 * 4u + (j < rs.smp ? 0u : 2u)) * 4u;
        float4 a, b;
        sample0.take(ahead_hit && j == t, q, a, b);
        const float vals[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
        for (int e = 0; e < 8; ++e) {
            if (vals[e] == vals[e]) {  // NaN ignored, as fmin/fmax do
                const u32 key = fkey(vals[e]);
                kmin = kmin < key ? kmin : key;
                kmax = kmax > key ? kmax : key;
            }
        }
    }
    ss_block_minmax<BLK>(&kmin, &kmax, red);  // also publishes the init above
    SS_PROBE(SS_MARK_SAMPLE);
    const float smin = invkey(kmin), smax = invkey(kmax);
    const bool sok = rs.smp > 0u && smax > smin;
    const float NEG_INF = ss_neg_inf();
    float T = NEG_INF, H = NEG_INF, floor3 = NEG_INF;
    {
        float w = 0.f, t3 = NEG_INF, tk = NEG_INF;
        bool rung3 = false;
        if (sok) {
            w = CL_THRESHOLD_TRIM ? __fmul_rn(__fsub_rn(smax, smin), 1.f / (float)SS_BINS)
                                  : __fdiv_rn(__fsub_rn(smax, smin), (float)SS_BINS);
            const float sc = __fdiv_rn(1.f, w);
            for (u32 j = t; j < 2u * rs.smp; j += BLK) {
                const u32 unit = j < rs.smp ? j : j - rs.smp;
                const float* q = X + ((u64)unit * rs.ss2 * 4u + (j < rs.smp ? 0u : 2u)) * 4u;
                const float4 a = ldg_nc_f4(q), b = ldg_nc_f4(q + 4);
                const float vals[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
                for (int e = 0; e < 8; ++e) red_shared_add(hist + ss_bin(vals[e], smin, sc), 1u);
            }
            __syncthreads();
            SS_PROBE(SS_MARK_HIST);
            if (warp_id() == 0u) {
                const u32 tot = ss_scan256<CL_COUNTED>(hist, rs.tgt, rs.tgt2, 2u * rs.tgt, cross, SS_SCAN_ZERO);
                if (lane_id() == 0u) sc_[CL_S_TOTAL] = tot;
            }
            __syncthreads();
            const u32 tot0 = sc_[CL_S_TOTAL];
            const SsCross b1 = cross[0], b2 = cross[1], b3 = cross[2];
            if (b1.valid && tot0 >= rs.tgt) {
                T = __fmaf_rn((float)b1.bin, w, smin);
                if (b2.valid) tk = __fmaf_rn((float)b2.bin, w, smin);
            }
            if (b3.valid && tot0 >= 2u * rs.tgt) {
                t3 = __fmaf_rn((float)b3.bin, w, smin);
                rung3 = true;
            }
            if (!CL_THRESHOLD_TRIM) __syncthreads();  // cross / total are rewritten later
        }
        if (T > NEG_INF) {
            CL_TRACE(CL_TR_SAMPLE);
            if (tk > NEG_INF) {
                // Upper anchor: up = max(Tk − T, 0), capped at 2·(T − T3)
                // when the third rung lies below T; H = max(T + 4·up, T + 8·w).
                float up = fmaxf(__fsub_rn(tk, T), 0.f);
                if (rung3 && T > t3) up = fminf(up, __fmul_rn(2.f, __fsub_rn(T, t3)));
                H = fmaxf(__fmaf_rn(4.f, up, T), __fmaf_rn(8.f, w, T));
            }
        }
        bool gathered = false;
        float gmin = SS_SENT_LO, gmax = SS_SENT_HI;
        if (!(T > NEG_INF)) {  // no usable rung (or NaN from an infinite width): hint floor
            ss_gather_hints<BLK>(X, ss_hint_row(hints, row, p.next_n, k), n, k, red, &gmin, &gmax);
            gathered = true;
            T = gmin;
            H = NEG_INF;
            CL_TRACE(CL_TR_HINT_START);
        }
        if (rung3 && T > gmin && t3 < T) floor3 = t3;
        if (t == 0u) {
            sc_[CL_S_LAD_H] = __float_as_uint(H);
            sc_[CL_S_LAD_FLOOR] = __float_as_uint(floor3);
            sc_[CL_S_LAD_GMIN] = __float_as_uint(gmin);
            sc_[CL_S_LAD_GMAX] = __float_as_uint(gmax);
            sc_[CL_S_LAD_GATH] = gathered ? 1u : 0u;
        }
        __syncthreads();
    }
    SS_PROBE(SS_MARK_THRESHOLD);

    // ---- P3 + merge + verify + retry ladder ----
    bool valid = false, complete = false;
    u32 list_n = 0u;
    float TF = T, SC = 1.f;
#pragma unroll 1
    for (int att = 0; att < 3; ++att) {  // cluster-uniform trip count and exits
        if (att > 0) {
            cluster_sync();  // peers have finished reading this rank's histogram
            for (u32 b = t; b < SS_BINS; b += BLK) hist[b] = 0u;
            if (t == 0u) sc_[CL_S_COUNT] = 0u;
            __syncthreads();
        }
        TF = T;
        const float h_cap = __uint_as_float(sc_[CL_S_LAD_H]);
        float hi = fmaxf(__uint_as_float(sc_[CL_S_LAD_GMAX]), T);
        if (h_cap > T && h_cap < hi) hi = h_cap;
        float wd = CL_THRESHOLD_TRIM ? __fmul_rn(__fsub_rn(hi, T), 1.f / (float)SS_BINS)
                                     : __fdiv_rn(__fsub_rn(hi, T), (float)SS_BINS);
        if (!(wd > 0.f)) wd = SS_MIN_WIDTH;
        SC = __fdiv_rn(1.f, wd);
        if (!(SC < __int_as_float(0x7f800000))) SC = __fdiv_rn(1.f, SS_MIN_WIDTH);  // denormal width
        {
            const u32 n_ = sc_[CL_S_N], first_ = sc_[CL_S_FIRST];
            cl_row_pass<BLK, U>(X, first_, sc_[CL_S_STEP], n_ >> 2, n_, first_ == 0u, p.npad / 4u - 1u, TF, SC,
                                p.scap, stage, hist, sc_ + CL_S_COUNT);
        }
        __syncthreads();
        SS_PROBE_PASS();
        SS_PROBE(SS_MARK_PASS);
        cluster_sync();  // every rank's histogram is complete
        SS_PROBE(SS_MARK_HANDOFF);
#if CL_MERGE_SPREAD
        cl_merge_spread<BLK>(hist, mrg, sc_[CL_S_FIRST] / (u32)(BLK * U), sc_[CL_S_STEP] / (u32)(BLK * U), k,
                             sc_ + CL_S_MBIN);
#else
        if (warp_id() == 0u)
            cl_merge_scan(hist, mrg, sc_[CL_S_FIRST] / (u32)(BLK * U), sc_[CL_S_STEP] / (u32)(BLK * U), k,
                          sc_ + CL_S_MBIN);
#endif
        __syncthreads();
        SS_PROBE(SS_MARK_VERIFY);
        const u32 myn = sc_[CL_S_COUNT];
        if (sc_[CL_S_MTOT] >= k) {  // verified: the top-k is inside the admitted set
            valid = true;
            complete = myn <= p.scap;
            list_n = myn;
            break;
        }
        if (att == 2) break;
        const float floor_now = __uint_as_float(sc_[CL_S_LAD_FLOOR]);
        if (att == 0 && floor_now > NEG_INF && floor_now < TF) {
            T = floor_now;
            CL_TRACE(CL_TR_RETRY);
            CL_TRACE(CL_TR_TSH);
            continue;
        }
        float gmin_now = __uint_as_float(sc_[CL_S_LAD_GMIN]);
        if (sc_[CL_S_LAD_GATH] == 0u) {
            float gmax_now;
            // The hint row is formed here, not kept: one pointer less live across the row pass.
            ss_gather_hints<BLK>(X, ss_hint_row(hints, blockIdx.y, p.next_n, k), sc_[CL_S_N], k, red, &gmin_now,
                                 &gmax_now);
            if (t == 0u) {  // every thread read LAD_GATH before the gather's barriers
                sc_[CL_S_LAD_GMIN] = __float_as_uint(gmin_now);
                sc_[CL_S_LAD_GMAX] = __float_as_uint(gmax_now);
                sc_[CL_S_LAD_GATH] = 1u;
            }
        }
        if (T <= gmin_now) break;
        T = gmin_now;
        CL_TRACE(CL_TR_RETRY);
        CL_TRACE(CL_TR_HINT_FLOOR);
    }

    // ---- cluster emit; refine and fallbacks on rank 0 after the exit rendezvous ----
    const u32 cbin = sc_[CL_S_MBIN], above = sc_[CL_S_MABOVE], m = sc_[CL_S_MM];
    const u32 need = valid ? k - above : k;
    const bool whole = valid && need >= m;
    const bool degen = !valid || m > p.cmp;
    i32* O = out + (u64)row * k;  // formed here, not earlier: keeps the row pass under 64 registers
    if (!degen) {
        if (!complete) CL_TRACE(CL_TR_RESWEEP);
        const u32 lim1 = above + (whole ? m : 0u);
        const u32 n_ = sc_[CL_S_N], first_ = sc_[CL_S_FIRST];
        cl_emit<BLK, U>(X, stage, list_n, complete, first_, sc_[CL_S_STEP], n_ >> 2, n_, first_ == 0u, TF, SC, cbin,
                        above, lim1, whole, p.cmp, mrg, stage + p.scap + 4u, O);
    }
    __syncthreads();
    cluster_sync();  // exit rendezvous: candidates visible in rank 0; no peer reads a histogram any more
    SS_PROBE(SS_MARK_EMIT);
    if (cluster_ctarank() != 0u) return;
    const u32 n_ = sc_[CL_S_N];
    u64* const ck64 = stage + p.scap + 4u;

    SsNarrowShared nsh;
    nsh.hist = hist;  // free: every peer has passed the exit rendezvous
    nsh.cross = cross;
    nsh.win = sc_ + CL_S_WIN;
    nsh.tie = sc_ + CL_S_TIE;
    if (degen) {
        CL_TRACE(valid ? CL_TR_DEGEN : CL_TR_FALLBACK);
        // Whole-row radix select, exact for any input.
        SsSrcRow src;
        src.row = X;
        ss_narrow_emit<BLK, CL_COUNTED>(src, n_, 0u, 0xffffffffu, k, n_, CL_FALLBACK_LEVELS, O, 0u, nsh);
        return;
    }
    if (whole) {
        CL_TRACE(CL_TR_WHOLE_BIN);
        return;
    }
    const u32 mc = m;  // == candidates written (m <= CMP)
    if (mc <= CL_RANK_MAX) {
        CL_TRACE(CL_TR_RANK);
        // Ranks over distinct 64-bit (value, index) keys are a permutation.
        for (u32 i = t; i < mc; i += BLK) {
            const u64 mine = ck64[i];
            u32 r = 0;
            for (u32 j = 0; j < mc; ++j) r += ck64[j] > mine ? 1u : 0u;
            if (r < need) O[above + r] = (i32)(u32)mine;
        }
    } else {
        CL_TRACE(CL_TR_NARROW);
        if (t == 0u) {
            sc_[CL_S_KMIN] = 0xffffffffu;
            sc_[CL_S_KMAX] = 0u;
        }
        __syncthreads();
        for (u32 i = t; i < mc; i += BLK) {
            const u32 key = (u32)(ck64[i] >> 32);
            atomicMin(sc_ + CL_S_KMIN, key);
            atomicMax(sc_ + CL_S_KMAX, key);
        }
        __syncthreads();
        SsSrcCand src;
        src.p = ck64;
        ss_narrow_emit<BLK, CL_COUNTED>(src, mc, sc_[CL_S_KMIN], sc_[CL_S_KMAX], need, mc, CL_REFINE_LEVELS, O, above, nsh);
    }
}

// Entry points, written out (not macro-generated) so the host-side text scan
// of kernel declarations (gpu::sources::declared_entries) sees every name.
#define CL_PASS logits, lens, hints, out, p

extern "C" __global__ void __launch_bounds__(1024, 1) ss_clus_u1(const float* __restrict__ logits, const i32* __restrict__ lens, const i32* __restrict__ hints, i32* __restrict__ out, const SsClusParams p) {
    ss_clus_body<1024, 1>(CL_PASS);
}
extern "C" __global__ void __launch_bounds__(1024, 1) ss_clus_u2(const float* __restrict__ logits, const i32* __restrict__ lens, const i32* __restrict__ hints, i32* __restrict__ out, const SsClusParams p) {
    ss_clus_body<1024, 2>(CL_PASS);
}
extern "C" __global__ void __launch_bounds__(1024, 1) ss_clus_u4(const float* __restrict__ logits, const i32* __restrict__ lens, const i32* __restrict__ hints, i32* __restrict__ out, const SsClusParams p) {
    ss_clus_body<1024, 4>(CL_PASS);
}
extern "C" __global__ void __launch_bounds__(1024, 1) ss_clus_u8(const float* __restrict__ logits, const i32* __restrict__ lens, const i32* __restrict__ hints, i32* __restrict__ out, const SsClusParams p) {
    ss_clus_body<1024, 8>(CL_PASS);
}
