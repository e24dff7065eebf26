//! Deterministic adversarial batches for certification (docs/method.md,
//! "What \"exact\" means"; three data tracks: tie clusters, special values, boundary padding, varlen,
//! degenerate hints) and reusable row generators for property tests.
//!
//! Non-varlen batches always have one `n` for every row (the batch-uniform
//! contract; docs/algorithm.md, "The varlen entry"); only varlen batches mix row lengths.

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, Normal, StandardNormal};

use super::reference_topk;
use crate::capture::format::npad_for;
use crate::capture::Model;
use crate::grid::cells::grid_rungs;
use crate::grid::Batch;

/// Pad value of suite batches: the +3e38 poison of the TRT tests, so a read
/// past `n` corrupts the selected values even if the caller does not poison.
pub const ADVERSARIAL_PAD: f32 = 3e38;

/// One named adversarial batch.
#[derive(Debug, Clone, PartialEq)]
pub struct AdversarialCase {
    /// Stable, unique name, e.g. `two_valued_boundary_n8229`.
    pub name: String,
    pub batch: Batch,
}

/// A row generator: `n` values drawn from `rng`.
pub type RowGenerator = fn(&mut dyn RngCore, usize) -> Vec<f32>;

/// A row generator with a stable name (for test case labels).
#[derive(Debug, Clone, Copy)]
pub struct NamedRowGenerator {
    pub name: &'static str,
    pub generate: RowGenerator,
}

/// Row families that stress a top-K kernel; each is valid for any `n`
/// (including 0). Used by the suite and by property tests.
pub fn row_generators() -> Vec<NamedRowGenerator> {
    vec![
        NamedRowGenerator {
            name: "randn",
            generate: gen_randn,
        },
        NamedRowGenerator {
            name: "all_equal",
            generate: gen_all_equal,
        },
        NamedRowGenerator {
            name: "two_valued",
            generate: gen_two_valued,
        },
        NamedRowGenerator {
            name: "narrow_range",
            generate: gen_narrow_range,
        },
        NamedRowGenerator {
            name: "ulp_cluster",
            generate: gen_ulp_cluster,
        },
        NamedRowGenerator {
            name: "signed_zeros",
            generate: gen_signed_zeros,
        },
        NamedRowGenerator {
            name: "denormals",
            generate: gen_denormals,
        },
        NamedRowGenerator {
            name: "pos_inf_sprinkled",
            generate: gen_pos_inf_sprinkled,
        },
        NamedRowGenerator {
            name: "mostly_neg_inf",
            generate: gen_mostly_neg_inf,
        },
        NamedRowGenerator {
            name: "huge_finite",
            generate: gen_huge_finite,
        },
        NamedRowGenerator {
            name: "nan_sprinkled",
            generate: gen_nan_sprinkled,
        },
        NamedRowGenerator {
            name: "heavy_tail",
            generate: gen_heavy_tail,
        },
    ]
}

fn gen_randn(rng: &mut dyn RngCore, n: usize) -> Vec<f32> {
    (0..n).map(|_| StandardNormal.sample(rng)).collect()
}

fn gen_all_equal(_rng: &mut dyn RngCore, n: usize) -> Vec<f32> {
    vec![1.5; n]
}

fn gen_two_valued(rng: &mut dyn RngCore, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| if rng.random_bool(0.5) { 2.0 } else { 1.0 })
        .collect()
}

/// [1.0, 1.00003]: about 250 distinct floats, so ties are everywhere.
fn gen_narrow_range(rng: &mut dyn RngCore, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(1.0f32..=1.00003)).collect()
}

/// A few distinct large values over a 3-value cluster {v, v+1ulp, v+2ulp}.
fn gen_ulp_cluster(rng: &mut dyn RngCore, n: usize) -> Vec<f32> {
    let base = 0.734_f32;
    let cluster = [base, base.next_up(), base.next_up().next_up()];
    (0..n)
        .map(|_| {
            if rng.random_bool(0.05) {
                5.0 + rng.random::<f32>()
            } else {
                cluster[rng.random_range(0..3)]
            }
        })
        .collect()
}

fn gen_signed_zeros(rng: &mut dyn RngCore, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| match rng.random_range(0..10) {
            0 => 1.0 + rng.random::<f32>(),
            1 => -1.0,
            2..=5 => -0.0,
            _ => 0.0,
        })
        .collect()
}

