// knobs.cuh — every compile-time knob of the self-sampling kernels, with its
// default, in one place. The host passes a knob as `-DNAME=VALUE`; a knob it
// does not pass takes the default below.
//
// The Rust table `topk::tuning::KNOBS` lists the same names and defaults (a
// test compares the two), with each knob's kind:
//   production  the plan sets it per launch (the value here is what a build
//               without the plan's define gets);
//   tuning      a measured choice; `--knob NAME=VALUE` overrides it for an
//               experiment, docs/decisions.md holds the evidence;
//   diagnostic  changes what is recorded, never the result.
// Every value of every knob keeps the kernels exact.
#pragma once

// ---------------------------------------------------------------- all families

// diagnostic: SM clock stamps at every phase mark (`gvr-bench phases`).
#ifndef SS_PHASE_PROBE
#define SS_PHASE_PROBE 0
#endif

// tuning: reconverge the warp after a survivor walk (without it the lanes of
// a warp stayed split for the rest of the pass).
#ifndef SS_WALK_SYNC
#define SS_WALK_SYNC 1
#endif

// ---------------------------------------------------------------- main (main.cu)

// tuning: tiles ahead of the tile being classified that one lane per warp
// bulk-prefetches into L2 (0: none; prefetched lines were evicted before use).
#ifndef SS_L2_DIST
#define SS_L2_DIST 0
#endif

// tuning: tiles of the slice bulk-prefetched into L2 once the sample arrived.
#ifndef SS_L2_START
#define SS_L2_START 1
#endif

// tuning: SPLIT parts also prefetch their slice's first tile(s).
#ifndef SS_L2_START_SPLIT
#define SS_L2_START_SPLIT 1
#endif

// tuning: float4 per thread of the next tile issued before the walk of the
// current one (-1: per entry shape, `SsPfd`).
#ifndef SS_PFD
#define SS_PFD -1
#endif

// tuning: where the emit and the rank refine write the row's indices.
// 0 straight to global memory; 1 staged in shared memory and copied out
// coalesced; 2 staged where k >= 2,048 or k >= 4·BLK.
#ifndef SS_MAIN_STAGE_OUT
#define SS_MAIN_STAGE_OUT 2
#endif

// tuning: 1 loads each thread's first sample unit for the planned row length
// before the row's length arrives (one DRAM round trip instead of two).
#ifndef SS_MAIN_SAMPLE_AHEAD
#define SS_MAIN_SAMPLE_AHEAD 1
#endif

// tuning: slab words per thread the SPLIT finisher loads together before it
// uses the first (1: one at a time).
#ifndef SS_SLAB_WAIT_BATCH
#define SS_SLAB_WAIT_BATCH 4
#endif

// tuning, bit 1 one-CTA entries / bit 2 SPLIT entries: the sample ladder's
// width as the exact product by 1/256 and no barrier between reading the
// scan's result and writing the ladder.
#ifndef SS_THRESHOLD_TRIM
#define SS_THRESHOLD_TRIM 2
#endif

// tuning, same bits: ss_scan256 finds its crossings by counting.
#ifndef SS_SCAN_FORM
#define SS_SCAN_FORM 2
#endif

// tuning: wave stagger of the BLK 512 many-rows entry in SM cycles (0: off).
#ifndef SS_WAVE_STAGGER
#define SS_WAVE_STAGGER 36000
#endif

// tuning: the same for the BLK 256 entry.
#ifndef SS_WAVE_STAGGER_256
#define SS_WAVE_STAGGER_256 0
#endif

// production: the device's SM count (the host defines it).
#ifndef SS_WAVE_SMS
#define SS_WAVE_SMS 132
#endif

// tuning: the fewest waves, in tenths, a launch staggers at.
#ifndef SS_WAVE_MIN_TENTHS
#define SS_WAVE_MIN_TENTHS 19
#endif

// tuning: rows shorter than this wait in proportion to their length (0: the
// whole stagger at every length).
#ifndef SS_WAVE_FULL_N
#define SS_WAVE_FULL_N 65536
#endif

// tuning: float4 per thread and tile of the many-rows entries
// ss_main_b512_u8 / ss_main_b256_u8 (whose names keep "u8").
#ifndef SS_ROW_U
#define SS_ROW_U 8
#endif

// ---------------------------------------------------------------- reg (reg.cu)

// production: the next-wave L2 prefetch compiled in (the plan builds
// launches that prefetch nothing with 0).
#ifndef SS_NEXT_WAVE_PREFETCH
#define SS_NEXT_WAVE_PREFETCH 1
#endif

// tuning (issue 48): the next-wave prefetch of the one-CTA-per-SM entries as
// one request from thread 0 (the row's valid float4 prefix, then its hints;
// the other entries keep the shares); 0 sends one share per warp, each
// of whose warps issues ~45 instructions at one active lane for it (the
// share's address, the uniform-register loop of its request, the hint test).
#ifndef SS_NEXT_WAVE_ONE
#define SS_NEXT_WAVE_ONE 1
#endif

