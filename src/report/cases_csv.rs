//! `cases.csv`: one row per (case, arm) with every record field plus the
//! derived cold-rep statistics and roofline numbers. Empty cells mean missing.

use std::path::Path;

use crate::error::{GvrError, Result};
use crate::exact::ExactStatus;
use crate::record::CaseRecord;
use crate::stats::sample::{achieved_bandwidth, roofline_fraction, ColdStats};

const HEADER: [&str; 25] = [
    "case",
    "cell",
    "model",
    "isl",
    "layer",
    "n",
    "k",
    "cr",
    "next_n",
    "b",
    "rows",
    "arm",
    "variant",
    "method",
    "exact",
    "exact_detail",
    "cold_reps",
    "mean_cold_us",
    "median_cold_us",
    "min_cold_us",
    "bytes",
    "read_bandwidth_gbps",
    "roofline_fraction",
    "cold_us",
    "warm_us",
];

/// The serde name of a unit enum value (`replicate`, `cupti`...).
fn serde_name<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn exact_detail(status: &ExactStatus) -> String {
    match status {
        ExactStatus::Exact => String::new(),
        ExactStatus::Wrong { row, reason } => format!("row {row}: {reason}"),
        ExactStatus::Unwritten { row, slot } => format!("row {row} slot {slot} unwritten"),
        ExactStatus::Unsupported { reason } => reason.clone(),
        ExactStatus::Failed { message } => message.clone(),
    }
}

/// Reps joined with `;` so the list stays one CSV field.
fn reps(values: &[f64]) -> String {
    values
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(";")
}

fn opt(x: Option<f64>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

/// The CSV row of one record. Roofline numbers are given for every timed
/// record (exact or not) since they describe the measurement, not a verdict.
fn row(r: &CaseRecord, bandwidth: f64) -> Vec<String> {
    let cold = ColdStats::of(&r.cold_us);
    let mean = cold.map(|c| c.mean_us);
    vec![
        r.case.clone(),
        r.cell.clone(),
        r.model.name().to_string(),
        r.isl.clone(),
        r.layer.to_string(),
        r.n.to_string(),
        r.k.to_string(),
        r.cr.to_string(),
        r.next_n.to_string(),
        r.b.to_string(),
        serde_name(&r.rows),
        r.arm.clone(),
        r.variant.clone().unwrap_or_default(),
        r.method.map(|m| serde_name(&m)).unwrap_or_default(),
        r.exact.label().to_string(),
        exact_detail(&r.exact),
        r.cold_us.len().to_string(),
        opt(mean),
        opt(cold.map(|c| c.median_us)),
        opt(cold.map(|c| c.min_us)),
        r.bytes.to_string(),
        opt(mean
            .and_then(|m| achieved_bandwidth(r.bytes, m))
            .map(|bw| bw / 1e9)),
        opt(mean.and_then(|m| roofline_fraction(r.bytes, m, bandwidth))),
        reps(&r.cold_us),
        reps(&r.warm_us),
    ]
}

pub fn write_cases_csv(path: &Path, records: &[CaseRecord], bandwidth: f64) -> Result<()> {
    let csv_error = |e: csv::Error| match e.into_kind() {
        csv::ErrorKind::Io(io) => GvrError::io(path, io),
        other => GvrError::Other(anyhow::anyhow!(
            "{}: writing CSV: {other:?}",
            path.display()
        )),
    };
    let mut writer = csv::Writer::from_path(path).map_err(csv_error)?;
    writer.write_record(HEADER).map_err(csv_error)?;
    for r in records {
        writer.write_record(row(r, bandwidth)).map_err(csv_error)?;
    }
    writer.flush().map_err(|e| GvrError::io(path, e))
}