/// Subnormals of both signs, zeros, and the smallest normals.
fn gen_denormals(rng: &mut dyn RngCore, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| {
            let magnitude = f32::from_bits(rng.random_range(1u32..0x0080_0000));
            match rng.random_range(0..8) {
                0 => 0.0,
                1 => -0.0,
                2 => f32::MIN_POSITIVE,
                3 | 4 => -magnitude,
                _ => magnitude,
            }
        })
        .collect()
}

fn gen_pos_inf_sprinkled(rng: &mut dyn RngCore, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| {
            if rng.random_bool(0.01) {
                f32::INFINITY
            } else {
                StandardNormal.sample(rng)
            }
        })
        .collect()
}

/// NaN bit patterns of both signs with different payloads: the contract
/// ranks every one of them above +inf and ties them with each other.
pub const NAN_PATTERNS: [u32; 5] = [
    0x7fc0_0000,
    0xffc0_0000,
    0x7f80_0001,
    0xff80_0001,
    0x7fff_ffff,
];

/// One of the NaN patterns, by `i`.
pub fn nan_value(i: usize) -> f32 {
    f32::from_bits(NAN_PATTERNS[i % NAN_PATTERNS.len()])
}

/// Normal values with about 1 % NaN of mixed signs and payloads.
fn gen_nan_sprinkled(rng: &mut dyn RngCore, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| {
            if rng.random_bool(0.01) {
                nan_value(i)
            } else {
                StandardNormal.sample(rng)
            }
        })
        .collect()
}

fn gen_mostly_neg_inf(rng: &mut dyn RngCore, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| {
            if rng.random_bool(0.05) {
                StandardNormal.sample(rng)
            } else {
                f32::NEG_INFINITY
            }
        })
        .collect()
}

/// Finite values around ±3.1e38, above the kernels' 3e38 pad sentinel.
fn gen_huge_finite(rng: &mut dyn RngCore, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| {
            let v = 3.0e38 + rng.random::<f32>() * 0.4e38;
            if rng.random_bool(0.3) {
                -v
            } else {
                v
            }
        })
        .collect()
}

/// Normal body with a sparse exponential upper tail, like indexer logits.
fn gen_heavy_tail(rng: &mut dyn RngCore, n: usize) -> Vec<f32> {
    model_row(rng, n, -2.0, 1.2)
}

fn model_row(rng: &mut dyn RngCore, n: usize, mean: f32, std: f32) -> Vec<f32> {
    let body =
        Normal::new(mean, std).unwrap_or_else(|_| Normal::new(0.0, 1.0).expect("unit normal"));
    let tail = Exp::new(0.5f32).expect("positive rate");
    (0..n)
        .map(|_| {
            let x: f32 = body.sample(rng);
            if rng.random_bool(0.002) {
                x + 3.0 + tail.sample(rng)
            } else {
                x
            }
        })
        .collect()
}

