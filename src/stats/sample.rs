//! The per-record view every statistic works on: one (case, arm) with its
//! exactness class and cold-rep summary. Built from a `CaseRecord`, and also
//! what `summary.json` stores per case so that `regress` can compare against
//! a summary file without the raw reps.

use serde::{Deserialize, Serialize};

use crate::capture::Model;
use crate::exact::ExactStatus;
use crate::record::CaseRecord;
use crate::record::TimingMethod;

use super::quantile::{mean, quantile_sorted};

/// Default memory bandwidth for roofline fractions: NVIDIA H200 HBM3e,
/// 4.8 TB/s nominal, 4.49e12 B/s achievable read bandwidth.
pub const H200_BANDWIDTH_BYTES_PER_S: f64 = 4.49e12;

/// Exactness verdict without its payload, so it can be counted and compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExactClass {
    Exact,
    Wrong,
    Unwritten,
    Failed,
    Unsupported,
}

impl ExactClass {
    /// Report column order.
    pub const ALL: [ExactClass; 5] = [
        ExactClass::Exact,
        ExactClass::Wrong,
        ExactClass::Unwritten,
        ExactClass::Failed,
        ExactClass::Unsupported,
    ];

    pub fn of(status: &ExactStatus) -> ExactClass {
        match status {
            ExactStatus::Exact => ExactClass::Exact,
            ExactStatus::Wrong { .. } => ExactClass::Wrong,
            ExactStatus::Unwritten { .. } => ExactClass::Unwritten,
            ExactStatus::Failed { .. } => ExactClass::Failed,
            ExactStatus::Unsupported { .. } => ExactClass::Unsupported,
        }
    }

    /// Same spelling as `ExactStatus::label` (failures in capitals).
    pub fn label(self) -> &'static str {
        match self {
            ExactClass::Exact => "exact",
            ExactClass::Wrong => "WRONG",
            ExactClass::Unwritten => "UNWRITTEN",
            ExactClass::Failed => "FAILED",
            ExactClass::Unsupported => "unsupported",
        }
    }
}

/// Mean, median and minimum of the cold reps. The mean is the headline
/// statistic (docs/method.md, "Timing a case"); median and min are kept for diagnosis.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ColdStats {
    pub mean_us: f64,
    pub median_us: f64,
    pub min_us: f64,
}

impl ColdStats {
    /// `None` when there are no reps or any rep is not a finite, non-negative
    /// duration: such a record is treated as untimed rather than averaged.
    pub fn of(cold_us: &[f64]) -> Option<ColdStats> {
        if cold_us.is_empty() || cold_us.iter().any(|t| !t.is_finite() || *t < 0.0) {
            return None;
        }
        let mut sorted = cold_us.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(ColdStats {
            mean_us: mean(&sorted)?,
            median_us: quantile_sorted(&sorted, 0.5)?,
            min_us: sorted[0],
        })
    }
}

/// Achieved bandwidth in bytes/s for `bytes` moved in `mean_us`.
/// `None` for a non-positive time (no meaningful rate).
pub fn achieved_bandwidth(bytes: u64, mean_us: f64) -> Option<f64> {
    if mean_us.is_finite() && mean_us > 0.0 {
        Some(bytes as f64 / (mean_us * 1e-6))
    } else {
        None
    }
}

/// Fraction of the memory roofline reached: achieved bandwidth / `bandwidth`.
pub fn roofline_fraction(bytes: u64, mean_us: f64, bandwidth: f64) -> Option<f64> {
    if !(bandwidth.is_finite() && bandwidth > 0.0) {
        return None;
    }
    achieved_bandwidth(bytes, mean_us).map(|bw| bw / bandwidth)
}

/// One (case, arm) as the statistics see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseTime {
    pub case: String,
    pub cell: String,
    pub arm: String,
    pub model: Model,
    pub isl: String,
    pub layer: u32,
    pub n: u32,
    pub k: u32,
    pub b: u32,
    #[serde(default)]
    pub variant: Option<String>,
    pub exact: ExactClass,
    /// Absent when the record has no usable cold reps.
    #[serde(default)]
    pub cold: Option<ColdStats>,
    pub bytes: u64,
    #[serde(default)]
    pub method: Option<TimingMethod>,
}

impl CaseTime {
    pub fn from_record(record: &CaseRecord) -> CaseTime {
        CaseTime {
            case: record.case.clone(),
            cell: record.cell.clone(),
            arm: record.arm.clone(),
            model: record.model,
            isl: record.isl.clone(),
            layer: record.layer,
            n: record.n,
            k: record.k,
            b: record.b,
            variant: record.variant.clone(),
            exact: ExactClass::of(&record.exact),
            cold: ColdStats::of(&record.cold_us),
            bytes: record.bytes,
            method: record.method,
        }
    }

    pub fn from_records(records: &[CaseRecord]) -> Vec<CaseTime> {
        records.iter().map(CaseTime::from_record).collect()
    }

    /// Mean cold µs, only when the record may enter speed statistics
    /// (exact and timed). Inexact arms are never timed against others.
    pub fn usable_mean_us(&self) -> Option<f64> {
        match (self.exact, self.cold) {
            (ExactClass::Exact, Some(cold)) => Some(cold.mean_us),
            _ => None,
        }
    }

    pub fn roofline_fraction(&self, bandwidth: f64) -> Option<f64> {
        roofline_fraction(self.bytes, self.usable_mean_us()?, bandwidth)
    }
}

/// Arms in order of first appearance (the run's own order, stable in reports).
pub fn arms_in_order(cases: &[CaseTime]) -> Vec<String> {
    let mut arms: Vec<String> = Vec::new();
    for c in cases {
        if !arms.iter().any(|a| a == &c.arm) {
            arms.push(c.arm.clone());
        }
    }
    arms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cold_stats_mean_median_min() {
        let s = ColdStats::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(s.mean_us, 2.5);
        assert_eq!(s.median_us, 2.5);
        assert_eq!(s.min_us, 1.0);
        assert_eq!(ColdStats::of(&[]), None);
        assert_eq!(ColdStats::of(&[1.0, f64::NAN]), None);
        assert_eq!(ColdStats::of(&[1.0, -2.0]), None);
    }

    #[test]
    fn roofline_of_known_traffic() {
        // 4.49e6 bytes in 1 µs = 4.49e12 B/s: exactly the H200 roofline.
        let f = roofline_fraction(4_490_000, 1.0, H200_BANDWIDTH_BYTES_PER_S).unwrap();
        assert!((f - 1.0).abs() < 1e-12);
        let f = roofline_fraction(4_490_000, 4.0, H200_BANDWIDTH_BYTES_PER_S).unwrap();
        assert!((f - 0.25).abs() < 1e-12);
        assert_eq!(achieved_bandwidth(10, 0.0), None);
        assert_eq!(roofline_fraction(10, 1.0, 0.0), None);
    }
}
