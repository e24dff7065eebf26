//! Integration seam: every call the campaign loop and the CLI make into
//! modules written by other engineers goes through this file, so a change in
//! one of their APIs is absorbed here, in one place.
//!
//! The adapters also smooth small shape differences (e.g. `GpuTimer::new`
//! takes the protocol; reports return structs the CLI prints).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::arms::Arm;
use crate::capture::{CaptureSet, CellData, CellMeta};
use crate::error::{GvrError, Result};
use crate::exact::ExactStatus;
use crate::grid::{Batch, Case, RowsMode};
use crate::timing::{Protocol, Timer};

// ---------------------------------------------------------------- capture

pub fn open_captures(dir: &Path) -> Result<CaptureSet> {
    if !dir.is_dir() {
        return Err(GvrError::input(
            dir,
            "captures",
            "no such capture directory (make one with `gvr-bench capture synth`)",
        ));
    }
    CaptureSet::open(dir)
}

pub fn load_cell(set: &CaptureSet, entry: &crate::capture::ManifestCell) -> Result<CellData> {
    set.load_cell(entry)
}

pub fn inspect(path: &Path) -> Result<String> {
    crate::capture::inspect::inspect(path)
}

/// `capture::validate::validate` → (every gate passed, report text).
pub fn validate(path: &Path) -> Result<(bool, String)> {
    let report = crate::capture::validate::validate(path)?;
    Ok((report.passed(), report.to_string()))
}

pub use crate::capture::synth::SynthOptions;

pub fn synth(opts: &SynthOptions) -> Result<String> {
    crate::capture::synth::synth(opts).map(|summary| summary.to_string())
}

// ---------------------------------------------------------------- grid

pub use crate::grid::Selection;

pub fn rows_mode(selection: &Selection) -> RowsMode {
    selection.rows
}

pub fn shard(selection: &Selection) -> Option<String> {
    selection.shard.clone()
}

pub fn load_grid(path: &Path) -> Result<Vec<CellMeta>> {
    crate::grid::load_grid(path)
}

pub fn select(cells: &[CellMeta], selection: &Selection) -> Result<Vec<Case>> {
    crate::grid::select(cells, selection)
}

/// The case's batch; rows are filled in parallel (identical to `Batch::form`).
pub fn form_batch(cell: &CellData, b: usize, rows: RowsMode) -> Result<Batch> {
    Batch::form(cell, b, rows)
}

/// Row r of `form_batch(cell, b, rows)` equals row `r mod row_period`.
pub fn row_period(cell: &CellData, b: usize, rows: RowsMode) -> usize {
    Batch::row_period(cell.steps(), b, rows)
}

// ---------------------------------------------------------------- exact

pub fn check_batch(batch: &Batch, output: &[i32]) -> ExactStatus {
    crate::exact::check_batch(batch, output)
}

pub fn reference_topk(row: &[f32], k: usize) -> Vec<i32> {
    crate::exact::reference_topk(row, k)
}

/// `exact::adversarial::suite` as (name, batch) pairs.
pub fn adversarial_suite(k: usize) -> Vec<(String, Batch)> {
    crate::exact::adversarial::suite(k)
        .into_iter()
        .map(|c| (c.name, c.batch))
        .collect()
}

/// `exact::soak::soak_case` as a (name, batch) pair.
pub fn soak_case(seed: u64, k: usize) -> (String, Batch) {
    let case = crate::exact::soak_case(seed, k);
    (case.name, case.batch)
}

// ---------------------------------------------------------------- arms

pub fn create_cpu_ss() -> Result<Box<dyn Arm>> {
    Ok(Box::new(crate::arms::cpu_ss::CpuSs::new()))
}

// ---------------------------------------------------------------- gpu

pub use crate::gpu::{Gpu, SharedInputs};

/// Upload a case's inputs once, shared by every GPU arm's `stage` until the
/// guard drops.
pub fn share_inputs(gpu: &Arc<Gpu>, batch: Arc<Batch>, row_period: usize) -> Result<SharedInputs> {
    crate::gpu::StagedInputs::share(gpu, batch, row_period)
}

