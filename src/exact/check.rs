//! The tie-aware exactness checker (docs/method.md, "What \"exact\" means").
//!
//! A row of length `n` is exact when:
//! * `n <= k` (short row): slots `0..n` hold a permutation of `0..n` (any
//!   order) and slots `n..k` hold `-1`;
//! * `n > k`: the `k` indices are unique, all in `[0, n)`, and the multiset of
//!   gathered values (signed zeros merged, compared bitwise) equals the
//!   multiset of the row's `k` largest values. Tied values are
//!   interchangeable, so index identity is never required.
//!
//! The value test avoids sorting the row: with `T` the k-th largest key and
//! `G` the number of row values strictly above `T`, a set of `k` unique
//! in-range indices has the top-k value multiset iff every selected key is
//! `>= T` and exactly `G` selected keys are `> T` (a subset of the `G`
//! above-threshold positions of the same size is all of them; the rest are
//! ties at `T`). The fast path needs no selection at all: taking `T` to be
//! the smallest *selected* key, the same count test holds iff the answer is
//! exact, so a correct row costs one streaming pass. Only a wrong row pays
//! for a `select_nth_unstable` to find the true `T` for the message.
//!
//! NaN contract (torch.topk's order): every NaN, of either sign and any
//! payload, ranks above +inf, and NaNs tie with each other (see
//! [`order_key`]), so any choice among NaNs at the boundary is exact.

use rayon::prelude::*;

use super::{ExactStatus, UNWRITTEN};
use crate::grid::Batch;
use crate::reference::order_key;

/// Check one row's output against the tie-aware rule. `row` is the valid
/// prefix (length `n`), `out` the row's `k` output slots.
pub fn check_row(row: &[f32], k: usize, out: &[i32]) -> Result<(), String> {
    let mut scratch = Scratch::default();
    check_row_with(&mut scratch, row, k, out)
}

/// Check every row of `batch` against `out` (`[rows, k]` row-major).
///
/// An unwritten slot anywhere takes precedence (it means the arm skipped
/// work, which is a different failure from a wrong answer); otherwise rows
/// are checked in parallel and the first bad row by index is reported.
pub fn check_batch(batch: &Batch, out: &[i32]) -> ExactStatus {
    if let Some(verdict) = precheck(batch, out) {
        return verdict;
    }
    let k = batch.k;
    first_bad_row(batch.rows, |scratch, r| {
        check_row_with(scratch, batch.row(r), k, &out[r * k..(r + 1) * k])
    })
}

/// Verdicts decided before any row is looked at: a malformed output or
/// batch, or an unwritten slot (it means the arm skipped work, a different
/// failure from a wrong answer, so it takes precedence).
fn precheck(batch: &Batch, out: &[i32]) -> Option<ExactStatus> {
    let k = batch.k;
    let expected = batch.rows * k;
    if out.len() != expected {
        return Some(ExactStatus::Failed {
            message: format!(
                "output has {} slots, expected rows·k = {}·{} = {expected}",
                out.len(),
                batch.rows,
                k
            ),
        });
    }
    if batch.n.len() != batch.rows || batch.logits.len() < batch.rows * batch.npad {
        return Some(ExactStatus::Failed {
            message: format!(
                "malformed batch: {} rows, {} lengths, {} logits for npad {}",
                batch.rows,
                batch.n.len(),
                batch.logits.len(),
                batch.npad
            ),
        });
    }
    if let Some(pos) = out.iter().position(|&v| v == UNWRITTEN) {
        return Some(ExactStatus::Unwritten {
            row: pos / k.max(1),
            slot: pos % k.max(1),
        });
    }
    if let Some(r) = batch.n.iter().position(|&n| n as usize > batch.npad) {
        return Some(ExactStatus::Failed {
            message: format!("row {r}: length {} exceeds npad {}", batch.n[r], batch.npad),
        });
    }
    None
}

/// Check rows in parallel; the first bad row by index is reported.
fn first_bad_row(
    rows: usize,
    check: impl Fn(&mut Scratch, usize) -> Result<(), String> + Sync,
) -> ExactStatus {
    let first_bad = (0..rows)
        .into_par_iter()
        .map_init(Scratch::default, |scratch, r| {
            check(scratch, r).err().map(|reason| (r, reason))
        })
        .find_map_first(|bad| bad);
    match first_bad {
        Some((row, reason)) => ExactStatus::Wrong { row, reason },
        None => ExactStatus::Exact,
    }
}

