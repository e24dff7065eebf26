//! Randomized certification batches (`certify --soak`): inputs nobody wrote
//! by hand. Each batch is a pure function of its seed and K, so a failure
//! names one seed and `--soak 1 --soak-seed SEED` replays exactly that batch.
//!
//! A batch draws a batch size and one row length (batch-uniform, as the
//! suite), up to four distinct rows replicated to the batch size, each row
//! from a certify generator with a hazard laid over it, and a hint list per
//! row in one of [`HINT_MODES`].

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::adversarial::{row_generators, uniform_batch, AdversarialCase};
use super::reference_topk;
use crate::grid::Batch;

/// Batch sizes a soak batch draws from (the grid's range, both ends).
const BATCH_SIZES: [usize; 8] = [1, 2, 4, 8, 16, 64, 256, 1024];

/// Longest row a soak batch draws: the grid's widest N plus a ragged tail.
const MAX_SOAK_N: usize = 262_144 + 67;

/// Bound on `rows × npad` of one batch (64 MiB of logits), so CPU arms and
/// the reference stay quick on the largest batch sizes.
const MAX_SOAK_VALUES: usize = 1 << 24;

/// The hazards [`hazard_row`] lays over a generator's row.
pub const HAZARDS: [&str; 9] = [
    "plain",
    "ties_at_threshold",
    "pos_inf_near_k",
    "neg_inf_tail_near_k",
    "strided_spikes",
    "sorted_ascending",
    "sorted_descending",
    "few_levels",
    "max_finite_extremes",
];

/// Hint lists a row may carry: its exact top-K, random indices, none (all
/// −1), out-of-range junk, one repeated index.
pub const HINT_MODES: [&str; 5] = ["perfect", "random", "absent", "junk", "degenerate"];

/// A row of length `n` for top-`k`: one of the certify generators, then one
/// of [`HAZARDS`] over it — ties planted at the row's k-th value, +inf
/// values or a −inf tail sized within one of k, large values on a stride a
/// strided sample can miss, sorted orders, a handful of levels, ±max finite
/// values. Returns a label naming both, and the row.
pub fn hazard_row(rng: &mut ChaCha8Rng, n: usize, k: usize) -> (String, Vec<f32>) {
    let gens = row_generators();
    let g = &gens[rng.random_range(0..gens.len())];
    let mut row = (g.generate)(rng, n);
    let hazard = HAZARDS[rng.random_range(0..HAZARDS.len())];
    let near_k = |rng: &mut ChaCha8Rng| (k + rng.random_range(0..3)).saturating_sub(1);
    match hazard {
        "ties_at_threshold" if n > k && k > 0 => {
            let mut sorted = row.clone();
            sorted.sort_unstable_by(|a, b| b.total_cmp(a));
            let kth = sorted[k - 1];
            for _ in 0..rng.random_range(1..=n.div_ceil(4)) {
                let i = rng.random_range(0..n);
                row[i] = kth;
            }
        }
        "pos_inf_near_k" if n > 0 => {
            for _ in 0..near_k(rng).min(n) {
                let i = rng.random_range(0..n);
                row[i] = f32::INFINITY;
            }
        }
        "neg_inf_tail_near_k" => {
            let finite = near_k(rng).min(n);
            row[finite..].fill(f32::NEG_INFINITY);
        }
        "strided_spikes" => {
            let stride = 1usize << rng.random_range(1..=10);
            let offset = rng.random_range(0..stride);
            for x in row.iter_mut().skip(offset).step_by(stride) {
                *x = 1e30 + x.abs().min(1e29);
            }
        }
        "sorted_ascending" => row.sort_unstable_by(|a, b| a.total_cmp(b)),
        "sorted_descending" => row.sort_unstable_by(|a, b| b.total_cmp(a)),
        "few_levels" => {
            let levels = rng.random_range(1..=8u32);
            for x in &mut row {
                *x = rng.random_range(0..levels) as f32 - 4.0;
            }
        }
        "max_finite_extremes" if n > 0 => {
            for _ in 0..rng.random_range(0..=n.min(2 * k)) {
                let i = rng.random_range(0..n);
                row[i] = if rng.random::<bool>() {
                    f32::MAX
                } else {
                    -f32::MAX
                };
            }
        }
        _ => {}
    }
    (format!("{}+{hazard}", g.name), row)
}

/// The hint list of one row in `mode` (one of [`HINT_MODES`]), `k` entries.
pub fn hints_for(row: &[f32], k: usize, mode: &str, rng: &mut ChaCha8Rng) -> Vec<i32> {
    let n = row.len().max(1);
    match mode {
        "perfect" => reference_topk(row, k),
        "random" => (0..k).map(|_| rng.random_range(0..n as i32)).collect(),
        "absent" => vec![-1; k],
        "junk" => (0..k)
            .map(|i| if i % 2 == 0 { n as i32 + i as i32 } else { -5 })
            .collect(),
        "degenerate" => vec![0; k],
        other => panic!("unknown hint mode {other:?}; expected one of {HINT_MODES:?}"),
    }
}

