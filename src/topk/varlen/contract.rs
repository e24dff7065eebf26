//! The production varlen contract (docs/algorithm.md, "The varlen entry"): per-request cache
//! lengths on the device, `next_n` MTP rows per request, a compress ratio,
//! and the launch-time length envelope. Pure; tested without a GPU.

use std::fmt;

use crate::topk::SUPPORTED_K;

/// MTP rows per request the contract serves (DeepSeek decode: 1–4).
pub const NEXT_N_RANGE: std::ops::RangeInclusive<u32> = 1..=4;
/// Compress ratios of the indexer cache: 1 (V3.2) and 4 (V4 Flash/Pro).
pub const COMPRESS_RATIOS: [u32; 2] = [1, 4];

/// The static shape of one varlen launch: everything but the lengths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VarlenShape {
    /// Batch rows (`requests · next_n`).
    pub rows: usize,
    /// Row stride of the logits, in elements.
    pub npad: usize,
    pub k: usize,
    pub next_n: u32,
    pub compress_ratio: u32,
}

/// Why a varlen call was refused; the message says what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContractError(pub String);

impl fmt::Display for ContractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ContractError {}

fn refuse(message: String) -> Result<(), ContractError> {
    Err(ContractError(message))
}

impl VarlenShape {
    /// Check the static contract.
    pub fn validate(&self) -> Result<(), ContractError> {
        if !SUPPORTED_K.contains(&self.k) {
            return refuse(format!("k = {} is not one of {SUPPORTED_K:?}", self.k));
        }
        if !NEXT_N_RANGE.contains(&self.next_n) {
            return refuse(format!(
                "next_n = {} is outside {}..={}",
                self.next_n,
                NEXT_N_RANGE.start(),
                NEXT_N_RANGE.end()
            ));
        }
        if !COMPRESS_RATIOS.contains(&self.compress_ratio) {
            return refuse(format!(
                "compress_ratio = {} is not one of {COMPRESS_RATIOS:?}",
                self.compress_ratio
            ));
        }
        if self.rows == 0 {
            return refuse("a varlen launch needs at least one row".into());
        }
        if !self.rows.is_multiple_of(self.next_n as usize) {
            return refuse(format!(
                "{} rows are not a whole number of requests of next_n = {} rows",
                self.rows, self.next_n
            ));
        }
        if self.npad == 0 || !self.npad.is_multiple_of(4) || u32::try_from(self.npad).is_err() {
            return refuse(format!(
                "row stride {} must be a positive multiple of 4 (float4 row loads) below 2^32",
                self.npad
            ));
        }
        Ok(())
    }

    /// Requests in the batch (`rows / next_n`): the length of `kv_lens` and
    /// the row count of request-level hints.
    pub fn requests(&self) -> usize {
        self.rows / self.next_n.max(1) as usize
    }

    /// The compress ratio as the kernels' right shift.
    pub fn cr_shift(&self) -> u32 {
        self.compress_ratio.trailing_zeros()
    }

    /// Valid length of batch row `row` when its request has cache length
    /// `kv`: `max(kv − next_n + row mod next_n + 1, 0) >> cr_shift`, clamped
    /// to the stride. The Rust twin of `ss_row_len` in kernels/ss/common.cuh.
    pub fn row_len(&self, kv: i32, row: usize) -> usize {
        let next_n = self.next_n.max(1) as i64;
        let len = kv as i64 - next_n + (row as i64 % next_n) + 1;
        if len <= 0 {
            return 0;
        }
        ((len >> self.cr_shift()) as usize).min(self.npad)
    }

    /// Every row's valid length for the per-request `kv_lens`.
    pub fn row_lengths(&self, kv_lens: &[i32]) -> Result<Vec<usize>, ContractError> {
        if kv_lens.len() != self.requests() {
            return Err(ContractError(format!(
                "kv_lens has {} entries for {} requests ({} rows / next_n {})",
                kv_lens.len(),
                self.requests(),
                self.rows,
                self.next_n
            )));
        }
        Ok((0..self.rows)
            .map(|r| self.row_len(kv_lens[r / self.next_n as usize], r))
            .collect())
    }
}

/// Where the launch's length envelope came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvelopeSource {
    /// `max_seq_len` given by the caller: no host read, capture-safe.
    MaxSeqLen(u64),
    /// Eager mode: the largest `kv_lens` entry, read on the host.
    Observed(i64),
}

/// The longest row the launch is planned for: `max_seq_len >> cr_shift`, or
/// the observed longest row rounded up to a power of two (so a growing
/// decode does not re-plan every step), clamped to `[1, npad]`.
pub fn envelope(shape: &VarlenShape, source: EnvelopeSource) -> usize {
    let n = match source {
        EnvelopeSource::MaxSeqLen(msl) => (msl >> shape.cr_shift()).min(usize::MAX as u64) as usize,
        EnvelopeSource::Observed(kv_max) => {
            let longest = shape.row_len(
                kv_max.clamp(0, i32::MAX as i64) as i32,
                shape.next_n as usize - 1,
            );
            longest.max(1).next_power_of_two()
        }
    };
    n.clamp(1, shape.npad)
}

