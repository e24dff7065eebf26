//! Property tests: the cpu-ss model of the main family is exact on
//! adversarial NaN-free rows — ties, all-equal, two-valued, ±inf inside and
//! outside the top-K, signed zeros, denormals, narrow ranges, rows aliased
//! with the sample stride — for tiny and large N, all three K, several launch
//! batch sizes (which change SCAP / CMP / BLK) and degenerate hints.
//!
//! Each row is checked twice: by an independent sort-based oracle written
//! here and by `exact::check_row`. The path counts of all rows are printed
//! at the end (`cargo test --test cpu_ss_prop -- --nocapture`).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use gvr_bench::exact::{check_row, UNWRITTEN};
use gvr_bench::topk::cpu::{select_row, PathCounts};
use gvr_bench::topk::route::{main_params, DeviceProfile};

#[derive(Debug, Clone, Copy)]
enum RowKind {
    Uniform,
    FewValues,
    AllEqual,
    TwoValued,
    PosInfInside,
    PosInfFlood,
    NegInfFlood,
    SignedZeros,
    Denormals,
    Narrow,
    Extremes,
    SampleAliased,
    Sorted,
}

const KINDS: [RowKind; 13] = [
    RowKind::Uniform,
    RowKind::FewValues,
    RowKind::AllEqual,
    RowKind::TwoValued,
    RowKind::PosInfInside,
    RowKind::PosInfFlood,
    RowKind::NegInfFlood,
    RowKind::SignedZeros,
    RowKind::Denormals,
    RowKind::Narrow,
    RowKind::Extremes,
    RowKind::SampleAliased,
    RowKind::Sorted,
];

#[derive(Debug, Clone, Copy)]
enum HintKind {
    HintFree,
    Random,
    AllZero,
    AllMinusOne,
    AllLast,
    Duplicated,
    TruePrefix,
}

const HINT_KINDS: [HintKind; 7] = [
    HintKind::HintFree,
    HintKind::Random,
    HintKind::AllZero,
    HintKind::AllMinusOne,
    HintKind::AllLast,
    HintKind::Duplicated,
    HintKind::TruePrefix,
];

/// Launch batch sizes: one-wave (SCAP 16384), BLK 512 and BLK 256 launches.
const BATCHES: [usize; 4] = [1, 100, 200, 300];
const KS: [usize; 3] = [512, 1024, 2048];

#[derive(Debug, Clone)]
struct Case {
    kind: RowKind,
    hint_kind: HintKind,
    n: usize,
    k: usize,
    b: usize,
    /// CTAs per row: 1 = non-split, > 1 = SPLIT.
    parts: u32,
    seed: u64,
}

/// CTAs per row; non-split is weighted up since it has the retry ladder.
const PARTS: [u32; 6] = [1, 1, 1, 2, 9, 64];

fn case_strategy(max_n: usize) -> impl Strategy<Value = Case> {
    (
        0..KINDS.len(),
        0..HINT_KINDS.len(),
        0..KS.len(),
        0..BATCHES.len(),
        any::<u64>(),
        0.0f64..1.0,
        0..PARTS.len(),
    )
        .prop_map(move |(kind, hint_kind, k, b, seed, frac, parts)| {
            let k = KS[k];
            let n = if max_n <= 3 * 2048 {
                // Tiny rows: 0..=3k, with the edges around k over-weighted.
                match seed % 5 {
                    0 => [0, 1, k - 1, k, k + 1][(seed / 5 % 5) as usize],
                    _ => (frac * (3 * k + 1) as f64) as usize,
                }
            } else {
                (frac * max_n as f64) as usize
            };
            Case {
                kind: KINDS[kind],
                hint_kind: HINT_KINDS[hint_kind],
                n: n.min(max_n),
                k,
                // SPLIT launches are small batches (16 rows enables TSH staging).
                b: if PARTS[parts] > 1 {
                    [1, 16][b % 2]
                } else {
                    BATCHES[b]
                },
                parts: PARTS[parts],
                seed,
            }
        })
}