/// The soak batch of `seed` for top-`k`, named by its seed and contents:
/// one in four a varlen (MTP) batch, the others batch-uniform.
pub fn soak_case(seed: u64, k: usize) -> AdversarialCase {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ ((k as u64) << 40));
    if rng.random_range(0..4) == 0 {
        let limits = VarlenLimits {
            requests: 64,
            width: MAX_SOAK_N,
        };
        return varlen_case(&mut rng, seed, k, limits);
    }
    let rows = BATCH_SIZES[rng.random_range(0..BATCH_SIZES.len())];
    let n = soak_width(&mut rng, k, MAX_SOAK_N);
    let longest_fitting = (MAX_SOAK_VALUES / rows).saturating_sub(64);
    let n = n.min(longest_fitting);
    let distinct = rows.min(4);
    let mut labels = Vec::with_capacity(distinct);
    let mut distinct_rows = Vec::with_capacity(distinct);
    let mut distinct_hints = Vec::with_capacity(distinct);
    for _ in 0..distinct {
        let (label, row) = hazard_row(&mut rng, n, k);
        let mode = HINT_MODES[rng.random_range(0..HINT_MODES.len())];
        distinct_hints.push(hints_for(&row, k, mode, &mut rng));
        labels.push(format!("{label}/{mode}"));
        distinct_rows.push(row);
    }
    // Rows r and r + distinct are copies (the batch size sizes the launch).
    let row_refs: Vec<&[f32]> = (0..rows)
        .map(|r| distinct_rows[r % distinct].as_slice())
        .collect();
    let hint_refs: Vec<&[i32]> = (0..rows)
        .map(|r| distinct_hints[r % distinct].as_slice())
        .collect();
    AdversarialCase {
        name: format!("soak seed {seed} B={rows} n={n} [{}]", labels.join(", ")),
        batch: uniform_batch(&row_refs, k, &hint_refs),
    }
}

/// A row width drawn log-uniform up to `max` (exclusive), one in eight short
/// (n ≤ k + 4, the n = k boundary included).
fn soak_width(rng: &mut ChaCha8Rng, k: usize, max: usize) -> usize {
    match rng.random_range(0..8) {
        0 => rng.random_range(0..=k + 4),
        _ => (rng.random_range(0.0..(max.max(2) as f64).ln())).exp() as usize,
    }
}

/// Bounds of a varlen soak batch: at most `requests` requests whose last
/// rows are narrower than `width`.
#[derive(Debug, Clone, Copy)]
pub struct VarlenLimits {
    pub requests: usize,
    pub width: usize,
}

