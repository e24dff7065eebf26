//! Every path of the cpu-ss main-family model is reached by a constructed
//! row (so the retry ladder and the fallbacks are exercised, not dead code),
//! and the answer on that path is exact.
//!
//! The constructions read the sample geometry from `route::main_params`, so
//! they keep aiming at the sample even if the launch's sample numbers change.

use gvr_bench::exact::check_row;
use gvr_bench::topk::cpu::{select_row, PathCounts};
use gvr_bench::topk::route::{main_params, DeviceProfile, MainParams};

const K: usize = 512;

fn params_for(n: usize) -> MainParams {
    main_params(1, n, n, K, 1, &DeviceProfile::h200())
}

/// Select with the launch planned for one row of this length, check the
/// result, and return the path counts.
fn run(row: &[f32], hints: &[i32]) -> PathCounts {
    let mut counts = PathCounts::default();
    let out = select_row(row, hints, K, &params_for(row.len()), &mut counts);
    if let Err(reason) = check_row(row, K, &out) {
        panic!("inexact on n={}: {reason}; paths {counts:?}", row.len());
    }
    assert_eq!(counts.rows, 1);
    assert_eq!(counts.narrow_level_cap, 0);
    counts
}

/// Positions the sample of a row of length n reads, in unit order.
fn sample_positions(n: usize) -> Vec<usize> {
    let p = params_for(n);
    assert!(p.sampled, "n={n} must be sampled for this construction");
    (0..p.smp)
        .flat_map(|j| {
            let start = j * p.ss2 * p.unit_values;
            start..start + p.unit_values
        })
        .collect()
}

/// Distinct values in [0, 1) spread over the row (a permutation of i/n).
fn spread(n: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919) % n) as f32 / n as f32).collect()
}

fn no_hints() -> Vec<i32> {
    vec![-1; K]
}

fn hints_at(indices: &[usize]) -> Vec<i32> {
    let mut hints = no_hints();
    for (slot, &i) in indices.iter().enumerate() {
        hints[slot] = i as i32;
    }
    hints
}

#[test]
fn short_rows_are_identity_then_minus_one() {
    let row = spread(100);
    let mut counts = PathCounts::default();
    let out = select_row(&row, &no_hints(), K, &params_for(100), &mut counts);
    assert!(out[..100].iter().copied().eq(0..100));
    assert!(out[100..].iter().all(|&i| i == -1));
    assert_eq!(counts.short_row, 1);
    let out = select_row(&[], &[], K, &params_for(0), &mut counts);
    assert!(out.iter().all(|&i| i == -1));
}

#[test]
fn a_plain_row_is_accepted_on_the_sample_rung_and_rank_refined() {
    let c = run(&spread(30_000), &no_hints());
    assert_eq!(
        (c.sample_rung, c.rank_refine, c.retries),
        (1, 1, 0),
        "{c:?}"
    );
}

#[test]
fn an_overshooting_rung_falls_to_the_tsh_floor() {
    // The sample sees TGT values of 10 and TGT of 5; the row has no other 10
    // but 2k more 5s, so count(≥ T) < k ≤ count(≥ T3).
    let n = 40_000;
    let tgt = params_for(n).tgt;
    let mut row = spread(n);
    let sample = sample_positions(n);
    let in_sample: std::collections::HashSet<usize> = sample.iter().copied().collect();
    for (rank, &i) in sample.iter().enumerate() {
        if rank < tgt {
            row[i] = 10.0;
        } else if rank < 2 * tgt {
            row[i] = 5.0;
        }
    }
    for i in (0..n).filter(|i| !in_sample.contains(i)).take(2 * K) {
        row[i] = 5.0;
    }
    let c = run(&row, &no_hints());
    assert_eq!((c.tsh_floor, c.retries), (1, 1), "{c:?}");
    assert_eq!(
        c.narrow_refine, 1,
        "the 5.0 tie class is wider than the rank gate: {c:?}"
    );
}