/// The k-th largest key `kth_key` of a row (n > k) and how many of the
/// row's values lie strictly above it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowThreshold {
    pub kth_key: u32,
    pub above: usize,
}

/// The threshold of a row, `None` for a short row (n <= k) or k = 0.
pub fn row_threshold(row: &[f32], k: usize) -> Option<RowThreshold> {
    if k == 0 || row.len() <= k {
        return None;
    }
    let mut keys: Vec<u32> = row.iter().map(|&x| order_key(x)).collect();
    let (above, &mut kth_key, _) = keys.select_nth_unstable_by(k - 1, |a, b| b.cmp(a));
    let above = above.iter().filter(|&&key| key > kth_key).count();
    Some(RowThreshold { kth_key, above })
}

/// Checks the outputs of every arm of one case against a batch whose rows
/// repeat with period `period` (`Batch::row_period`: replicated rows).
///
/// The one O(n) step per row, finding the row's threshold, is done once per
/// *distinct* row and shared by all outputs checked against this batch;
/// each row of each output then costs O(k log k): with `T` the row's k-th
/// largest key and `G` the count of values above it, k unique in-range
/// indices are exact iff every selected key is `>= T` and exactly `G` are
/// `> T` (the module docs' argument). A B = 1024 replicated batch of
/// N = 262K rows is one selection over N instead of 1024 passes per arm.
pub struct PeriodicCheck {
    batch: std::sync::Arc<Batch>,
    period: usize,
    thresholds: std::sync::OnceLock<Vec<Option<RowThreshold>>>,
}

impl PeriodicCheck {
    /// `period`: the caller's claim that row `r` equals row `r mod period`;
    /// verified (`Batch::repeats_with_period`), and a claim the rows do not
    /// keep falls back to one threshold per row (still exact, just slower).
    pub fn new(batch: std::sync::Arc<Batch>, period: usize) -> PeriodicCheck {
        let period = if batch.repeats_with_period(period) {
            period
        } else {
            batch.rows.max(1)
        };
        PeriodicCheck {
            batch,
            period,
            thresholds: std::sync::OnceLock::new(),
        }
    }

    pub fn batch(&self) -> &std::sync::Arc<Batch> {
        &self.batch
    }

    /// Rows whose threshold is computed (the distinct rows).
    pub fn period(&self) -> usize {
        self.period
    }

    /// Same verdict as [`check_batch`] on this batch.
    pub fn check(&self, out: &[i32]) -> ExactStatus {
        let batch = &*self.batch;
        if let Some(verdict) = precheck(batch, out) {
            return verdict;
        }
        let k = batch.k;
        let thresholds = self.thresholds.get_or_init(|| {
            (0..self.period.min(batch.rows))
                .into_par_iter()
                .map(|r| row_threshold(batch.row(r), k))
                .collect()
        });
        first_bad_row(batch.rows, |scratch, r| {
            let row = batch.row(r);
            let slots = &out[r * k..(r + 1) * k];
            match thresholds.get(r % self.period).copied().flatten() {
                Some(threshold) => check_row_against(scratch, row, k, slots, threshold),
                None => check_row_with(scratch, row, k, slots),
            }
        })
    }
}

/// A long row (n > k) checked against its known threshold in O(k log k).
fn check_row_against(
    scratch: &mut Scratch,
    row: &[f32],
    k: usize,
    out: &[i32],
    threshold: RowThreshold,
) -> Result<(), String> {
    let n = row.len();
    if out.len() != k || n <= k {
        return check_row_with(scratch, row, k, out);
    }
    for (slot, &idx) in out.iter().enumerate() {
        if idx < 0 || idx as usize >= n {
            return Err(format!("slot {slot}: index {idx} out of range [0, {n})"));
        }
    }
    if !all_distinct(&mut scratch.seen, n, out) {
        // The sort-based check names the duplicate (failure path only).
        check_unique(scratch, out)?;
    }
    let mut selected_above = 0usize;
    for &idx in out {
        let key = order_key(row[idx as usize]);
        if key < threshold.kth_key {
            return diagnose_with_selection(scratch, row, k, out);
        }
        selected_above += usize::from(key > threshold.kth_key);
    }
    if selected_above == threshold.above {
        Ok(())
    } else {
        diagnose_with_selection(scratch, row, k, out)
    }
}