fn make_row(case: &Case, rng: &mut ChaCha8Rng) -> Vec<f32> {
    let n = case.n;
    let k = case.k;
    let uniform = |rng: &mut ChaCha8Rng| rng.random_range(-4.0f32..4.0);
    match case.kind {
        RowKind::Uniform => (0..n).map(|_| uniform(rng)).collect(),
        RowKind::FewValues => {
            let values: Vec<f32> = (0..rng.random_range(2..6)).map(|_| uniform(rng)).collect();
            (0..n)
                .map(|_| values[rng.random_range(0..values.len())])
                .collect()
        }
        RowKind::AllEqual => vec![uniform(rng); n],
        RowKind::TwoValued => {
            let (lo, hi) = (uniform(rng), uniform(rng));
            let share_hi = rng.random_range(0.0..1.0f64);
            (0..n)
                .map(|_| if rng.random_bool(share_hi) { hi } else { lo })
                .collect()
        }
        RowKind::PosInfInside => {
            let mut row: Vec<f32> = (0..n).map(|_| uniform(rng)).collect();
            for _ in 0..rng.random_range(1..k.max(2)) {
                if n > 0 {
                    row[rng.random_range(0..n)] = f32::INFINITY;
                }
            }
            row
        }
        RowKind::PosInfFlood => (0..n)
            .map(|_| {
                if rng.random_bool(0.5) {
                    f32::INFINITY
                } else {
                    uniform(rng)
                }
            })
            .collect(),
        RowKind::NegInfFlood => {
            // Fewer than k finite values, or a −inf tie class at the k-th.
            let finite = rng.random_range(0..=k + 2);
            let mut row = vec![f32::NEG_INFINITY; n];
            for _ in 0..finite {
                if n > 0 {
                    row[rng.random_range(0..n)] = uniform(rng);
                }
            }
            if n > 0 && rng.random_bool(0.5) {
                row[n - 1] = f32::NEG_INFINITY;
            }
            row
        }
        RowKind::SignedZeros => (0..n)
            .map(|_| match rng.random_range(0..4) {
                0 => -0.0,
                1 => 0.0,
                2 => -f32::from_bits(1),
                _ => uniform(rng) * 1e-3,
            })
            .collect(),
        RowKind::Denormals => (0..n)
            .map(|_| {
                let x = f32::from_bits(rng.random_range(1..0x0080_0000u32));
                if rng.random_bool(0.5) {
                    -x
                } else {
                    x
                }
            })
            .collect(),
        RowKind::Narrow => (0..n).map(|_| rng.random_range(1.0f32..1.00003)).collect(),
        RowKind::Extremes => (0..n)
            .map(|_| match rng.random_range(0..5) {
                0 => f32::MAX,
                1 => f32::MIN,
                2 => 3.0e38,
                3 => -3.0e38,
                _ => uniform(rng) * 1e38,
            })
            .collect(),
        RowKind::SampleAliased => {
            // Spikes exactly where the sample reads (or at a neighbouring
            // stride), so the rung over- or under-shoots.
            let p = main_params(case.b, n, n, k, case.parts, &DeviceProfile::h200());
            let stride = (p.ss2 * p.unit_values).max(1) * rng.random_range(1..3);
            let (spike, base) = (uniform(rng) + 8.0, uniform(rng));
            (0..n)
                .map(|i| {
                    if i % stride < p.unit_values {
                        spike
                    } else {
                        base - (i % 97) as f32 * 1e-3
                    }
                })
                .collect()
        }
        RowKind::Sorted => {
            let mut row: Vec<f32> = (0..n).map(|_| uniform(rng)).collect();
            row.sort_by(|a, b| a.total_cmp(b));
            if rng.random_bool(0.5) {
                row.reverse();
            }
            row
        }
    }
}

fn make_hints(case: &Case, row: &[f32], rng: &mut ChaCha8Rng) -> Vec<i32> {
    let (n, k) = (case.n as i32, case.k);
    match case.hint_kind {
        HintKind::HintFree => Vec::new(),
        HintKind::Random => (0..k).map(|_| rng.random_range(-2..n + 3)).collect(),
        HintKind::AllZero => vec![0; k],
        HintKind::AllMinusOne => vec![-1; k],
        HintKind::AllLast => vec![n - 1; k],
        HintKind::Duplicated => {
            let picks: Vec<i32> = (0..3).map(|_| rng.random_range(0..n.max(1))).collect();
            (0..k).map(|i| picks[i % 3]).collect()
        }
        HintKind::TruePrefix => {
            // 60 % of the true top-K, the rest random (the upstream hint model).
            let top = oracle_top_values_indices(row, k);
            (0..k)
                .map(|i| {
                    if i * 5 < k * 3 && i < top.len() {
                        top[i]
                    } else {
                        rng.random_range(0..n.max(1))
                    }
                })
                .collect()
        }
    }
}

/// Order key for the oracle: total order on floats with −0 merged into +0
/// (the streaming compare treats them as equal; both are contract-legal).
fn oracle_key(x: f32) -> u32 {
    let x = if x == 0.0 { 0.0 } else { x };
    let bits = x.to_bits();
    if bits & 0x8000_0000 != 0 {
        !bits
    } else {
        bits | 0x8000_0000
    }
}

/// Indices of the row sorted by (value, index) descending, first k.
fn oracle_top_values_indices(row: &[f32], k: usize) -> Vec<i32> {
    let mut order: Vec<usize> = (0..row.len()).collect();
    order.sort_by(|&a, &b| oracle_key(row[b]).cmp(&oracle_key(row[a])).then(b.cmp(&a)));
    order.into_iter().take(k).map(|i| i as i32).collect()
}

