//! `gvr-bench capture inspect DIR`: a summary of a capture set.
//!
//! Loads each cell through the validating loader (one at a time, so a large
//! set never sits in memory at once) and reports per-cell — or per-model when
//! there are more than [`PER_CELL_LIMIT`] cells — value statistics of the
//! valid prefixes and the hint overlap (temporal hit rate).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use rayon::prelude::*;

use super::format::{CellData, Model, Source};
/// Re-exported for callers that think of "load everything" as inspection.
pub use super::load::load_all;
use super::load::CaptureSet;
use crate::error::Result;

/// Above this many cells the table is aggregated per model.
pub const PER_CELL_LIMIT: usize = 40;

/// Running statistics over the valid prefixes of one or more cells.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CellSummary {
    pub cells: usize,
    pub steps: usize,
    pub n_min: u32,
    pub n_max: u32,
    /// Count of finite values; min/max/mean/std cover only these.
    pub finite: u64,
    pub non_finite: u64,
    /// NaN values among the non-finite ones, and the rows holding any.
    pub nan: u64,
    pub nan_rows: usize,
    pub min: f64,
    pub max: f64,
    /// Running mean and sum of squared deviations of the finite values
    /// (Welford; pooled with Chan et al.'s update), stable where
    /// sum_sq/n − mean² cancels catastrophically.
    mean: f64,
    m2: f64,
    overlap_sum: f64,
    overlap_steps: usize,
}

impl CellSummary {
    /// Statistics of one cell's valid prefixes (the pad is never read).
    pub fn of_cell(cell: &CellData) -> CellSummary {
        let mut summary = CellSummary {
            cells: 1,
            steps: cell.steps(),
            n_min: u32::MAX,
            n_max: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            ..CellSummary::default()
        };
        for s in 0..cell.steps() {
            summary.n_min = summary.n_min.min(cell.n[s]);
            summary.n_max = summary.n_max.max(cell.n[s]);
            for &v in cell.row(s) {
                if v.is_finite() {
                    let v = f64::from(v);
                    summary.finite += 1;
                    let delta = v - summary.mean;
                    summary.mean += delta / summary.finite as f64;
                    summary.m2 += delta * (v - summary.mean);
                    summary.min = summary.min.min(v);
                    summary.max = summary.max.max(v);
                } else {
                    summary.non_finite += 1;
                }
            }
        }
        (summary.nan, summary.nan_rows) = cell.nan_counts();
        let overlaps = hint_overlaps(cell);
        summary.overlap_steps = overlaps.len();
        summary.overlap_sum = overlaps.iter().sum();
        summary
    }

    /// Pool another summary into this one (per-model aggregation).
    pub fn merge(&mut self, other: &CellSummary) {
        if self.cells == 0 {
            *self = other.clone();
            return;
        }
        self.cells += other.cells;
        self.steps += other.steps;
        self.n_min = self.n_min.min(other.n_min);
        self.n_max = self.n_max.max(other.n_max);
        let (na, nb) = (self.finite as f64, other.finite as f64);
        if other.finite > 0 {
            let n = na + nb;
            let delta = other.mean - self.mean;
            self.mean += delta * nb / n;
            self.m2 += other.m2 + delta * delta * na * nb / n;
        }
        self.finite += other.finite;
        self.non_finite += other.non_finite;
        self.nan += other.nan;
        self.nan_rows += other.nan_rows;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.overlap_sum += other.overlap_sum;
        self.overlap_steps += other.overlap_steps;
    }

    pub fn mean(&self) -> Option<f64> {
        (self.finite > 0).then_some(self.mean)
    }

    /// Population standard deviation of the finite values.
    pub fn std(&self) -> Option<f64> {
        self.mean()?;
        Some((self.m2 / self.finite as f64).max(0.0).sqrt())
    }

    pub fn non_finite_fraction(&self) -> f64 {
        let total = self.finite + self.non_finite;
        if total == 0 {
            0.0
        } else {
            self.non_finite as f64 / total as f64
        }
    }

    /// Mean hint overlap over steps s ≥ 1; `None` for single-step cells.
    pub fn hint_overlap(&self) -> Option<f64> {
        (self.overlap_steps > 0).then(|| self.overlap_sum / self.overlap_steps as f64)
    }
}