#[test]
fn an_overshooting_rung_without_floor_falls_to_the_hint_floor() {
    // 3·TGT sample values of 10 put T and T3 in the same bin (no floor); the
    // hints bracket [≈0.9, 10] admits about a tenth of the row.
    let n = 40_000;
    let tgt = params_for(n).tgt;
    let mut row = spread(n);
    let sample = sample_positions(n);
    for &i in sample.iter().take(3 * tgt) {
        row[i] = 10.0;
    }
    let floor_index = (0..n)
        .filter(|&i| row[i] < 10.0)
        .min_by(|&a, &b| (row[a] - 0.9).abs().total_cmp(&(row[b] - 0.9).abs()))
        .expect("row has small values");
    let c = run(&row, &hints_at(&[floor_index, sample[0]]));
    assert_eq!(c.hint_floor, 1, "{c:?}");
    assert!(c.retries >= 1, "{c:?}");
}

#[test]
fn too_few_values_above_the_sentinel_take_the_whole_row_fallback() {
    // Everything is below the −3e38 sentinel except k − 1 values.
    let n = 40_000;
    let mut row = vec![-3.2e38f32; n];
    let sample: std::collections::HashSet<usize> = sample_positions(n).into_iter().collect();
    for (placed, i) in (0..n)
        .filter(|i| !sample.contains(i))
        .take(K - 1)
        .enumerate()
    {
        row[i] = 1.0 + placed as f32;
    }
    let c = run(&row, &no_hints());
    assert_eq!((c.degenerate_sample, c.whole_row_fallback), (1, 1), "{c:?}");
}

#[test]
fn a_collapsed_window_over_a_staged_row_takes_degen_a() {
    // Unsampled (n ≤ SCAP), no hints: T = −3e38, width 6e38 overflows → every
    // survivor in bin 0, m = n > CMP, all staged.
    let c = run(&spread(5000), &no_hints());
    assert_eq!((c.unsampled, c.hint_floor, c.degen_a), (1, 1, 1), "{c:?}");
    assert!(c.collapsed_window >= 1, "{c:?}");
}

#[test]
fn a_collapsed_window_over_an_overflowing_row_takes_degen_b() {
    let n = 40_000;
    let mut row = spread(n);
    for i in sample_positions(n) {
        row[i] = 0.5;
    }
    let c = run(&row, &no_hints());
    assert_eq!((c.degenerate_sample, c.degen_b_overflow), (1, 1), "{c:?}");
}

#[test]
fn staging_overflow_with_a_good_bracket_re_sweeps() {
    // Degenerate sample, hints bracket [0, max): the whole row survives
    // (> SCAP) but the crossing bin is small.
    let n = 40_000;
    let mut row = spread(n);
    for i in sample_positions(n) {
        row[i] = 0.5;
    }
    let lowest = (0..n).min_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap();
    let highest = (0..n).max_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap();
    let c = run(&row, &hints_at(&[lowest, highest, highest, lowest]));
    assert_eq!(
        (c.hint_floor, c.staging_resweep, c.rank_refine),
        (1, 1, 1),
        "{c:?}"
    );
}

#[test]
fn a_crossing_bin_needed_whole_is_emitted_without_refinement() {
    // k copies of 100 land alone in the top bin of the hint window [0, 100].
    let n = 5000;
    let mut row = spread(n);
    for i in 0..K {
        row[i * 9] = 100.0;
    }
    let lowest = (0..n).min_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap();
    let c = run(&row, &hints_at(&[lowest, 0]));
    assert_eq!((c.hint_floor, c.whole_bin), (1, 1), "{c:?}");
}

