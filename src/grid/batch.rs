//! Host-side batch formation: B rows built from one captured cell.

use std::path::PathBuf;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::capture::format::npad_for;
use crate::capture::CellData;
use crate::error::{GvrError, Result};

/// Pad value of batches built by [`Batch::varlen`]: −FLT_MAX, the grid
/// practice (docs/method.md, "What \"exact\" means"). Certify re-poisons with [`Batch::poison_pad`].
pub const VARLEN_PAD: f32 = f32::MIN;

/// How B rows are formed from a cell's captured steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum RowsMode {
    /// One captured row (the last usable step) replicated B times: the upstream grid.
    Replicate,
    /// Row r takes step r mod S: rows differ, as in production batches.
    Independent,
}

/// Production varlen description (docs/algorithm.md, "The varlen entry"): per-request KV lengths in
/// token space; the per-row valid length is derived from them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Varlen {
    pub kv_lens: Vec<u32>,
    pub next_n: u32,
    pub compress_ratio: u32,
}

/// What every arm receives: byte-identical across arms of a case.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    pub rows: usize,
    /// Row stride in elements (multiple of 64).
    pub npad: usize,
    pub k: usize,
    /// `[rows, npad]`; `[n_r, npad)` holds the pad value.
    pub logits: Vec<f32>,
    /// Valid length of each row.
    pub n: Vec<u32>,
    /// `[rows, k]` hints (previous step's top-K; may hold -1 or junk).
    pub hints: Vec<i32>,
    /// Set when the rows come from the varlen contract rather than a uniform n.
    pub varlen: Option<Varlen>,
}

impl Batch {
    pub fn row(&self, r: usize) -> &[f32] {
        let s = r * self.npad;
        &self.logits[s..s + self.n[r] as usize]
    }

    pub fn hints(&self, r: usize) -> &[i32] {
        &self.hints[r * self.k..(r + 1) * self.k]
    }

    /// Largest valid length in the batch.
    pub fn n_max(&self) -> usize {
        self.n.iter().copied().max().unwrap_or(0) as usize
    }

    /// Per-row valid length under the varlen contract:
    /// n_r = (kv − next_n + (r mod next_n) + 1) / cr, clamped at 0.
    pub fn varlen_row_len(kv: u32, next_n: u32, row: usize, cr: u32) -> u32 {
        let kv = kv as i64;
        let v = kv - next_n as i64 + (row as i64 % next_n as i64) + 1;
        if v <= 0 {
            0
        } else {
            (v / cr as i64) as u32
        }
    }
}

impl Batch {
    /// A batch holding `rows` as given (row r has length `rows[r].len()`),
    /// stride `npad`, the pad filled with `pad`, and no hints (all −1).
    /// For tests and generated suites.
    pub fn from_rows<R: AsRef<[f32]>>(rows: &[R], npad: usize, k: usize, pad: f32) -> Batch {
        let mut logits = vec![pad; rows.len() * npad];
        for (r, row) in rows.iter().enumerate() {
            let row = row.as_ref();
            logits[r * npad..r * npad + row.len()].copy_from_slice(row);
        }
        Batch {
            rows: rows.len(),
            npad,
            k,
            logits,
            n: rows.iter().map(|r| r.as_ref().len() as u32).collect(),
            hints: vec![-1; rows.len() * k],
            varlen: None,
        }
    }

    /// Form a batch of `b` rows from a captured cell (docs/method.md, "Cases").
    ///
    /// * `Replicate`: the last captured step (the "mature steady-state" row
    ///   the upstream grid uses) and its hints, `b` times. The capture loader
    ///   keeps only usable steps, so the last one is usable.
    /// * `Independent`: row `r` takes step `r mod S` and its hints.
    ///
    /// Row stride is the cell's `npad`; `[n_r, npad)` holds the cell's pad value.
    /// Rows are filled in parallel: a large case is up to 1 GiB, and one
    /// thread copying it (and faulting in its fresh pages) takes a good part
    /// of a second.
    pub fn form(cell: &CellData, b: usize, mode: RowsMode) -> Result<Batch> {
        use rayon::prelude::*;
        validate_cell(cell)?;
        if b == 0 {
            return Err(GvrError::Usage(format!(
                "cell {}: batch size must be at least 1",
                cell.meta.id
            )));
        }
        let steps = cell.steps();
        let k = cell.k();
        let npad = cell.npad;
        let step_of_row = |r: usize| match mode {
            RowsMode::Replicate => steps - 1,
            RowsMode::Independent => r % steps,
        };
        let mut logits = vec![0.0f32; b * npad];
        logits
            .par_chunks_mut(npad)
            .enumerate()
            .for_each(|(r, dst)| {
                let row = cell.row(step_of_row(r));
                dst[..row.len()].copy_from_slice(row);
                dst[row.len()..].fill(cell.pad_value);
            });
        let mut n = Vec::with_capacity(b);
        let mut hints = Vec::with_capacity(b * k);
        for r in 0..b {
            let s = step_of_row(r);
            n.push(cell.n[s]);
            hints.extend_from_slice(cell.hints(s));
        }
        Ok(Batch {
            rows: b,
            npad,
            k,
            logits,
            n,
            hints,
            varlen: None,
        })
    }