/// Independent exactness check: unique in-range indices whose value
/// multiset equals the top-k value multiset of the row (short rows:
/// identity prefix then −1).
fn oracle_check(row: &[f32], k: usize, out: &[i32]) -> Result<(), String> {
    if out.len() != k {
        return Err(format!("{} slots for k = {k}", out.len()));
    }
    if let Some(slot) = out.iter().position(|&i| i == UNWRITTEN) {
        return Err(format!("slot {slot} unwritten"));
    }
    let n = row.len();
    if n <= k {
        let mut head: Vec<i32> = out[..n].to_vec();
        head.sort_unstable();
        if !head.iter().copied().eq(0..n as i32) || out[n..].iter().any(|&i| i != -1) {
            return Err("short row is not identity then -1".into());
        }
        return Ok(());
    }
    let mut seen = vec![false; n];
    for &i in out {
        if i < 0 || i as usize >= n {
            return Err(format!("index {i} out of [0, {n})"));
        }
        if std::mem::replace(&mut seen[i as usize], true) {
            return Err(format!("index {i} duplicated"));
        }
    }
    let mut got: Vec<u32> = out.iter().map(|&i| oracle_key(row[i as usize])).collect();
    let mut want: Vec<u32> = oracle_top_values_indices(row, k)
        .iter()
        .map(|&i| oracle_key(row[i as usize]))
        .collect();
    got.sort_unstable();
    want.sort_unstable();
    if got != want {
        let first = got.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(0);
        return Err(format!(
            "value multiset differs from position {first} (sorted ascending)"
        ));
    }
    Ok(())
}

fn run_case(case: &Case, totals: &std::sync::Mutex<PathCounts>) -> Result<(), TestCaseError> {
    let mut rng = ChaCha8Rng::seed_from_u64(case.seed);
    let row = make_row(case, &mut rng);
    let hints = make_hints(case, &row, &mut rng);
    // The launch is planned for the batch's longest row; this row may be
    // shorter (varlen), which select_row must handle by itself.
    let launch_n = if case.seed.is_multiple_of(3) {
        case.n + 4096
    } else {
        case.n
    };
    let params = main_params(
        case.b,
        launch_n,
        launch_n,
        case.k,
        case.parts,
        &DeviceProfile::h200(),
    );
    let mut counts = PathCounts::default();
    let out = select_row(&row, &hints, case.k, &params, &mut counts);
    oracle_check(&row, case.k, &out)
        .map_err(|e| TestCaseError::fail(format!("oracle: {e}; paths {counts:?}")))?;
    check_row(&row, case.k, &out)
        .map_err(|e| TestCaseError::fail(format!("check_row: {e}; paths {counts:?}")))?;
    prop_assert_eq!(counts.narrow_level_cap, 0);
    totals
        .lock()
        .map_err(|_| TestCaseError::fail("poisoned totals"))?
        .add(&counts);
    Ok(())
}

fn run_suite(name: &str, cases: u32, max_n: usize) {
    let totals = std::sync::Mutex::new(PathCounts::default());
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&case_strategy(max_n), |case| run_case(&case, &totals));
    let totals = *totals.lock().expect("totals");
    eprintln!("cpu-ss path counts ({name}, {cases} cases): {totals:?}");
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
}

#[test]
fn exact_on_tiny_adversarial_rows() {
    run_suite("tiny n <= 3k", 600, 3 * 2048);
}

#[test]
fn exact_on_large_adversarial_rows() {
    run_suite("large n <= 300K", 60, 300_000);
}

#[test]
fn oracle_rejects_wrong_answers() {
    let row = [3.0f32, 1.0, 2.0, 2.0, -0.0, 0.0];
    assert!(oracle_check(&row, 3, &[0, 2, 3]).is_ok());
    assert!(
        oracle_check(&row, 3, &[0, 2, 1]).is_err(),
        "1.0 is not in the top 3"
    );
    assert!(oracle_check(&row, 3, &[0, 2, 2]).is_err(), "duplicate");
    assert!(oracle_check(&row, 3, &[0, 2, UNWRITTEN]).is_err());
    assert!(oracle_check(&row, 5, &[0, 2, 3, 1, 4]).is_ok());
    assert!(
        oracle_check(&row, 5, &[0, 2, 3, 1, 5]).is_ok(),
        "-0 and +0 are interchangeable"
    );
    assert!(oracle_check(&row[..2], 3, &[1, 0, -1]).is_ok());
    assert!(oracle_check(&row[..2], 3, &[1, 1, -1]).is_err());
}