// production: emit forms compiled: 1 per-bin cursors, 0 slots, 2 both with
// the `cur` launch word picking (all exact).
#ifndef SS_REG_EMIT_FORM
#define SS_REG_EMIT_FORM 2
#endif

// production (the plan's per launch; a value replaces it): the VPT 4 entries
// load their first hint indices ahead of the row length and the row.
#ifndef SS_REG_HINTS_FIRST
#define SS_REG_HINTS_FIRST 0
#endif

// production (the plan's per launch; a value replaces it): the row's loads go
// out before its length arrives, for the length the host expects (a row of
// another length loads again).
#ifndef SS_REG_ROW_AHEAD
#define SS_REG_ROW_AHEAD 0
#endif

// tuning: hint index loads through the read-only path (ld.global.nc).
#ifndef SS_REG_HINT_NC
#define SS_REG_HINT_NC 0
#endif

// production: the slots emit from per-thread winner / crossing bit masks in
// one visit of the registers (1: the 64-register entries; 2: also 512/2;
// 0: the two-visit slots emit).
#ifndef SS_REG_EMIT_MASK
#define SS_REG_EMIT_MASK 1
#endif

// production: the slots emit stages its indices in shared memory and copies
// them out coalesced: 0 direct, 1 in the histogram, 2 in k extra words.
#ifndef SS_REG_STAGE_OUT
#define SS_REG_STAGE_OUT 0
#endif

// production: rows of at most k + SS_REG_DROP_MAX values drop their n - k
// smallest instead of running the bracket chain (0: never).
#ifndef SS_REG_DROP_MAX
#define SS_REG_DROP_MAX 4u
#endif

// production (issue 48): the histogram visit keeps each value's bin in its
// register, so the emit reads bins instead of computing them again; a value
// needed later is read again from the row in global memory (the plan builds
// it per launch, src/topk/route/dispatch.rs `reg_keep_bins`).
#ifndef SS_REG_KEEP_BIN
#define SS_REG_KEEP_BIN 0
#endif

// tuning (issue 48): with the bins kept, the launches that emit slots from bit
// masks keep two bins per register (16 bits each; the slots past the row hold
// bin 0) and classify a pair with one add per mask, in straight-line code
// (0: one bin per register, a guarded compare per value).
#ifndef SS_REG_MASK_PACKED
#define SS_REG_MASK_PACKED 1
#endif

// tuning (issue 48): reg ranks a small crossing bin (m <= qc) with one warp
// per candidate, its lanes comparing 32 others per ballot (every entry but
// 1024/1, where ptxas spilled it); 0: one thread per candidate, comparing all
// m in turn (at B = 1 one warp then runs the kernel's last ~0.4 us alone:
// Nsight Compute of 16K x K 2,048).
#ifndef SS_REG_RANK_WARP
#define SS_REG_RANK_WARP 0
#endif

// ---------------------------------------------------------------- clus (clus.cu)

// tuning: lane 0 of each warp prefetches its share of the rank's next chunk
// into L2.
#ifndef CL_L2_NEXT
#define CL_L2_NEXT 1
#endif

// tuning: the same for the first chunk, at kernel start.
#ifndef CL_L2_FIRST
#define CL_L2_FIRST 1
#endif

// tuning: the first sample half-unit loads before the row length arrives.
#ifndef CL_SAMPLE_AHEAD
#define CL_SAMPLE_AHEAD 1
#endif

// tuning: the ladder width as the exact product by 1/256, no barrier between
// reading the scan's result and writing the ladder (as SS_THRESHOLD_TRIM).
#ifndef CL_THRESHOLD_TRIM
#define CL_THRESHOLD_TRIM 1
#endif

// tuning: ss_scan256 finds its crossings by counting (as SS_SCAN_FORM).
#ifndef CL_SCAN_FORM
#define CL_SCAN_FORM 1
#endif

// production: the cross-rank merge's bin reads spread over the CTA (the plan
// sets 1 for clusters of 8).
#ifndef CL_MERGE_SPREAD
#define CL_MERGE_SPREAD 0
#endif

// ---------------------------------------------------------------- reg_clus (reg_clus.cu)

// tuning: when every crossing candidate sits in rank 0 (m ≤ the CTA's slot
// capacity: candidate q lives in rank q / cap), rank 0 refines them with
// plain shared-memory loads instead of loads through the cluster window,
// and the peers leave at barrier (C): the final cluster barrier (D) goes.
#ifndef RC_LOCAL_REFINE
#define RC_LOCAL_REFINE 1
#endif

// tuning: the cluster's crossing from two small DSMEM rounds (the count above
// each 32-bin group, then the 32 bins of the crossing group) instead of every
// rank reading every bin of every rank; winners are placed by rank (each
// rank's local cursor form plus the lower ranks' winner count). The host
// builds 1 for clusters of 8 (src/topk/families/reg_clus.rs), 0 below.
#ifndef RC_COARSE_MERGE
#define RC_COARSE_MERGE 0
#endif