/// Per-step overlap |topK(s) ∩ hints(s)| / min(K, n[s]) for s ≥ 1 (step 0's
/// hints come from before the capture). Hints of -1 and duplicates do not
/// count. With ties at the K-th value the top-K set is one valid choice
/// (lowest index first), so the number is a lower bound under ties.
pub fn hint_overlaps(cell: &CellData) -> Vec<f64> {
    let k = cell.k();
    (1..cell.steps())
        .into_par_iter()
        .map(|s| {
            let row = cell.row(s);
            let mut in_topk = vec![false; row.len()];
            let top: Vec<usize> = crate::reference::reference_topk(row, k)
                .into_iter()
                .filter_map(|i| usize::try_from(i).ok())
                .collect();
            for &i in &top {
                in_topk[i] = true;
            }
            let mut hits = 0usize;
            for &h in cell.hints(s) {
                // The loader guarantees h is -1 or < n[s]; clearing the flag
                // makes a duplicated hint count once.
                if let Ok(h) = usize::try_from(h) {
                    if let Some(flag) = in_topk.get_mut(h) {
                        if *flag {
                            hits += 1;
                            *flag = false;
                        }
                    }
                }
            }
            hits as f64 / top.len().max(1) as f64
        })
        .collect()
}

/// Human-readable summary table of the capture set in `dir`.
pub fn inspect(dir: &Path) -> Result<String> {
    let set = CaptureSet::open(dir)?;
    let mut per_cell = Vec::with_capacity(set.manifest.cells.len());
    for entry in &set.manifest.cells {
        let cell = set.load_cell(entry)?;
        per_cell.push((entry.clone(), CellSummary::of_cell(&cell)));
    }

    let mut out = String::new();
    let source = match set.manifest.source {
        Source::Synthetic => "synthetic",
        Source::Imported => "imported",
    };
    let _ = writeln!(out, "capture set: {}", dir.display());
    let _ = writeln!(
        out,
        "format_version {}  source {}  cells {}",
        set.manifest.format_version,
        source,
        per_cell.len()
    );
    if per_cell.is_empty() {
        let _ = writeln!(out, "(no cells)");
        return Ok(out);
    }

    let mut per_model: BTreeMap<Model, CellSummary> = BTreeMap::new();
    let mut all = CellSummary::default();
    for (entry, summary) in &per_cell {
        per_model
            .entry(entry.meta.model)
            .or_default()
            .merge(summary);
        all.merge(summary);
    }
    let counts: Vec<String> = per_model
        .iter()
        .map(|(model, s)| format!("{model} {}", s.cells))
        .collect();
    let _ = writeln!(out, "cells per model: {}", counts.join(", "));
    let _ = writeln!(out, "N range (all steps): {} .. {}", all.n_min, all.n_max);
    let steps_min = per_cell.iter().map(|(_, s)| s.steps).min().unwrap_or(0);
    let steps_max = per_cell.iter().map(|(_, s)| s.steps).max().unwrap_or(0);
    if steps_min == steps_max {
        let _ = writeln!(out, "steps per cell: {steps_min}");
    } else {
        let _ = writeln!(out, "steps per cell: {steps_min} .. {steps_max}");
    }
    let _ = writeln!(
        out,
        "NaN in valid prefixes: {} value(s) in {} row(s)",
        all.nan, all.nan_rows
    );
    let _ = writeln!(out);

    if per_cell.len() > PER_CELL_LIMIT {
        let _ = writeln!(out, "per model (pooled over {} cells):", per_cell.len());
        let _ = writeln!(out, "{}", header_line("model (cells)"));
        for (model, s) in &per_model {
            let label = format!("{model} ({})", s.cells);
            let _ = writeln!(out, "{}", summary_line(&label, model.k(), s));
        }
    } else {
        let _ = writeln!(out, "{}", header_line("cell"));
        for (entry, s) in &per_cell {
            let _ = writeln!(
                out,
                "{}",
                summary_line(&entry.meta.id, entry.meta.k as usize, s)
            );
        }
    }
    Ok(out)
}

fn header_line(first_column: &str) -> String {
    format!(
        "{:<28} {:>5} {:>5} {:>8} {:>8} {:>11} {:>11} {:>11} {:>11} {:>9} {:>8}",
        first_column,
        "K",
        "steps",
        "n_min",
        "n_max",
        "min",
        "max",
        "mean",
        "std",
        "nonfinite",
        "overlap"
    )
}

