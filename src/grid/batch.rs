//! Host-side batch formation: B rows built from one captured cell.

use serde::{Deserialize, Serialize};

/// How B rows are formed from a cell's captured steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum RowsMode {
    /// One captured row (the last usable step) replicated B times: the upstream grid.
    Replicate,
    /// Row r takes step r mod S: rows differ, as in production batches.
    Independent,
}

/// Production varlen description (METHOD.md §1.4): per-request KV lengths in
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

    /// Per-row valid length under the varlen contract (METHOD.md §1.4):
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