    /// Whether rows `r` and `r mod period` are equal: `n`, `hints` and every
    /// logit of the padded row, bit for bit. Guards the period users (shared
    /// staging, per-row check reuse) against a wrong period, so a replicated
    /// batch is checked whole: a row differing anywhere from its period's
    /// row gets its own threshold. [`Batch::form`] guarantees
    /// [`Batch::row_period`]. False for an inconsistent batch.
    pub fn repeats_with_period(&self, period: usize) -> bool {
        let consistent = self.n.len() == self.rows
            && self.hints.len() == self.rows * self.k
            && self.logits.len() == self.rows * self.npad
            && self.npad > 0
            && self.n.iter().all(|&n| n as usize <= self.npad);
        if !consistent || period == 0 || period > self.rows {
            return false;
        }
        let (npad, k) = (self.npad, self.k);
        let bits = |r: usize| {
            self.logits[r * npad..(r + 1) * npad]
                .iter()
                .map(|x| x.to_bits())
        };
        (period..self.rows).into_par_iter().all(|r| {
            let s = r % period;
            self.n[r] == self.n[s]
                && self.hints[r * k..(r + 1) * k] == self.hints[s * k..(s + 1) * k]
                && bits(r).eq(bits(s))
        })
    }

    /// The row period of [`Batch::form`]`(cell, b, mode)` for a cell of
    /// `steps` steps: row `r` equals row `r mod period` (1 when replicating
    /// one step; `min(steps, b)` when rows cycle through the steps). Lets
    /// staging send only the distinct rows and checking reuse per-row work.
    pub fn row_period(steps: usize, b: usize, mode: RowsMode) -> usize {
        match mode {
            RowsMode::Replicate => 1,
            RowsMode::Independent => steps.clamp(1, b.max(1)),
        }
    }

    /// Overwrite `[n_r, npad)` of every row with `value` (certify uses
    /// +3e38 so that any read past a row's own length breaks the values).
    pub fn poison_pad(&mut self, value: f32) {
        for r in 0..self.rows {
            let start = r * self.npad;
            let valid = (self.n[r] as usize).min(self.npad);
            self.logits[start + valid..start + self.npad].fill(value);
        }
    }

    /// Build a varlen (MTP) batch under the production contract (docs/algorithm.md, "The varlen entry").
    ///
    /// Request `i` (KV length `kv_lens[i]` in token space) contributes
    /// `next_n` rows; batch row `r = i·next_n + j` has valid length
    /// [`Batch::varlen_row_len`]`(kv_lens[i], next_n, r, cr)`, which may be 0.
    /// `rows` holds either one source row per request (shared by its `next_n`
    /// rows) or one per batch row; each source must cover its rows' lengths.
    /// `hints` is `[rows, k]` or `None` (all −1, a cold start). The stride is
    /// `npad_for` of the longest row, and the pad holds [`VARLEN_PAD`].
    pub fn varlen(
        rows: &[&[f32]],
        kv_lens: &[u32],
        next_n: u32,
        cr: u32,
        k: usize,
        hints: Option<&[i32]>,
    ) -> Result<Batch> {
        let bad = |field: &str, message: String| {
            GvrError::input(PathBuf::from("<varlen batch>"), field, message)
        };
        if next_n == 0 {
            return Err(bad("next_n", "must be at least 1".into()));
        }
        if cr == 0 {
            return Err(bad("cr", "compression ratio must be at least 1".into()));
        }
        if k == 0 {
            return Err(bad("k", "must be at least 1".into()));
        }
        let total_rows = kv_lens.len() * next_n as usize;
        if total_rows == 0 {
            return Err(bad("kv_lens", "no requests".into()));
        }
        let per_request = rows.len() == kv_lens.len();
        if !per_request && rows.len() != total_rows {
            return Err(bad(
                "rows",
                format!(
                    "{} source rows: expected one per request ({}) or one per batch row ({total_rows})",
                    rows.len(),
                    kv_lens.len()
                ),
            ));
        }
        let n: Vec<u32> = (0..total_rows)
            .map(|r| Batch::varlen_row_len(kv_lens[r / next_n as usize], next_n, r, cr))
            .collect();
        let source_of = |r: usize| {
            if per_request {
                rows[r / next_n as usize]
            } else {
                rows[r]
            }
        };
        for (r, &len) in n.iter().enumerate() {
            let available = source_of(r).len();
            if (len as usize) > available {
                return Err(bad(
                    &format!(
                        "rows[{}]",
                        if per_request { r / next_n as usize } else { r }
                    ),
                    format!("batch row {r} needs {len} values, the source row has {available}"),
                ));
            }
        }
        let hints = match hints {
            Some(h) if h.len() == total_rows * k => h.to_vec(),
            Some(h) => {
                return Err(bad(
                    "hints",
                    format!("{} hints, expected rows·k = {total_rows}·{k}", h.len()),
                ));
            }
            None => vec![-1; total_rows * k],
        };
        let npad = npad_for(n.iter().copied().max().unwrap_or(0) as usize);
        let mut logits = vec![VARLEN_PAD; total_rows * npad];
        for (r, &len) in n.iter().enumerate() {
            let len = len as usize;
            logits[r * npad..r * npad + len].copy_from_slice(&source_of(r)[..len]);
        }
        Ok(Batch {
            rows: total_rows,
            npad,
            k,
            logits,
            n,
            hints,
            varlen: Some(Varlen {
                kv_lens: kv_lens.to_vec(),
                next_n,
                compress_ratio: cr,
            }),
        })
    }
}