/// A varlen batch under the production contract, named like [`soak_case`]'s
/// batches: 1 to `limits.requests` requests of `next_n` 1–4 rows, compress
/// ratio 1 or 4, one in eight requests a zero window, each request's source
/// row a hazard row, each batch row a hint list of its own. (`certify
/// --soak` draws it with the grid's bounds; the host emulators with their
/// small CTAs' bounds.)
pub fn varlen_case(
    rng: &mut ChaCha8Rng,
    seed: u64,
    k: usize,
    limits: VarlenLimits,
) -> AdversarialCase {
    let requests = rng.random_range(1..=limits.requests.max(1));
    let next_n = rng.random_range(1..=4u32);
    let cr = [1u32, 4][rng.random_range(0..2)];
    let rows = requests * next_n as usize;
    let longest_fitting = (MAX_SOAK_VALUES / rows).saturating_sub(64);
    let widths: Vec<usize> = (0..requests)
        .map(|_| {
            if rng.random_range(0..8) == 0 {
                0
            } else {
                soak_width(rng, k, limits.width).min(longest_fitting)
            }
        })
        .collect();
    // A KV length whose last MTP row is `width` wide (plus a remainder the
    // compress ratio drops); the request's earlier rows are narrower.
    let kv_lens: Vec<u32> = widths
        .iter()
        .map(|&w| w as u32 * cr + rng.random_range(0..cr))
        .collect();
    let mut labels = Vec::with_capacity(requests);
    let mut sources = Vec::with_capacity(requests);
    for &w in &widths {
        let (label, row) = hazard_row(rng, w, k);
        labels.push(label);
        sources.push(row);
    }
    let n: Vec<u32> = (0..rows)
        .map(|r| Batch::varlen_row_len(kv_lens[r / next_n as usize], next_n, r, cr))
        .collect();
    let mut hints = Vec::with_capacity(rows * k);
    for (r, &len) in n.iter().enumerate() {
        let mode = HINT_MODES[rng.random_range(0..HINT_MODES.len())];
        let source = &sources[r / next_n as usize];
        hints.extend(hints_for(&source[..len as usize], k, mode, rng));
    }
    let source_refs: Vec<&[f32]> = sources.iter().map(Vec::as_slice).collect();
    let batch = Batch::varlen(&source_refs, &kv_lens, next_n, cr, k, Some(&hints))
        .expect("soak varlen batches keep the varlen contract");
    let widest = widths.iter().max().copied().unwrap_or(0);
    AdversarialCase {
        name: format!(
            "soak seed {seed} varlen requests={requests} next_n={next_n} cr={cr} widest={widest} [{}]",
            labels.join(", ")
        ),
        batch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn a_seed_always_gives_the_same_batch() {
        // Bitwise: NaN rows compare unequal as floats.
        let bits = |c: &AdversarialCase| {
            let b = &c.batch;
            let logits: Vec<u32> = b.logits.iter().map(|x| x.to_bits()).collect();
            (
                c.name.clone(),
                logits,
                b.n.clone(),
                b.hints.clone(),
                b.varlen.clone(),
            )
        };
        for seed in [0u64, 7, 1 << 40] {
            assert_eq!(bits(&soak_case(seed, 512)), bits(&soak_case(seed, 512)));
        }
        assert_ne!(soak_case(3, 512).batch, soak_case(4, 512).batch);
        assert_ne!(soak_case(3, 512).batch, soak_case(3, 1024).batch);
    }

    #[test]
    fn batches_keep_the_batch_contract() {
        for seed in 0..60 {
            for k in [512usize, 2048] {
                let case = soak_case(seed, k);
                let b = &case.batch;
                assert!(case.name.starts_with(&format!("soak seed {seed} ")));
                assert_eq!(b.logits.len(), b.rows * b.npad, "{}", case.name);
                assert_eq!(b.hints.len(), b.rows * k, "{}", case.name);
                assert!(b.npad.is_multiple_of(64) && b.npad > 0, "{}", case.name);
                assert!(b.rows * b.npad <= MAX_SOAK_VALUES, "{}", case.name);
                if let Some(v) = &b.varlen {
                    assert!(case.name.contains(" varlen "), "{}", case.name);
                    assert_eq!(b.rows, v.kv_lens.len() * v.next_n as usize);
                    for r in 0..b.rows {
                        let kv = v.kv_lens[r / v.next_n as usize];
                        let want = Batch::varlen_row_len(kv, v.next_n, r, v.compress_ratio);
                        assert_eq!(b.n[r], want, "{} row {r}", case.name);
                    }
                    continue;
                }
                let n = b.n[0] as usize;
                assert!(b.n.iter().all(|&m| m as usize == n) && n <= b.npad);
                for r in 0..b.rows {
                    let pad = &b.logits[r * b.npad + n..(r + 1) * b.npad];
                    assert!(
                        pad.iter()
                            .all(|&x| x == crate::exact::adversarial::ADVERSARIAL_PAD),
                        "{}",
                        case.name
                    );
                }
            }
        }
    }

    #[test]
    fn a_few_hundred_seeds_cover_every_hazard_mode_and_size() {
        let (mut hazards, mut modes, mut sizes) = (HashSet::new(), HashSet::new(), HashSet::new());
        let (mut short, mut long, mut varlen, mut zero_window) = (false, false, 0, false);
        for seed in 0..400 {
            let case = soak_case(seed, 512);
            if let Some(v) = &case.batch.varlen {
                varlen += 1;
                zero_window |= v.kv_lens.contains(&0);
                continue;
            }
            for h in HAZARDS {
                if case.name.contains(&format!("+{h}/")) {
                    hazards.insert(h);
                }
            }
            for m in HINT_MODES {
                if case.name.contains(&format!("/{m}")) {
                    modes.insert(m);
                }
            }
            sizes.insert(case.batch.rows);
            let n = case.batch.n[0] as usize;
            short |= n <= 512;
            long |= n > 100_000;
        }
        assert_eq!(hazards.len(), HAZARDS.len(), "{hazards:?}");
        assert_eq!(modes.len(), HINT_MODES.len(), "{modes:?}");
        assert_eq!(sizes.len(), BATCH_SIZES.len(), "{sizes:?}");
        assert!(short && long);
        assert!(
            (60..140).contains(&varlen) && zero_window,
            "{varlen} varlen"
        );
    }

    #[test]
    fn hazards_do_what_they_say() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for _ in 0..300 {
            let (label, row) = hazard_row(&mut rng, 3_000, 100);
            assert_eq!(row.len(), 3_000);
            let hazard = label.split('+').nth(1).unwrap();
            match hazard {
                "neg_inf_tail_near_k" => {
                    // At most k + 1 values before a −inf tail.
                    assert!(
                        row[101..].iter().all(|x| *x == f32::NEG_INFINITY),
                        "{label}"
                    );
                }
                "sorted_ascending" => {
                    assert!(
                        row.windows(2).all(|w| w[0].total_cmp(&w[1]).is_le()),
                        "{label}"
                    )
                }
                "sorted_descending" => {
                    assert!(
                        row.windows(2).all(|w| w[0].total_cmp(&w[1]).is_ge()),
                        "{label}"
                    )
                }
                "few_levels" => {
                    let levels: HashSet<u32> = row.iter().map(|x| x.to_bits()).collect();
                    assert!(levels.len() <= 8, "{label}");
                }
                _ => {}
            }
        }
    }
}
