//! Case selection: filter grid cells, cross them with batch sizes, then
//! optionally spread-sample, shard and limit. Everything is deterministic so
//! that independent processes given the same options agree on the cases.

use crate::capture::{CellMeta, Model};
use crate::error::{GvrError, Result};
use crate::grid::{Case, RowsMode, BATCH_SIZES};

/// Largest batch size accepted on the command line.
pub const MAX_BATCH: usize = 8192;

/// Which cases of a grid to run (shared by every command that takes a grid).
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct Selection {
    /// Model segments to keep: v32, flash, pro (repeatable or comma-separated; default all).
    #[arg(long = "segment", value_delimiter = ',')]
    pub segments: Vec<String>,
    /// Keep cells with N >= this.
    #[arg(long)]
    pub n_min: Option<u32>,
    /// Keep cells with N <= this.
    #[arg(long)]
    pub n_max: Option<u32>,
    /// Batch sizes, comma-separated, each in [1, 8192] (default: the 11 grid sizes 1..1024).
    #[arg(long)]
    pub batches: Option<String>,
    /// Glob on cell id, e.g. `v4_flash_*_L02` (repeatable; a cell matching any is kept).
    #[arg(long = "cells")]
    pub cell_globs: Vec<String>,
    /// Keep at most this many cases (applied last, after sampling and sharding).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Run shard I of N (0-based), e.g. `--shard 2/8`: case i of the sorted
    /// selection goes to shard i mod N, so the shards partition the cases.
    #[arg(long)]
    pub shard: Option<String>,
    /// How B rows are formed from a captured cell.
    #[arg(long, value_enum, default_value_t = RowsMode::Replicate)]
    pub rows: RowsMode,
    /// Deterministic spread sample of this many cases, covering every
    /// (model, batch size) stratum of the selection.
    #[arg(long)]
    pub sample: Option<usize>,
}

impl Default for Selection {
    fn default() -> Self {
        Selection {
            segments: Vec::new(),
            n_min: None,
            n_max: None,
            batches: None,
            cell_globs: Vec::new(),
            limit: None,
            shard: None,
            rows: RowsMode::Replicate,
            sample: None,
        }
    }
}

/// One shard of a partition: `index` in `0..count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// Parse `I/N` with `0 <= I < N`.
    pub fn parse(s: &str) -> Result<Shard> {
        let usage = |why: &str| {
            GvrError::Usage(format!(
                "--shard `{s}`: {why} (expected I/N with 0 <= I < N, e.g. 0/4)"
            ))
        };
        let (i, n) = s.split_once('/').ok_or_else(|| usage("missing `/`"))?;
        let index: usize = i
            .trim()
            .parse()
            .map_err(|_| usage("I is not a non-negative integer"))?;
        let count: usize = n
            .trim()
            .parse()
            .map_err(|_| usage("N is not a positive integer"))?;
        if count == 0 {
            return Err(usage("N must be at least 1"));
        }
        if index >= count {
            return Err(usage("I must be smaller than N"));
        }
        Ok(Shard { index, count })
    }

    /// Whether the case at position `position` of the sorted selection belongs to this shard.
    pub fn owns(&self, position: usize) -> bool {
        position % self.count == self.index
    }
}