fn summary_line(label: &str, k: usize, s: &CellSummary) -> String {
    let num = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.4}"));
    let finite = (s.finite > 0).then_some(());
    format!(
        "{:<28} {:>5} {:>5} {:>8} {:>8} {:>11} {:>11} {:>11} {:>11} {:>9} {:>8}",
        label,
        k,
        s.steps,
        s.n_min,
        s.n_max,
        num(finite.map(|_| s.min)),
        num(finite.map(|_| s.max)),
        num(s.mean()),
        num(s.std()),
        format!("{:.2e}", s.non_finite_fraction()),
        s.hint_overlap()
            .map_or_else(|| "-".to_string(), |v| format!("{v:.4}")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::format::CellMeta;

    fn cell(rows: &[&[f32]], hints: &[&[i32]], k: usize) -> CellData {
        let npad = 64;
        let mut logits = vec![f32::MIN; rows.len() * npad];
        for (s, row) in rows.iter().enumerate() {
            logits[s * npad..s * npad + row.len()].copy_from_slice(row);
        }
        CellData {
            meta: CellMeta {
                id: "t".into(),
                model: Model::Flash,
                isl: "4k".into(),
                layer: 2,
                n: 8,
                k: k as u32,
                cr: 4,
                next_n: 1,
            },
            npad,
            pad_value: f32::MIN,
            logits,
            n: rows.iter().map(|r| r.len() as u32).collect(),
            hints: hints.iter().flat_map(|h| h.iter().copied()).collect(),
            topk: None,
            kv_lens: None,
        }
    }

    #[test]
    fn overlap_counts_hits_once_and_ignores_minus_one() {
        // K = 2. Step 1 top-2 = {0, 3}; hints {3, 3} → 1 distinct hit of 2.
        // Step 2 top-2 = {1, 2}; hints {2, -1} → 1 hit of 2.
        let c = cell(
            &[
                &[0.0, 1.0, 2.0, 3.0],
                &[9.0, 1.0, 2.0, 8.0],
                &[0.0, 7.0, 6.0, 1.0],
            ],
            &[&[0, 1], &[3, 3], &[2, -1]],
            2,
        );
        assert_eq!(hint_overlaps(&c), vec![0.5, 0.5]);
        let s = CellSummary::of_cell(&c);
        assert_eq!(s.hint_overlap(), Some(0.5));
    }

    #[test]
    fn summary_stats_cover_only_valid_prefix() {
        let c = cell(
            &[&[1.0, 3.0], &[f32::NAN, 2.0, 6.0]],
            &[&[0, 1], &[0, 1]],
            2,
        );
        let s = CellSummary::of_cell(&c);
        assert_eq!((s.n_min, s.n_max), (2, 3));
        assert_eq!((s.finite, s.non_finite), (4, 1));
        assert_eq!((s.nan, s.nan_rows), (1, 1));
        assert_eq!((s.min, s.max), (1.0, 6.0));
        assert_eq!(s.mean(), Some(3.0));
        // Values 1,3,2,6: variance = (4+0+1+9)/4 = 3.5.
        assert!((s.std().unwrap() - 3.5f64.sqrt()).abs() < 1e-12);
        assert!((s.non_finite_fraction() - 0.2).abs() < 1e-12);
    }

    #[test]
    fn merge_pools_counts_and_extremes() {
        let a = CellSummary::of_cell(&cell(&[&[1.0, 2.0], &[3.0, 4.0]], &[&[0, 1], &[0, 1]], 2));
        let b = CellSummary::of_cell(&cell(&[&[-5.0, 10.0, 0.0]], &[&[0, 1]], 2));
        let mut pooled = CellSummary::default();
        pooled.merge(&a);
        pooled.merge(&b);
        assert_eq!((pooled.cells, pooled.steps), (2, 3));
        assert_eq!((pooled.min, pooled.max), (-5.0, 10.0));
        assert!((pooled.mean().unwrap() - 15.0 / 7.0).abs() < 1e-12);
        assert_eq!((pooled.n_min, pooled.n_max), (2, 3));
        // Pooled std equals the std of all seven values at once.
        let all = CellSummary::of_cell(&cell(
            &[&[1.0, 2.0, 3.0, 4.0, -5.0, 10.0, 0.0]],
            &[&[0, 1]],
            2,
        ));
        assert!((pooled.std().unwrap() - all.std().unwrap()).abs() < 1e-12);
    }

    #[test]
    fn std_is_stable_far_from_zero() {
        // Values 2^24 + {0, 2, 4, 6} (exact in f32): std = sqrt(5), which
        // sum_sq/n − mean² loses to cancellation.
        let base = 16_777_216.0f32;
        let c = cell(
            &[&[base, base + 2.0, base + 4.0, base + 6.0]],
            &[&[0, 1]],
            2,
        );
        let s = CellSummary::of_cell(&c);
        assert!(
            (s.std().unwrap() - 5f64.sqrt()).abs() < 1e-9,
            "{:?}",
            s.std()
        );
    }
}