/// `diagnose_values` needs `scratch.selected` (the sorted selection) that
/// the bitmap test does not build: build it first (failure path only).
fn diagnose_with_selection(
    scratch: &mut Scratch,
    row: &[f32],
    k: usize,
    out: &[i32],
) -> Result<(), String> {
    check_unique(scratch, out)?;
    diagnose_values(scratch, row, k, out)
}

/// Whether the in-range indices `out` (all `< n`) are pairwise distinct, in
/// O(k) with a bitmap over `[0, n)` that is left all-clear afterwards.
fn all_distinct(seen: &mut Vec<u64>, n: usize, out: &[i32]) -> bool {
    let words = n.div_ceil(64);
    if seen.len() < words {
        seen.resize(words, 0);
    }
    let mut distinct = true;
    let mut marked = 0;
    for &idx in out {
        let (word, bit) = (idx as usize / 64, 1u64 << (idx as usize % 64));
        if seen[word] & bit != 0 {
            distinct = false;
            break;
        }
        seen[word] |= bit;
        marked += 1;
    }
    for &idx in &out[..marked] {
        seen[idx as usize / 64] = 0;
    }
    distinct
}

/// Buffers reused across rows so a batch check does not allocate per row.
#[derive(Default)]
struct Scratch {
    /// Bitmap over a row's indices for the O(k) uniqueness test.
    seen: Vec<u64>,
    keys: Vec<u32>,
    /// (index, slot) pairs of the output, sorted by index.
    selected: Vec<(i32, usize)>,
}

fn check_row_with(scratch: &mut Scratch, row: &[f32], k: usize, out: &[i32]) -> Result<(), String> {
    let n = row.len();
    if out.len() != k {
        return Err(format!(
            "row output has {} slots, expected k = {k}",
            out.len()
        ));
    }
    if n <= k {
        return check_short_row(scratch, n, out);
    }
    for (slot, &idx) in out.iter().enumerate() {
        if idx < 0 || idx as usize >= n {
            return Err(format!("slot {slot}: index {idx} out of range [0, {n})"));
        }
    }
    check_unique(scratch, out)?;
    if k == 0 {
        return Ok(());
    }

    // Fast path, one streaming pass: with m the smallest selected key, the
    // answer is exact iff every row value above m was selected (then the
    // k-th largest is m and the rest of the selection are ties at m).
    let min_selected = out
        .iter()
        .map(|&idx| order_key(row[idx as usize]))
        .min()
        .unwrap_or(u32::MAX);
    let selected_above_min = out
        .iter()
        .filter(|&&idx| order_key(row[idx as usize]) > min_selected)
        .count();
    let row_above_min = row.iter().filter(|&&x| order_key(x) > min_selected).count();
    if row_above_min == selected_above_min {
        return Ok(());
    }
    diagnose_values(scratch, row, k, out)
}

/// Slow path for a wrong value multiset: find the true k-th largest and say
/// what is wrong relative to it.
fn diagnose_values(
    scratch: &mut Scratch,
    row: &[f32],
    k: usize,
    out: &[i32],
) -> Result<(), String> {
    scratch.keys.clear();
    scratch.keys.extend(row.iter().map(|&x| order_key(x)));
    let (above, &mut kth_key, _) = scratch.keys.select_nth_unstable_by(k - 1, |a, b| b.cmp(a));
    let row_above = above.iter().filter(|&&key| key > kth_key).count();
    let kth_value = value_of_key(row, kth_key);

    let mut selected_below = 0usize;
    let mut first_below: Option<(usize, i32)> = None;
    let mut selected_above = 0usize;
    for (slot, &idx) in out.iter().enumerate() {
        let key = order_key(row[idx as usize]);
        if key < kth_key {
            selected_below += 1;
            first_below.get_or_insert((slot, idx));
        } else if key > kth_key {
            selected_above += 1;
        }
    }
    if let Some((slot, idx)) = first_below {
        return Err(format!(
            "value multiset differs: {selected_below} selected values below the k-th largest {kth_value:e} \
             (first: slot {slot} index {idx} value {:e})",
            row[idx as usize]
        ));
    }
    if selected_above != row_above {
        // Every selected key is >= T, so some value above T was left out in
        // favour of a tie at T. Name one missing index (slow path, failure only).
        let missing = row.iter().enumerate().find(|&(i, &x)| {
            order_key(x) > kth_key
                && scratch
                    .selected
                    .binary_search_by_key(&(i as i32), |&(idx, _)| idx)
                    .is_err()
        });
        let detail = match missing {
            Some((i, &x)) => format!(" (first missing: index {i} value {x:e})"),
            None => String::new(),
        };
        return Err(format!(
            "value multiset differs: {} of the {row_above} values above the k-th largest {kth_value:e} \
             are not selected{detail}",
            row_above - selected_above
        ));
    }
    Ok(())
}