/// Deterministic per-case RNG: FNV-1a of the case name, mixed with `k`.
fn rng_for(name: &str, k: usize) -> ChaCha8Rng {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.bytes() {
        h = (h ^ byte as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    ChaCha8Rng::seed_from_u64(h ^ (k as u64).rotate_left(32))
}

/// Hints of a row when the case does not study hints: its own exact top-K,
/// i.e. a perfect previous step (short rows carry −1 entries).
fn perfect_hints(row: &[f32], k: usize) -> Vec<i32> {
    reference_topk(row, k)
}

/// Batch of equal-length rows, padded with [`ADVERSARIAL_PAD`]; each hint
/// list cut or padded with −1 to `k`.
pub(super) fn uniform_batch<R: AsRef<[f32]>, H: AsRef<[i32]>>(
    rows: &[R],
    k: usize,
    hints: &[H],
) -> Batch {
    let n = rows.first().map_or(0, |r| r.as_ref().len());
    debug_assert!(
        rows.iter().all(|r| r.as_ref().len() == n),
        "suite batches are batch-uniform"
    );
    let npad = npad_for(n);
    let mut logits = Vec::with_capacity(rows.len() * npad);
    for row in rows {
        logits.extend_from_slice(row.as_ref());
        logits.resize(logits.len() + npad - n, ADVERSARIAL_PAD);
    }
    let mut flat_hints = Vec::with_capacity(rows.len() * k);
    for h in hints {
        let h = h.as_ref();
        let kept = h.len().min(k);
        flat_hints.extend_from_slice(&h[..kept]);
        flat_hints.resize(flat_hints.len() + k - kept, -1);
    }
    Batch {
        rows: rows.len(),
        npad,
        k,
        logits,
        n: vec![n as u32; rows.len()],
        hints: flat_hints,
        varlen: None,
    }
}

/// Batch of equal-length rows without hints (every slot −1).
fn hint_free_batch(rows: &[Vec<f32>], k: usize) -> Batch {
    uniform_batch(rows, k, &vec![Vec::<i32>::new(); rows.len()])
}

/// Batch of equal-length rows with perfect hints.
fn batch_with_perfect_hints(rows: Vec<Vec<f32>>, k: usize) -> Batch {
    let hints: Vec<Vec<i32>> = rows.iter().map(|r| perfect_hints(r, k)).collect();
    uniform_batch(&rows, k, &hints)
}

/// Put `count` copies of `high` at random positions of a row of `low`.
fn plant(rng: &mut ChaCha8Rng, n: usize, count: usize, low: f32, high: f32) -> Vec<f32> {
    let mut row = vec![low; n];
    let mut positions: Vec<usize> = (0..n).collect();
    let count = count.min(n);
    for i in 0..count {
        let j = rng.random_range(i..n);
        positions.swap(i, j);
        row[positions[i]] = high;
    }
    row
}

fn shuffle(rng: &mut ChaCha8Rng, row: &mut [f32]) {
    for i in (1..row.len()).rev() {
        let j = rng.random_range(0..=i);
        row.swap(i, j);
    }
}

/// The adversarial suite for top-`k` (empty for `k == 0`). Deterministic:
/// the same `k` always gives the same batches, names are unique.
pub fn suite(k: usize) -> Vec<AdversarialCase> {
    if k == 0 {
        return Vec::new();
    }
    let mut cases = Vec::new();
    let mut push = |name: String, batch: Batch| cases.push(AdversarialCase { name, batch });
    // A width that is neither a multiple of 4 nor of 64 and well above k.
    let n = 4 * k + 37;

    // Ties everywhere.
    push(
        format!("all_equal_n{n}"),
        batch_with_perfect_hints(
            vec![
                vec![1.0; n],
                vec![-1.0; n],
                vec![0.0; n],
                vec![f32::NEG_INFINITY; n],
            ],
            k,
        ),
    );
    {
        let mut rng = rng_for("two_valued", k);
        // The count of the high value straddles k: the boundary is a tie storm.
        let rows = [k - 1, k, k + 1, n / 2]
            .iter()
            .map(|&count| plant(&mut rng, n, count, 1.0, 2.0))
            .collect();
        push(
            format!("two_valued_boundary_n{n}"),
            batch_with_perfect_hints(rows, k),
        );
    }
    {
        let mut rng = rng_for("narrow_range", k);
        let rows = (0..4).map(|_| gen_narrow_range(&mut rng, n)).collect();
        push(
            format!("narrow_range_n{n}"),
            batch_with_perfect_hints(rows, k),
        );
    }
    for ulps in [1u32, 2] {
        let mut rng = rng_for(&format!("ulp_cluster_{ulps}"), k);
        let rows = (0..4)
            .map(|r| ulp_boundary_row(&mut rng, n, k, ulps, r))
            .collect();
        push(
            format!("ulp{ulps}_cluster_at_boundary_n{n}"),
            batch_with_perfect_hints(rows, k),
        );
    }

    // Special values.
    {
        let mut rng = rng_for("pos_inf", k);
        let inside = {
            let mut row = gen_randn(&mut rng, n);
            for slot in row.iter_mut().take(5) {
                *slot = f32::INFINITY;
            }
            shuffle(&mut rng, &mut row);
            row
        };
        // More +inf than k: some +inf are left out (ties among infinities).
        let more_than_k = {
            let mut row = gen_randn(&mut rng, n);
            for slot in row.iter_mut().take(k + 3) {
                *slot = f32::INFINITY;
            }
            shuffle(&mut rng, &mut row);
            row
        };
        let at_ends = {
            let mut row = gen_randn(&mut rng, n);
            row[0] = f32::INFINITY;
            row[n - 1] = f32::INFINITY;
            row
        };
        push(
            format!("pos_inf_inside_and_outside_n{n}"),
            batch_with_perfect_hints(vec![inside, more_than_k, at_ends], k),
        );
    }
    {
        let mut rng = rng_for("neg_inf", k);
        let outside = {
            let mut row = gen_randn(&mut rng, n);
            for slot in row.iter_mut().take(n / 3) {
                *slot = f32::NEG_INFINITY;
            }
            shuffle(&mut rng, &mut row);
            row
        };
        // Fewer than k finite values: −inf fills the top-K (ties).
        let fewer_finite = {
            let mut row = vec![f32::NEG_INFINITY; n];
            for slot in row.iter_mut().take(k / 2) {
                *slot = StandardNormal.sample(&mut rng);
            }
            shuffle(&mut rng, &mut row);
            row
        };
        let tail_only = {
            // Finite values only in the last n mod 4 elements (the scalar tail).
            let mut row = vec![f32::NEG_INFINITY; n];
            for slot in row.iter_mut().rev().take(n % 4) {
                *slot = 1.0;
            }
            row
        };
        push(
            format!("neg_inf_and_fewer_than_k_finite_n{n}"),
            batch_with_perfect_hints(vec![outside, fewer_finite, tail_only], k),
        );
    }
    {
        let mut rng = rng_for("signed_zeros", k);
        let mixed = gen_signed_zeros(&mut rng, n);
        let zeros_only: Vec<f32> = (0..n)
            .map(|i| if i % 3 == 0 { -0.0 } else { 0.0 })
            .collect();
        // k/2 positives, then a boundary inside a sea of ±0.
        let half_positive = {
            let mut row: Vec<f32> = (0..n)
                .map(|i| if i % 2 == 0 { -0.0 } else { 0.0 })
                .collect();
            for slot in row.iter_mut().take(k / 2) {
                *slot = 1.0 + rng.random::<f32>();
            }
            shuffle(&mut rng, &mut row);
            row
        };
        push(
            format!("signed_zeros_n{n}"),
            batch_with_perfect_hints(vec![mixed, zeros_only, half_positive], k),
        );
    }
    // NaN (the contract: every NaN ranks above +inf, NaNs tie).
    {
        let mut rng = rng_for("nan", k);
        let mut with_nans = |count: usize, fill: &mut dyn FnMut(&mut ChaCha8Rng, usize) -> f32| {
            let mut row = gen_randn(&mut rng, n);
            for (i, slot) in row.iter_mut().take(count).enumerate() {
                *slot = fill(&mut rng, i);
            }
            shuffle(&mut rng, &mut row);
            row
        };
        let mixed = |_: &mut ChaCha8Rng, i: usize| nan_value(i);
        let rows = vec![
            with_nans(1, &mut |_, _| f32::NAN),
            with_nans(k / 2, &mut { mixed }),
            with_nans(k - 1, &mut { mixed }),
            // Exactly k NaN: the k-th largest is a NaN.
            with_nans(k, &mut { mixed }),
            // More than k NaN: the k-th is a NaN tie, some NaN are left out.
            with_nans(k + 3, &mut { mixed }),
            with_nans(k / 3, &mut |_, _| -f32::NAN),
        ];
        push(
            format!("nan_counts_around_k_n{n}"),
            batch_with_perfect_hints(rows, k),
        );
        // NaN with ±inf: +inf must come right after every NaN.
        let inf_rows = [k / 2, k - 3, k + 5]
            .iter()
            .map(|&nans| {
                with_nans(nans + k / 4 + n / 3, &mut |_, i| {
                    if i < nans {
                        nan_value(i)
                    } else if i < nans + k / 4 {
                        f32::INFINITY
                    } else {
                        f32::NEG_INFINITY
                    }
                })
            })
            .collect();
        push(
            format!("nan_with_infinities_n{n}"),
            batch_with_perfect_hints(inf_rows, k),
        );
        // A row of NaN only, and the hint-free path.
        let only = vec![f32::from_bits(0xffc0_0000); n];
        let few = with_nans(3, &mut { mixed });
        push(
            format!("nan_hint_free_n{n}"),
            hint_free_batch(&[only, few], k),
        );
    }
    {
        let mut rng = rng_for("denormals", k);
        let rows = (0..3).map(|_| gen_denormals(&mut rng, n)).collect();
        push(format!("denormals_n{n}"), batch_with_perfect_hints(rows, k));
    }
    {
        let mut rng = rng_for("huge_finite", k);
        let rows = (0..3).map(|_| gen_huge_finite(&mut rng, n)).collect();
        push(
            format!("huge_finite_above_pad_sentinel_n{n}"),
            batch_with_perfect_hints(rows, k),
        );
    }

    // Lengths: short rows, the n = k boundary, zero-length rows, odd widths, large rows.
    let mut lengths: Vec<usize> = vec![0, 1, k / 2, k - 1, k, k + 1, k + 3, 2 * k + 3, 8 * k + 61];
    lengths.sort_unstable();
    lengths.dedup();
    for len in lengths {
        let mut rng = rng_for(&format!("length_{len}"), k);
        let rows = (0..3).map(|_| gen_randn(&mut rng, len)).collect();
        push(format!("length_n{len}"), batch_with_perfect_hints(rows, k));
    }
    for len in [262_127usize, 262_144, 1_048_576] {
        let mut rng = rng_for(&format!("large_{len}"), k);
        let row = model_row(&mut rng, len, -2.0, 1.0);
        push(
            format!("large_n{len}"),
            batch_with_perfect_hints(vec![row], k),
        );
    }

    // Degenerate hints (must never change the answer).
    {
        let mut rng = rng_for("degenerate_hints", k);
        let row = gen_heavy_tail(&mut rng, n);
        let truth = reference_topk(&row, k);
        let half_duplicated: Vec<i32> = truth[..k / 2]
            .iter()
            .chain(truth[..k / 2].iter())
            .copied()
            .collect();
        let out_of_range: Vec<i32> = (0..k)
            .map(|i| match i % 4 {
                0 => n as i32,
                1 => n as i32 + 1000,
                2 => i32::MAX,
                _ => i32::MIN,
            })
            .collect();
        // The k smallest values: a bracket entirely below the boundary.
        let worst: Vec<i32> = {
            let negated: Vec<f32> = row.iter().map(|x| -x).collect();
            reference_topk(&negated, k)
        };
        let variants: [(&str, Vec<i32>); 7] = [
            ("all_zero", vec![0; k]),
            ("all_same", vec![(n / 2) as i32; k]),
            ("all_last", vec![n as i32 - 1; k]),
            ("half_duplicated", half_duplicated),
            ("all_minus_one", vec![-1; k]),
            ("out_of_range", out_of_range),
            ("smallest_values", worst),
        ];
        for (label, hints) in variants {
            push(
                format!("hints_{label}_n{n}"),
                uniform_batch(&[row.clone(), row.clone()], k, &[hints.clone(), hints]),
            );
        }
    }

    // Varlen / MTP batches, with zero-window and short rows.
    for cr in [1u32, 4] {
        for next_n in 1u32..=4 {
            let name = format!("varlen_next_n{next_n}_cr{cr}");
            let mut rng = rng_for(&name, k);
            let tokens = |width: usize| width as u32 * cr + next_n - 1;
            let kv_lens: Vec<u32> = vec![
                0,             // zero window
                next_n - 1,    // still zero window for row 0
                tokens(k / 2), // short rows
                tokens(k),     // n = k for the last MTP row
                tokens(k + 1),
                tokens(3 * k + 17),     // ordinary rows, odd width
                tokens(2 * k) + cr - 1, // width rounding under cr
            ];
            let longest = kv_lens
                .iter()
                .map(|&kv| kv as usize / cr as usize + 1)
                .max()
                .unwrap_or(0);
            let sources: Vec<Vec<f32>> = kv_lens
                .iter()
                .map(|_| gen_heavy_tail(&mut rng, longest))
                .collect();
            let source_refs: Vec<&[f32]> = sources.iter().map(Vec::as_slice).collect();
            if let Ok(batch) = Batch::varlen(&source_refs, &kv_lens, next_n, cr, k, None) {
                push(name, batch);
            }
        }
    }

    // Random rows shaped like each model's smallest and middle rungs.
    for model in Model::ALL {
        let (mean, std) = match model {
            Model::V32 => (-2.96, 1.68),
            Model::Flash => (-2.088, 0.728),
            Model::Pro => (-1.885, 1.025),
        };
        let rungs = grid_rungs(model);
        for &(isl, width) in [rungs[0], rungs[rungs.len() / 2]].iter() {
            let width = width as usize;
            let mut rng = rng_for(&format!("model_{model}_{isl}"), k);
            let rows = (0..4)
                .map(|_| model_row(&mut rng, width, mean, std))
                .collect();
            push(
                format!("random_{model}_{isl}_n{width}"),
                batch_with_perfect_hints(rows, k),
            );
        }
    }
    cases.extend(sampling_adversaries(k));
    cases
}

/// The suite's sampling adversaries for top-`k` (part of [`suite`]; the host
/// emulator tests run them alone): hint-free rows long enough to be sampled
/// by every family whose top values sit only where a strided sample may
/// never look, and sorted rows.
pub fn sampling_adversaries(k: usize) -> Vec<AdversarialCase> {
    let mut cases = Vec::new();
    // The top values in the second half of every block of `block` values:
    // the sample's threshold is wrong by construction, so the retry ladder and
    // fallbacks carry exactness. Hint-free: a hint would bypass the sample.
    for (len, block) in [(65_539usize, 512usize), (131_076, 4_096), (262_144, 64)] {
        let mut rng = rng_for(&format!("sample_blind_{len}"), k);
        let hidden: Vec<usize> = (0..len).filter(|&i| i % block >= block / 2).collect();
        let rows = vec![
            hidden_top_row(&mut rng, len, &hidden, hidden.len()),
            hidden_top_row(&mut rng, len, &hidden, k + k / 2),
            hidden_top_row(&mut rng, len, &hidden, k),
            {
                // Ties at the k-th value where the sample looks, the larger
                // values where it does not.
                let mut row = hidden_top_row(&mut rng, len, &hidden, k / 2);
                for (i, x) in row.iter_mut().enumerate() {
                    if i % block < block / 2 && i % 3 == 0 {
                        *x = 5.0;
                    }
                }
                row
            },
        ];
        cases.push(AdversarialCase {
            name: format!("sample_blind_block{block}_n{len}"),
            batch: hint_free_batch(&rows, k),
        });
    }
    {
        // Sorted rows: every large value at one end of the row.
        let len = 131_075;
        let mut rng = rng_for("sorted", k);
        let mut ascending = model_row(&mut rng, len, -2.0, 1.0);
        ascending.sort_unstable_by(|a, b| a.total_cmp(b));
        let descending: Vec<f32> = ascending.iter().rev().copied().collect();
        cases.push(AdversarialCase {
            name: format!("sorted_ends_n{len}"),
            batch: hint_free_batch(&[ascending, descending], k),
        });
    }
    cases
}

/// A low randn body with `count` distinct high values (10 and above) at
/// random positions of `hidden` (all of them when `count` ≥ its length).
fn hidden_top_row(rng: &mut ChaCha8Rng, n: usize, hidden: &[usize], count: usize) -> Vec<f32> {
    let mut row: Vec<f32> = (0..n)
        .map(|_| StandardNormal.sample(rng))
        .map(|x: f32| x - 5.0)
        .collect();
    let mut positions = hidden.to_vec();
    let count = count.min(positions.len());
    for i in 0..count {
        let j = rng.random_range(i..positions.len());
        positions.swap(i, j);
        row[positions[i]] = 10.0 + i as f32 * 0.001;
    }
    row
}

/// A row whose k-th largest value falls inside a cluster of values 1–2 ULP
/// apart: `k/2` distinct high values, then the cluster straddling the
/// boundary, then a low body. `variant` moves the cluster's split point.
fn ulp_boundary_row(
    rng: &mut ChaCha8Rng,
    n: usize,
    k: usize,
    ulps: u32,
    variant: usize,
) -> Vec<f32> {
    let base = 1.0f32 + variant as f32 * 0.25;
    let mut cluster = vec![base];
    for _ in 0..ulps {
        let last = *cluster.last().unwrap_or(&base);
        cluster.push(last.next_up());
    }
    let high = k / 2;
    let cluster_len = (k + 64 * (variant + 1)).min(n - high);
    let mut row = Vec::with_capacity(n);
    for i in 0..high {
        row.push(10.0 + i as f32 * 0.001);
    }
    for i in 0..cluster_len {
        row.push(cluster[i % cluster.len()]);
    }
    while row.len() < n {
        row.push(-1.0 - rng.random::<f32>());
    }
    shuffle(rng, &mut row);
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suite_is_deterministic_with_unique_names() {
        let a = suite(512);
        let b = suite(512);
        assert_eq!(a.len(), b.len());
        let mut names: Vec<&str> = a.iter().map(|c| c.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), a.len(), "duplicate case names");
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.name, y.name);
            // Compare bits: NaN rows compare unequal as floats.
            let bits = |c: &AdversarialCase| {
                c.batch
                    .logits
                    .iter()
                    .map(|v| v.to_bits())
                    .collect::<Vec<_>>()
            };
            assert_eq!(bits(x), bits(y), "{}", x.name);
        }
    }

    #[test]
    fn generators_handle_any_length() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for g in row_generators() {
            for n in [0, 1, 3, 100] {
                assert_eq!((g.generate)(&mut rng, n).len(), n, "{}", g.name);
            }
        }
    }
}