impl Selection {
    /// The requested batch sizes (validated), or the 11 grid sizes.
    pub fn batch_sizes(&self) -> Result<Vec<usize>> {
        let Some(spec) = &self.batches else {
            return Ok(BATCH_SIZES.to_vec());
        };
        let mut sizes = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let b: usize = part.parse().map_err(|_| {
                GvrError::Usage(format!("--batches: `{part}` is not a positive integer"))
            })?;
            if b == 0 || b > MAX_BATCH {
                return Err(GvrError::Usage(format!(
                    "--batches: {b} is not in [1, {MAX_BATCH}]"
                )));
            }
            if !sizes.contains(&b) {
                sizes.push(b);
            }
        }
        if sizes.is_empty() {
            return Err(GvrError::Usage("--batches: no batch size given".into()));
        }
        sizes.sort_unstable();
        Ok(sizes)
    }

    /// The requested model segments (validated); empty means all.
    pub fn models(&self) -> Result<Vec<Model>> {
        let mut models = Vec::new();
        for s in self
            .segments
            .iter()
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
        {
            let m = Model::parse(s).ok_or_else(|| {
                GvrError::Usage(format!(
                    "--segment: unknown segment `{s}` (expected v32, flash or pro)"
                ))
            })?;
            if !models.contains(&m) {
                models.push(m);
            }
        }
        Ok(models)
    }

    /// The parsed `--shard`, if any.
    pub fn parsed_shard(&self) -> Result<Option<Shard>> {
        self.shard.as_deref().map(Shard::parse).transpose()
    }

    fn cell_patterns(&self) -> Result<Vec<glob::Pattern>> {
        self.cell_globs
            .iter()
            .map(|g| {
                glob::Pattern::new(g)
                    .map_err(|e| GvrError::Usage(format!("--cells: bad glob `{g}`: {e}")))
            })
            .collect()
    }
}

/// Select the cases of `cells` described by `sel`, ordered by model, N,
/// layer, B (cell id breaks remaining ties).
///
/// Order of operations: filter cells (segment, N range, glob) → cross with
/// batch sizes → sort → `--sample` → `--shard` → `--limit`. Sampling before
/// sharding makes the shards partition the sample.
pub fn select(cells: &[CellMeta], sel: &Selection) -> Result<Vec<Case>> {
    let models = sel.models()?;
    let batches = sel.batch_sizes()?;
    let patterns = sel.cell_patterns()?;
    let shard = sel.parsed_shard()?;
    if let (Some(lo), Some(hi)) = (sel.n_min, sel.n_max) {
        if lo > hi {
            return Err(GvrError::Usage(format!(
                "--n-min {lo} is larger than --n-max {hi}"
            )));
        }
    }
    if sel.limit == Some(0) {
        return Err(GvrError::Usage("--limit must be at least 1".into()));
    }
    if sel.sample == Some(0) {
        return Err(GvrError::Usage("--sample must be at least 1".into()));
    }

    let keep = |c: &CellMeta| {
        (models.is_empty() || models.contains(&c.model))
            && sel.n_min.is_none_or(|lo| c.n >= lo)
            && sel.n_max.is_none_or(|hi| c.n <= hi)
            && (patterns.is_empty() || patterns.iter().any(|p| p.matches(&c.id)))
    };
    let mut cases: Vec<Case> = cells
        .iter()
        .filter(|c| keep(c))
        .flat_map(|c| batches.iter().map(move |&b| Case { cell: c.clone(), b }))
        .collect();
    sort_cases(&mut cases);

    if let Some(n) = sel.sample {
        cases = spread_sample(cases, n);
    }
    if let Some(shard) = shard {
        cases = cases
            .into_iter()
            .enumerate()
            .filter(|(i, _)| shard.owns(*i))
            .map(|(_, c)| c)
            .collect();
    }
    if let Some(limit) = sel.limit {
        cases.truncate(limit);
    }
    Ok(cases)
}

/// The canonical case order: model, N, layer, B, then cell id.
pub fn sort_cases(cases: &mut [Case]) {
    cases.sort_by(|a, b| {
        (a.cell.model, a.cell.n, a.cell.layer, a.b, &a.cell.id).cmp(&(
            b.cell.model,
            b.cell.n,
            b.cell.layer,
            b.b,
            &b.cell.id,
        ))
    });
}