/// Short row (n <= k): a permutation of 0..n in slots 0..n, then -1.
fn check_short_row(scratch: &mut Scratch, n: usize, out: &[i32]) -> Result<(), String> {
    for (slot, &idx) in out.iter().enumerate().take(n) {
        if idx < 0 || idx as usize >= n {
            return Err(format!(
                "short row (n = {n} <= k = {}): slot {slot}: index {idx} out of range [0, {n})",
                out.len()
            ));
        }
    }
    check_unique(scratch, &out[..n])?;
    if let Some((slot, &idx)) = out.iter().enumerate().skip(n).find(|&(_, &idx)| idx != -1) {
        return Err(format!(
            "short row (n = {n} <= k = {}): slot {slot}: expected -1 after the identity, found {idx}",
            out.len()
        ));
    }
    Ok(())
}

/// Fails on the first repeated index (lowest index value); leaves
/// `scratch.selected` sorted by index for membership queries.
fn check_unique(scratch: &mut Scratch, out: &[i32]) -> Result<(), String> {
    scratch.selected.clear();
    scratch
        .selected
        .extend(out.iter().enumerate().map(|(slot, &idx)| (idx, slot)));
    scratch.selected.sort_unstable();
    for pair in scratch.selected.windows(2) {
        if pair[0].0 == pair[1].0 {
            return Err(format!(
                "duplicate index {} at slots {} and {}",
                pair[0].0, pair[0].1, pair[1].1
            ));
        }
    }
    Ok(())
}

