//! `results.jsonl`: one `CaseRecord` per line, appended and flushed as each
//! record is ready, so a killed run leaves every finished record readable.

use std::collections::HashSet;
use std::path::Path;

use super::jsonl::{cut_torn_tail, JsonlWriter};
use super::{read_records, CaseRecord};
use crate::error::Result;

pub const RESULTS_FILE: &str = "results.jsonl";

/// (case id, arm name): the unit a run completes and `--resume` skips.
pub type PairKey = (String, String);

pub struct ResultsWriter(JsonlWriter);

impl ResultsWriter {
    /// Open `<run_dir>/results.jsonl` for appending (a partial last line cut).
    pub fn open(run_dir: &Path) -> Result<ResultsWriter> {
        JsonlWriter::open(&run_dir.join(RESULTS_FILE)).map(ResultsWriter)
    }

    pub fn append(&mut self, record: &CaseRecord) -> Result<()> {
        self.0.append(record)
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

/// Cut a partial last line (a run killed mid-write) off `results.jsonl`, so
/// the next record starts on a fresh line instead of being glued to garbage.
pub fn repair_torn_tail(run_dir: &Path) -> Result<()> {
    cut_torn_tail(&run_dir.join(RESULTS_FILE))
}

/// Records of a run directory; a missing results file is an empty run.
pub fn run_records(run_dir: &Path) -> Result<Vec<CaseRecord>> {
    let path = run_dir.join(RESULTS_FILE);
    if !path.exists() {
        return Ok(Vec::new());
    }
    read_records(&path)
}

/// The (case, arm) pairs already present in a run directory.
pub fn completed_pairs(run_dir: &Path) -> Result<HashSet<PairKey>> {
    Ok(run_records(run_dir)?
        .into_iter()
        .map(|r| (r.case, r.arm))
        .collect())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::capture::Model;
    use crate::exact::ExactStatus;
    use crate::grid::RowsMode;

    pub(crate) fn record(case: &str, arm: &str) -> CaseRecord {
        CaseRecord {
            case: case.into(),
            cell: case.split('@').next().unwrap_or(case).into(),
            model: Model::Flash,
            isl: "64k".into(),
            layer: 2,
            n: 1000,
            k: 512,
            cr: 4,
            next_n: 1,
            b: 1,
            rows: RowsMode::Replicate,
            arm: arm.into(),
            variant: None,
            cold_us: vec![1.0, 2.0],
            warm_us: vec![1.0],
            method: None,
            exact: ExactStatus::Exact,
            bytes: CaseRecord::min_bytes(1, 1000, 512),
        }
    }

    #[test]
    fn appends_and_reads_back_pairs() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = ResultsWriter::open(dir.path()).unwrap();
        w.append(&record("c@b1", "cpu-ref")).unwrap();
        w.append(&record("c@b1", "cpu-ss")).unwrap();
        drop(w);
        let pairs = completed_pairs(dir.path()).unwrap();
        assert_eq!(pairs.len(), 2);
        assert!(pairs.contains(&("c@b1".to_string(), "cpu-ss".to_string())));
    }

    #[test]
    fn reopening_cuts_a_truncated_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = ResultsWriter::open(dir.path()).unwrap();
        w.append(&record("c@b1", "cpu-ref")).unwrap();
        drop(w);
        let path = dir.path().join(RESULTS_FILE);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"case\":\"c@b2\",\"ce");
        std::fs::write(&path, text).unwrap();
        let mut w = ResultsWriter::open(dir.path()).unwrap();
        w.append(&record("c@b4", "cpu-ref")).unwrap();
        drop(w);
        let recs = run_records(dir.path()).unwrap();
        let cases: Vec<_> = recs.iter().map(|r| r.case.as_str()).collect();
        assert_eq!(cases, ["c@b1", "c@b4"]);
    }

    #[test]
    fn missing_results_is_an_empty_run() {
        let dir = tempfile::tempdir().unwrap();
        assert!(completed_pairs(dir.path()).unwrap().is_empty());
    }
}
