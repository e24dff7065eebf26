//! The result record: one per (case, arm), and the JSON-lines files that
//! hold them. Everything in reports is derived from these records; this module
//! is a base layer (it imports no orchestration).

pub mod jsonl;
pub mod results;

pub use results::{completed_pairs, ResultsWriter, RESULTS_FILE};

use serde::{Deserialize, Serialize};

use crate::capture::Model;
use crate::exact::ExactStatus;
use crate::grid::RowsMode;

/// How a record's times were measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimingMethod {
    /// Wall clock around a CPU engine call (CPU arms only).
    HostClock,
    /// CUPTI kernel activity records, summed over the arm's kernels.
    Cupti,
    /// CUDA events around the launch with the GPU kept busy ahead of it.
    CudaEvents,
    /// CUDA-graph replay timed with events.
    GraphReplay,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseRecord {
    /// `<cell>@b<B>`: the join key across arms and runs.
    pub case: String,
    pub cell: String,
    pub model: Model,
    pub isl: String,
    pub layer: u32,
    pub n: u32,
    pub k: u32,
    pub cr: u32,
    pub next_n: u32,
    pub b: u32,
    pub rows: RowsMode,
    pub arm: String,
    /// Family / tier the arm chose (e.g. the `ss` route), if it reports one.
    #[serde(default)]
    pub variant: Option<String>,
    pub cold_us: Vec<f64>,
    pub warm_us: Vec<f64>,
    pub method: Option<TimingMethod>,
    pub exact: ExactStatus,
    /// Minimum traffic 4·B·(N+K) bytes (the roofline numerator).
    pub bytes: u64,
}

impl CaseRecord {
    /// Minimum bytes a top-K of B rows of N fp32 must move: read the rows,
    /// write K indices per row.
    pub fn min_bytes(b: u64, n: u64, k: u64) -> u64 {
        4 * b * (n + k)
    }

    /// The published statistic: mean of the cold reps.
    pub fn mean_cold_us(&self) -> Option<f64> {
        if self.cold_us.is_empty() {
            None
        } else {
            Some(self.cold_us.iter().sum::<f64>() / self.cold_us.len() as f64)
        }
    }

    /// True when the record can enter speed statistics.
    pub fn timed_and_exact(&self) -> bool {
        self.exact.is_exact() && !self.cold_us.is_empty()
    }
}

/// Read every record of a `results.jsonl` file (see [`jsonl::read_lines`]
/// for what a truncated or bad line does).
pub fn read_records(path: &std::path::Path) -> crate::Result<Vec<CaseRecord>> {
    jsonl::read_lines(path)
}

/// A record whose exactness check failed (wrong, unwritten or failed): named
/// at the end of a `grid` run and in the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InexactCase {
    pub case: String,
    pub arm: String,
    /// WRONG / UNWRITTEN / FAILED.
    pub status: String,
    pub reason: String,
}

/// How many inexact cases a list shows before "and N more".
pub const INEXACT_LIST_CAP: usize = 20;

/// Every inexact record, in file order.
pub fn inexact_cases(records: &[CaseRecord]) -> Vec<InexactCase> {
    records
        .iter()
        .filter_map(|r| {
            let reason = match &r.exact {
                ExactStatus::Wrong { row, reason } => format!("row {row}: {reason}"),
                ExactStatus::Unwritten { row, slot } => {
                    format!("row {row}: output slot {slot} unwritten")
                }
                ExactStatus::Failed { message } => message.clone(),
                ExactStatus::Exact | ExactStatus::Unsupported { .. } => return None,
            };
            Some(InexactCase {
                case: r.case.clone(),
                arm: r.arm.clone(),
                status: r.exact.label().to_string(),
                reason,
            })
        })
        .collect()
}

/// One line per inexact case (`case arm STATUS: reason`), at most
/// [`INEXACT_LIST_CAP`], then how many more there are.
pub fn inexact_lines(cases: &[InexactCase]) -> Vec<String> {
    let mut lines: Vec<String> = cases
        .iter()
        .take(INEXACT_LIST_CAP)
        .map(|c| format!("{} {} {}: {}", c.case, c.arm, c.status, c.reason))
        .collect();
    if cases.len() > INEXACT_LIST_CAP {
        lines.push(format!("... and {} more", cases.len() - INEXACT_LIST_CAP));
    }
    lines
}

#[cfg(test)]
mod inexact_tests {
    use super::*;

    #[test]
    fn inexact_list_is_capped_with_a_count() {
        let case = |i: usize| InexactCase {
            case: format!("c{i}"),
            arm: "a".into(),
            status: "WRONG".into(),
            reason: "row 0: x".into(),
        };
        let few: Vec<_> = (0..3).map(case).collect();
        assert_eq!(inexact_lines(&few)[0], "c0 a WRONG: row 0: x");
        assert_eq!(inexact_lines(&few).len(), 3);
        let many: Vec<_> = (0..INEXACT_LIST_CAP + 5).map(case).collect();
        let lines = inexact_lines(&many);
        assert_eq!(lines.len(), INEXACT_LIST_CAP + 1);
        assert_eq!(lines.last().unwrap(), "... and 5 more");
    }
}