#[test]
fn infinities_in_the_sample_and_hints_stay_exact() {
    let n = 40_000;
    let mut row = spread(n);
    let sample = sample_positions(n);
    // +inf inside the top-K (sampled and not), −inf in the sample.
    for &i in sample.iter().take(10) {
        row[i] = f32::INFINITY;
    }
    for &i in sample.iter().skip(10).take(10) {
        row[i] = f32::NEG_INFINITY;
    }
    row[1] = f32::INFINITY;
    let c = run(&row, &hints_at(&[sample[0], sample[15]]));
    assert_eq!(c.rows, 1);
    // Hints on ±inf only: the bracket [−inf, +inf] has infinite width.
    let c = run(
        &spread(5000)
            .iter()
            .enumerate()
            .map(|(i, &x)| if i < 2 { f32::INFINITY } else { x })
            .collect::<Vec<_>>(),
        &hints_at(&[0, 1]),
    );
    assert_eq!(c.hint_floor + c.whole_row_fallback, 1, "{c:?}");
}

/// Select as a SPLIT launch of `parts` CTAs per row, check, return counts.
fn run_split(row: &[f32], hints: &[i32], k: usize, params: &MainParams) -> PathCounts {
    assert!(params.split);
    let mut counts = PathCounts::default();
    let out = select_row(row, hints, k, params, &mut counts);
    if let Err(reason) = check_row(row, k, &out) {
        panic!(
            "SPLIT inexact on n={}: {reason}; paths {counts:?}",
            row.len()
        );
    }
    assert_eq!(counts.split_rows, 1);
    counts
}

#[test]
fn split_row_accepts_on_the_shared_sample_rung() {
    let n = 262_144;
    let params = main_params(1, n, n, 1024, 64, &DeviceProfile::h200());
    let c = run_split(&spread(n), &no_hints(), 1024, &params);
    assert_eq!((c.sample_rung, c.retries), (1, 0), "{c:?}");
}

#[test]
fn split_row_with_tshg_starts_at_the_floor() {
    // The upstream worked example (16, 131072, 512): R = 9 with TSH staging.
    let n = 131_072;
    let params = main_params(16, n, n, 512, 9, &DeviceProfile::b200());
    assert!(params.tshg);
    let c = run_split(&spread(n), &no_hints(), 512, &params);
    assert_eq!(c.tsh_floor, 1, "{c:?}");
}

#[test]
fn split_slab_overflow_takes_the_whole_row_fallback() {
    // Degenerate sample and no hints: every value survives, > GCAP.
    let n = 100_000;
    let params = main_params(1, n, n, 512, 2, &DeviceProfile::h200());
    let mut row = spread(n);
    for i in sample_positions_of(&params) {
        row[i] = 0.5;
    }
    let c = run_split(&row, &no_hints(), 512, &params);
    assert_eq!(
        (c.split_slab_overflow, c.whole_row_fallback),
        (1, 1),
        "{c:?}"
    );
}

#[test]
fn split_part_overflow_re_sweeps_into_the_slab() {
    // ≈ 9,800 survivors, all in part 0 (> SCAP 8192, ≤ GCAP 16384).
    let n = 100_000;
    let params = main_params(1, n, n, 512, 2, &DeviceProfile::h200());
    let mut row = spread(n);
    for (rank, x) in row.iter_mut().skip(20_000).take(10_000).enumerate() {
        *x = 1.0 + rank as f32 / 10_000.0;
    }
    // A degenerate sample (all 0.5) sends the row to the hint bracket.
    for i in sample_positions_of(&params) {
        row[i] = 0.5;
    }
    let c = run_split(&row, &hints_at(&[20_000, 29_999]), 512, &params);
    assert_eq!((c.split_part_resweep, c.hint_floor), (1, 1), "{c:?}");
}

fn sample_positions_of(p: &MainParams) -> Vec<usize> {
    (0..p.smp)
        .flat_map(|j| {
            let start = j * p.ss2 * p.unit_values;
            start..start + p.unit_values
        })
        .collect()
}