/// A deterministic sample of `want` cases spread over the selection.
///
/// Cases are grouped into (model, B) strata. Each stratum first gets one
/// case (when `want` allows), the rest is shared in proportion to stratum
/// size (largest remainder). Inside a stratum (sorted by N, layer) the picks
/// are evenly spaced, with a per-stratum phase so that different batch sizes
/// of one model land on different layers. Input must be sorted; output is
/// sorted.
pub fn spread_sample(cases: Vec<Case>, want: usize) -> Vec<Case> {
    if want >= cases.len() {
        return cases;
    }
    // Strata in first-appearance order over the sorted cases.
    let mut strata: Vec<((Model, usize), Vec<usize>)> = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let key = (c.cell.model, c.b);
        match strata.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(i),
            None => strata.push((key, vec![i])),
        }
    }
    strata.sort_by_key(|(k, _)| *k);

    let quotas = allocate_quotas(
        &strata.iter().map(|(_, m)| m.len()).collect::<Vec<_>>(),
        want,
    );
    let mut picked: Vec<usize> = Vec::with_capacity(want);
    for (stratum_index, ((_, members), quota)) in strata.iter().zip(quotas).enumerate() {
        if quota == 0 {
            continue;
        }
        let size = members.len();
        let step = size as f64 / quota as f64;
        // Phase in [0, step): differs per stratum, stays below one step so
        // the picks remain evenly spaced and distinct.
        let phase = step * (((stratum_index * 7) % 11) as f64 + 0.5) / 11.0;
        for j in 0..quota {
            let pos = ((phase + j as f64 * step) as usize).min(size - 1);
            picked.push(members[pos]);
        }
    }
    picked.sort_unstable();
    picked.dedup();
    let mut cases: Vec<Option<Case>> = cases.into_iter().map(Some).collect();
    picked.into_iter().filter_map(|i| cases[i].take()).collect()
}

/// Split `want` picks over strata of the given sizes: one each first (while
/// `want` allows), the rest proportional to size by largest remainder, never
/// more than a stratum holds.
fn allocate_quotas(sizes: &[usize], want: usize) -> Vec<usize> {
    let total: usize = sizes.iter().sum();
    let want = want.min(total);
    let mut quotas = vec![0usize; sizes.len()];
    let mut left = want;
    for (q, &s) in quotas.iter_mut().zip(sizes) {
        if left > 0 && s > 0 {
            *q = 1;
            left -= 1;
        }
    }
    while left > 0 {
        let room: usize = sizes.iter().zip(&quotas).map(|(s, q)| s - q).sum();
        if room == 0 {
            break;
        }
        let budget = left;
        let mut shares: Vec<(usize, f64)> = Vec::new();
        for (i, (&s, q)) in sizes.iter().zip(quotas.iter_mut()).enumerate() {
            let exact = budget as f64 * (s - *q) as f64 / room as f64;
            let whole = (exact.floor() as usize).min(s - *q).min(left);
            *q += whole;
            left -= whole;
            shares.push((i, exact - exact.floor()));
        }
        // Largest fractional parts get the remainder; ties go to the earlier stratum.
        shares.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        for (i, _) in shares {
            if left == 0 {
                break;
            }
            if quotas[i] < sizes[i] {
                quotas[i] += 1;
                left -= 1;
            }
        }
    }
    quotas
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotas_sum_to_want_and_respect_sizes() {
        let sizes = [427, 189, 270, 3, 0];
        for want in [0, 1, 4, 5, 100, 600, 889] {
            let q = allocate_quotas(&sizes, want);
            assert_eq!(q.iter().sum::<usize>(), want.min(889), "want {want}");
            assert!(q.iter().zip(&sizes).all(|(q, s)| q <= s));
        }
        assert_eq!(allocate_quotas(&sizes, 4), vec![1, 1, 1, 1, 0]);
    }

    #[test]
    fn shard_parse_rejects_bad_specs() {
        assert_eq!(Shard::parse("2/8").unwrap(), Shard { index: 2, count: 8 });
        for bad in ["8/8", "1/0", "x/2", "3", "-1/2", ""] {
            assert!(
                matches!(Shard::parse(bad), Err(GvrError::Usage(_))),
                "{bad}"
            );
        }
    }
}