/// Reject a cell whose arrays disagree with its shape, naming the field.
fn validate_cell(cell: &CellData) -> Result<()> {
    let id = PathBuf::from(&cell.meta.id);
    let steps = cell.n.len();
    let k = cell.k();
    if steps == 0 {
        return Err(GvrError::input(id, "n", "cell has no steps"));
    }
    if cell.npad == 0 || !cell.npad.is_multiple_of(64) {
        return Err(GvrError::input(
            id,
            "npad",
            format!("{} is not a positive multiple of 64", cell.npad),
        ));
    }
    if cell.logits.len() != steps * cell.npad {
        return Err(GvrError::input(
            id,
            "logits",
            format!(
                "{} values, expected steps·npad = {steps}·{}",
                cell.logits.len(),
                cell.npad
            ),
        ));
    }
    if cell.hints.len() != steps * k {
        return Err(GvrError::input(
            id,
            "hints",
            format!(
                "{} values, expected steps·k = {steps}·{k}",
                cell.hints.len()
            ),
        ));
    }
    if let Some(s) = cell.n.iter().position(|&n| n as usize > cell.npad) {
        return Err(GvrError::input(
            id,
            format!("n[{s}]"),
            format!("{} exceeds npad {}", cell.n[s], cell.npad),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod period_tests {
    use super::*;
    use crate::capture::{CellMeta, Model};

    /// A cell of `steps` steps, npad 128, k 4, distinct values per step.
    fn cell(steps: usize) -> CellData {
        let npad = 128;
        let n: Vec<u32> = (0..steps as u32).map(|s| 60 + 7 * s).collect();
        let mut logits = vec![-3.0; steps * npad];
        for (s, &len) in n.iter().enumerate() {
            for i in 0..len as usize {
                logits[s * npad + i] = (s * 1000 + i) as f32;
            }
        }
        CellData {
            meta: CellMeta {
                id: "period_cell".into(),
                model: Model::Flash,
                isl: "4k".into(),
                layer: 0,
                n: 200,
                k: 4,
                cr: 4,
                next_n: 1,
            },
            npad,
            pad_value: -3.0,
            logits,
            n,
            hints: (0..steps as i32 * 4).collect(),
            topk: None,
            kv_lens: None,
        }
    }

    #[test]
    fn formed_rows_repeat_with_the_stated_period_and_no_shorter_one() {
        for steps in [1, 3, 5] {
            let cell = cell(steps);
            for b in [1, 2, 4, 7, 16] {
                for mode in [RowsMode::Replicate, RowsMode::Independent] {
                    let batch = Batch::form(&cell, b, mode).unwrap();
                    let period = Batch::row_period(steps, b, mode);
                    assert!(period >= 1 && period <= b);
                    let same = |r: usize, s: usize| {
                        batch.row(r) == batch.row(s)
                            && batch.n[r] == batch.n[s]
                            && batch.hints(r) == batch.hints(s)
                    };
                    assert!((0..b).all(|r| same(r, r % period)), "{steps} {b} {mode:?}");
                    // The distinct rows really are distinct (nothing to share).
                    for r in 1..period {
                        assert!(!same(r, 0), "{steps} {b} {mode:?} row {r}");
                    }
                }
            }
        }
    }

    #[test]
    fn form_rejects_empty_batches_and_bad_cells() {
        let cell = cell(3);
        assert!(Batch::form(&cell, 0, RowsMode::Replicate).is_err());
        let mut bad = cell.clone();
        bad.logits.pop();
        assert!(Batch::form(&bad, 2, RowsMode::Replicate).is_err());
    }
}