#[test]
fn nan_rows_never_panic_and_fill_every_slot_with_unique_indices() {
    // NaN order is implementation-specific: only the structure is checked.
    let n = 40_000;
    for (every, hints) in [
        (3usize, no_hints()),
        (1, hints_at(&[0, 1])),
        (50, hints_at(&[5, 7])),
    ] {
        let row: Vec<f32> = spread(n)
            .into_iter()
            .enumerate()
            .map(|(i, x)| if i % every == 0 { f32::NAN } else { x })
            .collect();
        for params in [
            params_for(n),
            main_params(1, n, n, K, 8, &DeviceProfile::h200()),
        ] {
            let mut counts = PathCounts::default();
            let out = select_row(&row, &hints, K, &params, &mut counts);
            let mut seen = std::collections::HashSet::new();
            for &i in &out {
                assert!(i >= 0 && (i as usize) < n, "index {i}: {counts:?}");
                assert!(seen.insert(i), "duplicate {i}: {counts:?}");
            }
        }
    }
}

/// Diagnostic, not a check: how often the main family's retry ladder and
/// escapes run on real or synthetic rows, from the CPU model (which takes the
/// kernel's paths, `tests/emu/ss_main.rs`). Every step of every cell with
/// N ≥ 30K in `GVR_PROBE_CAPTURES` (e.g. `gvr-bench capture synth --out DIR`),
/// planned for B 64 (one wave) and B 256 (not "big") on the H200, with the
/// main sample knobs of `GVR_PROBE_KNOBS` (`main.aim8=12,main.sfac=64`)
/// applied as the main plan applies them.
/// Prints rows, retries, staging re-sweeps and whole-row fallbacks per
/// (model, N, plan B). Each printed row is also checked exact.
/// `GVR_PROBE_CAPTURES=/tmp/caps GVR_PROBE_KNOBS=main.aim8=12 cargo test --release
/// --test cpu -- cpu_ss_paths --ignored --nocapture`
#[test]
#[ignore = "diagnostic: needs GVR_PROBE_CAPTURES=<capture dir>; prints path counts"]
fn probe_path_rates_over_a_capture_set() {
    use gvr_bench::capture::load::CaptureSet;
    use gvr_bench::topk::families::main::{kernel_args, with_sample_knobs};
    let dir = std::env::var("GVR_PROBE_CAPTURES").expect("GVR_PROBE_CAPTURES=<capture dir>");
    let mut knobs = gvr_bench::topk::Tuning::default();
    for item in std::env::var("GVR_PROBE_KNOBS")
        .unwrap_or_default()
        .split(',')
    {
        if !item.trim().is_empty() {
            knobs
                .set_assignment(item)
                .expect("GVR_PROBE_KNOBS: main.* knobs");
        }
    }
    let set = CaptureSet::open(std::path::Path::new(&dir)).expect("capture set opens");
    println!("model n plan_b | rows retries staging_resweeps whole_row_fallbacks");
    for entry in &set.manifest.cells {
        let cell = set.load_cell(entry).expect("cell loads");
        if (cell.meta.n as usize) < 30_000 {
            continue;
        }
        for b in [64usize, 256] {
            let mut counts = PathCounts::default();
            for s in 0..cell.steps() {
                let row = cell.row(s);
                let mut p =
                    main_params(b, row.len(), cell.npad, cell.k(), 1, &DeviceProfile::h200());
                let a = with_sample_knobs(kernel_args(&p).expect("plan fits u32"), &knobs);
                (p.smp, p.ss2, p.tgt, p.tgt2) = (
                    a.smp as usize,
                    a.ss2 as usize,
                    a.tgt as usize,
                    a.tgt2 as usize,
                );
                p.unit_values = 8 << a.unit_shift;
                let out = select_row(row, cell.hints(s), cell.k(), &p, &mut counts);
                check_row(row, cell.k(), &out).expect("exact");
            }
            println!(
                "{} {} {b} | {} {} {} {}",
                cell.meta.id,
                cell.meta.n,
                counts.rows,
                counts.retries,
                counts.staging_resweep,
                counts.whole_row_fallback
            );
        }
    }
}