pub fn open_gpu(ordinal: usize) -> Result<Arc<Gpu>> {
    Gpu::open(ordinal)
}

pub fn gpu_facts(gpu: &Gpu) -> serde_json::Value {
    serde_json::to_value(&gpu.facts).unwrap_or(serde_json::Value::Null)
}

pub fn gpu_timer(gpu: Arc<Gpu>, protocol: Protocol) -> Result<Box<dyn Timer>> {
    Ok(Box::new(crate::timing::gpu::GpuTimer::new(gpu, protocol)?))
}

pub fn create_gpu_arm(name: &str, gpu: Arc<Gpu>) -> Option<Result<Box<dyn Arm>>> {
    crate::arms::gpu_baselines::create(name, gpu)
}

/// sha256 of each embedded kernel source, by file name.
pub fn kernel_source_hashes() -> BTreeMap<String, String> {
    crate::gpu::sources::ALL
        .iter()
        .map(|s| {
            (
                s.name.to_string(),
                crate::env_manifest::sha256_hex(s.code.as_bytes()),
            )
        })
        .collect()
}

// ---------------------------------------------------------------- report

pub use crate::report::{AaOptions, RegressOptions, ReportOptions};

/// Parser wrapper so default report options come from the report module's
/// own clap defaults (robust to fields added there later).
#[derive(clap::Parser)]
struct ReportDefaults {
    #[command(flatten)]
    opts: ReportOptions,
}

/// `report::report` on a finished run with default options (and a measured
/// bandwidth in bytes/s if given) → printable summary.
pub fn report_run(run_dir: &Path, bandwidth_bytes_per_s: Option<f64>) -> Result<String> {
    let started = std::time::Instant::now();
    let summary = report_run_untimed(run_dir, bandwidth_bytes_per_s);
    // The campaign's phases.json also accounts for the report after it.
    use crate::timing::phases::{Phase, PhaseSummary};
    if let Err(e) = PhaseSummary::add_to_file(run_dir, Phase::Report, started.elapsed()) {
        tracing::warn!("report time not added to the phase breakdown: {e}");
    }
    summary
}

fn report_run_untimed(run_dir: &Path, bandwidth_bytes_per_s: Option<f64>) -> Result<String> {
    use clap::Parser;
    let mut args = vec!["report".to_string(), run_dir.display().to_string()];
    if let Some(bw) = bandwidth_bytes_per_s {
        args.push(format!("--bandwidth={bw}"));
    }
    let parsed = ReportDefaults::try_parse_from(&args)
        .map_err(|e| GvrError::Other(anyhow::anyhow!("default report options: {e}")))?;
    report(&parsed.opts)
}

pub fn report(opts: &ReportOptions) -> Result<String> {
    crate::report::report(opts).map(|summary| summary.to_string())
}

#[derive(clap::Parser)]
struct AaDefaults {
    #[command(flatten)]
    opts: AaOptions,
}

/// The A/A noise floor of `ARM` vs `ARM#2` inside one run → printable text.
pub fn aa_run(run_dir: &Path, arm: &str) -> Result<String> {
    use clap::Parser;
    let args = [
        "aa".to_string(),
        run_dir.display().to_string(),
        format!("--arm={arm}"),
        format!("--arm-b={arm}#2"),
    ];
    let parsed = AaDefaults::try_parse_from(&args)
        .map_err(|e| GvrError::Other(anyhow::anyhow!("default aa options: {e}")))?;
    aa(&parsed.opts)
}

pub fn aa(opts: &AaOptions) -> Result<String> {
    crate::report::aa(opts).map(|floor| floor.to_string())
}

/// → (regressed, markdown).
pub fn regress(opts: &RegressOptions) -> Result<(bool, String)> {
    crate::report::regress(opts).map(|v| (v.regressed, v.markdown))
}