/// A row value whose key is `key` (for messages; the key came from this row).
fn value_of_key(row: &[f32], key: u32) -> f32 {
    row.iter()
        .copied()
        .find(|&x| order_key(x) == key)
        .unwrap_or(f32::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact::reference_topk;

    #[test]
    fn accepts_reference_and_any_tie_order() {
        let row = [1.0, 5.0, 3.0, 5.0, -2.0, 3.0, 3.0];
        let k = 3;
        let reference = reference_topk(&row, k);
        assert_eq!(check_row(&row, k, &reference), Ok(()));
        // 5, 5, and any one of the three 3.0s.
        assert_eq!(check_row(&row, k, &[6, 3, 1]), Ok(()));
    }

    #[test]
    fn rejects_missing_value_above_threshold() {
        let row = [5.0, 3.0, 3.0, 3.0];
        let err = check_row(&row, 2, &[1, 2]).unwrap_err();
        assert!(err.contains("first missing: index 0"), "{err}");
    }

    #[test]
    fn rejects_value_below_threshold() {
        let row = [5.0, 4.0, 1.0, 0.5];
        let err = check_row(&row, 2, &[0, 3]).unwrap_err();
        assert!(err.contains("1 selected values below"), "{err}");
        assert!(err.contains("index 3"), "{err}");
    }

    #[test]
    fn merges_signed_zeros() {
        let row = [-0.0, 1.0, 0.0, -1.0];
        assert_eq!(check_row(&row, 2, &[1, 0]), Ok(()));
        assert_eq!(check_row(&row, 2, &[2, 1]), Ok(()));
    }

    /// Brute-force oracle: sort both value multisets and compare bitwise.
    fn oracle_exact(row: &[f32], k: usize, out: &[i32]) -> bool {
        let norm = |x: f32| order_key(x);
        let mut all: Vec<u32> = row.iter().map(|&x| norm(x)).collect();
        all.sort_unstable_by(|a, b| b.cmp(a));
        let mut picked: Vec<u32> = out.iter().map(|&i| norm(row[i as usize])).collect();
        picked.sort_unstable_by(|a, b| b.cmp(a));
        picked == all[..k]
    }

    #[test]
    fn fast_path_agrees_with_sorting_oracle_on_random_selections() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut exact_seen = 0;
        let mut wrong_seen = 0;
        for _ in 0..3000 {
            let n = rng.random_range(2..40);
            let k = rng.random_range(1..n);
            // Few distinct levels (with ±0) so ties and near-misses are common.
            let levels = [
                -0.0f32,
                0.0,
                1.0,
                1.0f32.next_up(),
                2.0,
                f32::INFINITY,
                f32::NEG_INFINITY,
            ];
            let row: Vec<f32> = (0..n)
                .map(|_| levels[rng.random_range(0..levels.len())])
                .collect();
            // A random k-subset, biased towards large values half of the time.
            let mut idx: Vec<i32> = (0..n as i32).collect();
            if rng.random_bool(0.5) {
                idx.sort_by(|&a, &b| order_key(row[b as usize]).cmp(&order_key(row[a as usize])));
                let swaps = rng.random_range(0..3);
                for _ in 0..swaps {
                    let a = rng.random_range(0..k);
                    let b = rng.random_range(k..n);
                    idx.swap(a, b);
                }
            } else {
                for i in 0..k {
                    let j = rng.random_range(i..n);
                    idx.swap(i, j);
                }
            }
            let out = &idx[..k];
            let want = oracle_exact(&row, k, out);
            let got = check_row(&row, k, out);
            assert_eq!(got.is_ok(), want, "row {row:?} k {k} out {out:?}: {got:?}");
            if want {
                exact_seen += 1;
            } else {
                wrong_seen += 1;
            }
        }
        assert!(
            exact_seen > 300 && wrong_seen > 300,
            "{exact_seen} exact / {wrong_seen} wrong"
        );
    }

    /// Random batches (few distinct levels, ties everywhere) whose rows
    /// repeat with a period, and random outputs near the true top-k: the
    /// periodic check must give exactly `check_batch`'s verdict.
    #[test]
    fn periodic_check_agrees_with_check_batch() {
        use rand::{Rng, SeedableRng};
        use std::sync::Arc;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let levels = [
            -1.0f32,
            -0.0,
            0.0,
            1.0,
            2.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ];
        let (mut exact, mut wrong) = (0, 0);
        for _ in 0..400 {
            let k = rng.random_range(1..6);
            let period = rng.random_range(1..4);
            let rows = period * rng.random_range(1..4) + rng.random_range(0..period);
            let distinct: Vec<Vec<f32>> = (0..period)
                .map(|_| {
                    let n = rng.random_range(1..20);
                    (0..n)
                        .map(|_| levels[rng.random_range(0..levels.len())])
                        .collect()
                })
                .collect();
            let batch_rows: Vec<&Vec<f32>> = (0..rows).map(|r| &distinct[r % period]).collect();
            let batch = Arc::new(Batch::from_rows(&batch_rows, 64, k, f32::MIN));
            let mut out = Vec::new();
            for row in &batch_rows {
                let mut slots = reference_topk(row, k);
                if rng.random_bool(0.3) && row.len() > k {
                    let slot = rng.random_range(0..k);
                    slots[slot] = rng.random_range(0..row.len() as i32);
                }
                out.extend(slots);
            }
            let checker = PeriodicCheck::new(Arc::clone(&batch), period);
            assert_eq!(checker.period(), period);
            let want = check_batch(&batch, &out);
            assert_eq!(
                checker.check(&out),
                want,
                "{batch_rows:?} k {k} out {out:?}"
            );
            // A second output against the same (cached) thresholds.
            assert_eq!(checker.check(&out), want);
            if want.is_exact() {
                exact += 1;
            } else {
                wrong += 1;
            }
        }
        assert!(exact > 50 && wrong > 50, "{exact} exact / {wrong} wrong");
    }

    #[test]
    fn periodic_check_distrusts_a_wrong_period() {
        use std::sync::Arc;
        // Rows differ, so period 1 is a false claim: the row-1 answer that
        // would pass against row 0's threshold must still be WRONG.
        let rows = [vec![5.0f32, 1.0, 0.0], vec![0.0f32, 1.0, 5.0]];
        let batch = Arc::new(Batch::from_rows(&rows, 64, 1, f32::MIN));
        let checker = PeriodicCheck::new(Arc::clone(&batch), 1);
        assert_eq!(checker.period(), 2);
        let out = [0, 0]; // right for row 0, wrong for row 1
        assert!(matches!(
            checker.check(&out),
            ExactStatus::Wrong { row: 1, .. }
        ));
        assert_eq!(checker.check(&[0, 2]), ExactStatus::Exact);
        // Unwritten still takes precedence, as in check_batch.
        assert!(matches!(
            checker.check(&[0, UNWRITTEN]),
            ExactStatus::Unwritten { row: 1, slot: 0 }
        ));
    }

    /// A replicated batch whose copy differs from its period row at one
    /// position no sample would look at: the period claim is dropped, the
    /// copy gets its own threshold, and an answer that is right only for
    /// the original row is WRONG on the copy.
    #[test]
    fn a_replicated_batch_is_checked_whole() {
        use std::sync::Arc;
        let n = 1000;
        let base: Vec<f32> = (0..n).map(|i| (i % 97) as f32).collect();
        for pos in [1usize, 333, 501, 998] {
            let mut copy = base.clone();
            copy[pos] = 1e6; // the copy's only top-1 value
            let rows = [&base, &base, &copy, &base];
            let batch = Arc::new(Batch::from_rows(&rows, 1024, 1, f32::MIN));
            let checker = PeriodicCheck::new(Arc::clone(&batch), 1);
            assert_eq!(checker.period(), 4, "pos {pos}");
            let top = reference_topk(&base, 1)[0];
            let out = [top, top, top, top];
            assert!(
                matches!(checker.check(&out), ExactStatus::Wrong { row: 2, .. }),
                "pos {pos}"
            );
            assert_eq!(
                checker.check(&[top, top, pos as i32, top]),
                ExactStatus::Exact
            );
        }
    }

    /// NaN contract: every NaN ranks above +inf and NaNs of any sign and
    /// payload tie with each other.
    #[test]
    fn nan_ranks_above_inf_and_nans_tie() {
        let pos = f32::NAN;
        let neg = f32::from_bits(0xffc0_0000);
        let payload = f32::from_bits(0x7f80_0001);
        let row = [
            1.0,
            f32::INFINITY,
            neg,
            2.0,
            pos,
            payload,
            f32::NEG_INFINITY,
        ];
        // Top 3 are the three NaN.
        assert!(check_row(&row, 3, &[2, 4, 5]).is_ok());
        assert!(check_row(&row, 3, &[1, 4, 5]).is_err());
        // Top 2: any two of the tied NaN.
        for pair in [[2, 4], [4, 5], [5, 2]] {
            assert!(check_row(&row, 2, &pair).is_ok(), "{pair:?}");
        }
        // Top 4: the NaN, then +inf.
        assert!(check_row(&row, 4, &[5, 1, 2, 4]).is_ok());
        assert!(check_row(&row, 4, &[5, 3, 2, 4]).is_err());
        assert_eq!(reference_topk(&row, 4)[3], 1);
    }

    #[test]
    fn bitmap_uniqueness_finds_duplicates_and_leaves_the_bitmap_clear() {
        let mut seen = Vec::new();
        assert!(all_distinct(&mut seen, 200, &[0, 63, 64, 199, 5]));
        assert!(seen.iter().all(|&w| w == 0));
        assert!(!all_distinct(&mut seen, 200, &[7, 130, 64, 130, 1]));
        assert!(seen.iter().all(|&w| w == 0));
        assert!(all_distinct(&mut seen, 10, &[]));
    }

    #[test]
    fn threshold_of_a_row_with_ties() {
        let row = [3.0f32, 5.0, 3.0, 1.0, 3.0];
        let t = row_threshold(&row, 2).unwrap();
        assert_eq!(t.kth_key, order_key(3.0));
        assert_eq!(t.above, 1);
        assert_eq!(row_threshold(&row, 5), None);
        assert_eq!(row_threshold(&row, 0), None);
    }
}