/// The row length the family choice is made for: the envelope, at least
/// k + 1 so that short-row envelopes still plan a real top-K launch (rows
/// with n ≤ k take the identity path inside any family).
pub fn route_len(shape: &VarlenShape, n_env: usize) -> usize {
    n_env.min(shape.npad).max(shape.k + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(rows: usize, npad: usize, k: usize, next_n: u32, cr: u32) -> VarlenShape {
        VarlenShape {
            rows,
            npad,
            k,
            next_n,
            compress_ratio: cr,
        }
    }

    #[test]
    fn spec_examples_give_the_documented_row_lengths() {
        // Worked example: kv = [9000, 5001], next_n = 2, cr = 1.
        let s = shape(4, 9024, 512, 2, 1);
        assert_eq!(
            s.row_lengths(&[9000, 5001]).unwrap(),
            [8999, 9000, 5000, 5001]
        );
        // cr = 4 shifts after the MTP offset.
        let s = shape(4, 16384, 512, 4, 4);
        assert_eq!(
            s.row_lengths(&[65540]).unwrap(),
            [16384, 16384, 16384, 16384]
        );
        let s = shape(3, 16384, 512, 3, 4);
        assert_eq!(s.row_lengths(&[40000]).unwrap(), [9999, 9999, 10000]);
    }

    #[test]
    fn zero_window_and_negative_lengths_give_empty_rows() {
        let s = shape(8, 8192, 512, 4, 1);
        // kv = 0: the whole request is a zero window; kv = 3 < next_n: only
        // the formula's positive rows keep values (row j gets j).
        let lens = s.row_lengths(&[0, 3]).unwrap();
        assert_eq!(lens, [0, 0, 0, 0, 0, 1, 2, 3]);
        // kv = 1, next_n = 4, cr = 4 is all zero-window.
        let s4 = shape(4, 8192, 512, 4, 4);
        assert_eq!(s4.row_lengths(&[1]).unwrap(), [0, 0, 0, 0]);
        let s = shape(4, 8192, 512, 4, 1);
        assert_eq!(s.row_lengths(&[-5]).unwrap(), [0, 0, 0, 0]);
        assert_eq!(s.row_lengths(&[i32::MAX]).unwrap(), [8192; 4]);
    }

    #[test]
    fn row_len_agrees_with_the_batch_builder_below_the_stride() {
        for next_n in NEXT_N_RANGE {
            for cr in COMPRESS_RATIOS {
                let s = shape(next_n as usize, 1 << 20, 512, next_n, cr);
                for kv in [0u32, 1, 2, 3, 4, 5, 511, 2048, 131_075, 262_147] {
                    for r in 0..next_n as usize {
                        assert_eq!(
                            s.row_len(kv as i32, r),
                            crate::grid::Batch::varlen_row_len(kv, next_n, r, cr) as usize,
                            "kv {kv} next_n {next_n} cr {cr} row {r}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn guards_refuse_bad_shapes_with_a_reason() {
        let ok = shape(8, 4096, 512, 2, 4);
        assert!(ok.validate().is_ok());
        let cases = [
            (shape(7, 4096, 512, 2, 1), "whole number"),
            (shape(8, 4096, 512, 2, 3), "compress_ratio"),
            (shape(8, 4096, 512, 0, 1), "next_n"),
            (shape(8, 4096, 512, 5, 1), "next_n"),
            (shape(8, 4096, 300, 1, 1), "k = 300"),
            (shape(8, 4098, 512, 1, 1), "multiple of 4"),
            (shape(0, 4096, 512, 1, 1), "at least one row"),
        ];
        for (s, needle) in cases {
            let e = s.validate().unwrap_err().to_string();
            assert!(e.contains(needle), "{s:?}: {e}");
        }
        assert!(ok
            .row_lengths(&[1, 2, 3])
            .unwrap_err()
            .0
            .contains("4 requests"));
    }

    #[test]
    fn envelope_prefers_max_seq_len_and_rounds_observed_lengths_up() {
        let s = shape(4, 262_144, 512, 1, 4);
        assert_eq!(envelope(&s, EnvelopeSource::MaxSeqLen(1 << 20)), 262_144);
        assert_eq!(envelope(&s, EnvelopeSource::MaxSeqLen(40_000)), 10_000);
        // Observed 40,000 tokens → 10,000 values → 16,384.
        assert_eq!(envelope(&s, EnvelopeSource::Observed(40_000)), 16_384);
        // Clamped to [1, npad].
        assert_eq!(envelope(&s, EnvelopeSource::Observed(0)), 1);
        assert_eq!(envelope(&s, EnvelopeSource::Observed(i64::MAX)), 262_144);
        assert_eq!(route_len(&s, 1), 513);
        assert_eq!(route_len(&s, 10_000), 10_000);
    }
}
