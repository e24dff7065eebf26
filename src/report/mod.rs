//! Report writers: markdown, CSV, JSON, SVG plots; the A/A noise floor and the
//! regress verdict. The numbers come from `stats` (pure); this module reads
//! run directories and writes files.

mod cases_csv;
mod headline;
mod markdown;
mod plot;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{GvrError, Result};
use crate::record::{read_records, CaseRecord};
use crate::stats::{
    self, arms_in_order, BestBaseline, CaseTime, Comparison, ExactCounts, NoiseFloor,
    RegressAnalysis, RegressConfig, RooflineStats, TierTable, H200_BANDWIDTH_BYTES_PER_S,
};
use crate::timing::TimingMethod;

pub use cases_csv::write_cases_csv;
pub use markdown::{render_regress, render_summary};

/// File name of the result stream inside a run directory.
pub const RESULTS_FILE: &str = "results.jsonl";
/// File name of the environment manifest inside a run directory.
pub const MANIFEST_FILE: &str = "manifest.json";

/// `gvr-bench report`: tables, CSV, JSON and plots for one run.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportOptions {
    /// Run directory (or its results.jsonl).
    pub run: PathBuf,
    /// Arm every other arm is compared against [default: "ss" if present,
    /// else the first GPU arm, else "cpu-ss", else the first arm].
    #[arg(long)]
    pub base: Option<String>,
    /// Comparison arms, comma-separated; also the headline's candidate baselines
    /// [default: every other arm in the run].
    #[arg(long, value_delimiter = ',')]
    pub vs: Vec<String>,
    /// Memory bandwidth (bytes/s) for roofline fractions [default: the
    /// device read bandwidth the run measured (its manifest, or its shards'),
    /// else the host copy probe of a CPU run's --bandwidth, else the H200's
    /// nominal 4.49e12, and the report says which].
    #[arg(long)]
    pub bandwidth: Option<f64>,
    /// Output directory [default: <run>/report].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Skip the SVG plots.
    #[arg(long)]
    pub no_plots: bool,
}

/// The timing method(s) one arm's records used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmMethods {
    pub arm: String,
    pub methods: Vec<TimingMethod>,
    /// Records with no method (untimed: unsupported or failed).
    pub untimed: usize,
}

/// Everything `report` computed; serialised as `summary.json`, displayed as
/// the markdown tables of `summary.md`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportSummary {
    pub run: PathBuf,
    /// Scalar fields of the run manifest's `environment` (key, value).
    pub environment: Vec<(String, String)>,
    pub base_arm: String,
    pub arms: Vec<String>,
    /// Bytes/s used for roofline fractions.
    pub bandwidth: f64,
    /// Where `bandwidth` comes from (measured on this run's device, given,
    /// or nominal).
    #[serde(default)]
    pub bandwidth_source: String,
    /// The headline: the base arm against the best baseline of each case.
    #[serde(default)]
    pub best_baseline: Option<BestBaseline>,
    /// Per-tier tables of the baselines that pick a tier per shape (radix).
    #[serde(default)]
    pub tiers: Vec<TierTable>,
    /// What each library peer ran (version, JIT build time kept out of the
    /// records), one line per peer, from the run's manifest.
    #[serde(default)]
    pub peer_notes: Vec<String>,
    /// Labels of `Comparison::buckets`, in order (left-closed, right-open).
    #[serde(default)]
    pub bucket_labels: Vec<String>,
    pub comparisons: Vec<Comparison>,
    pub exactness: Vec<ExactCounts>,
    /// Every record whose exactness check failed.
    #[serde(default)]
    pub inexact: Vec<crate::record::InexactCase>,
    pub roofline: Vec<RooflineStats>,
    pub timing_methods: Vec<ArmMethods>,
    /// Every file `report` wrote (paths under the output directory).
    #[serde(default)]
    pub files: Vec<PathBuf>,
    /// The reps this run took: its protocol (from manifest.json) and the
    /// counts its records hold.
    #[serde(default)]
    pub reps: RepsTaken,
    /// Per-(case, arm) summary; lets `regress` take a summary.json as input.
    pub cases: Vec<CaseTime>,
    /// Every arm against the latency floor, when the run measured it
    /// (`grid --floor`).
    #[serde(default)]
    pub floor: Option<crate::floor::FloorSection>,
}

/// The reps a run took, for the report header: the protocol its manifest
/// names (absent without a manifest) and, per timed record, how many warm and
/// cold reps were recorded (fewest, most).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RepsTaken {
    pub protocol: Option<crate::timing::Protocol>,
    pub warm: Option<(usize, usize)>,
    pub cold: Option<(usize, usize)>,
}

impl RepsTaken {
    /// Counts from the records; `protocol` is set by the caller.
    pub fn of(records: &[CaseRecord]) -> Self {
        let range = |count: &dyn Fn(&CaseRecord) -> usize| {
            let counts = records.iter().map(count).filter(|&n| n > 0);
            let lo = counts.clone().min()?;
            Some((lo, counts.max()?))
        };
        RepsTaken {
            protocol: None,
            warm: range(&|r| r.warm_us.len()),
            cold: range(&|r| r.cold_us.len()),
        }
    }
}

impl std::fmt::Display for ReportSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&render_summary(self))
    }
}

/// A run read from disk.
#[derive(Debug, Clone)]
pub struct LoadedRun {
    /// The run directory (the parent of results.jsonl when a file was given).
    pub dir: PathBuf,
    pub results: PathBuf,
    pub records: Vec<CaseRecord>,
    pub environment: Vec<(String, String)>,
    /// The run's manifest.json, read once (absent or unreadable: `None`).
    pub manifest: Option<crate::env_manifest::EnvManifest>,
}

/// Resolve a run argument (directory or results.jsonl) to the results file.
pub fn results_path(run: &Path) -> Result<PathBuf> {
    let results = if run.is_dir() {
        run.join(RESULTS_FILE)
    } else {
        run.to_path_buf()
    };
    if !results.is_file() {
        return Err(GvrError::input(
            &results,
            RESULTS_FILE,
            "no such file (expected a run directory or its results.jsonl)",
        ));
    }
    Ok(results)
}

/// Read a run's records and the environment echoed in report headers.
pub fn load_run(run: &Path) -> Result<LoadedRun> {
    let results = results_path(run)?;
    let records = read_records(&results)?;
    if records.is_empty() {
        return Err(GvrError::input(
            &results,
            "records",
            "the run has no result records",
        ));
    }
    let dir = results.parent().map(Path::to_path_buf).unwrap_or_default();
    let (environment, manifest) = read_manifest(&dir.join(MANIFEST_FILE));
    Ok(LoadedRun {
        dir,
        results,
        records,
        environment,
        manifest,
    })
}

/// The run's manifest.json, read and parsed once: the scalar fields echoed in
/// report headers ([`environment_of`]) and the typed manifest (`None` when it
/// does not have that form). The manifest is optional context: a missing or
/// unreadable one is skipped (with a warning when unreadable) rather than
/// failing the report.
fn read_manifest(
    path: &Path,
) -> (
    Vec<(String, String)>,
    Option<crate::env_manifest::EnvManifest>,
) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return (Vec::new(), None);
    };
    let value: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!("{}: not echoed in the report: {e}", path.display());
            return (Vec::new(), None);
        }
    };
    let environment = environment_of(&value);
    (environment, serde_json::from_value(value).ok())
}

/// Scalar fields of the manifest's `environment` object (or of the manifest
/// itself when it has none, as `env_manifest::EnvManifest` writes it), one
/// level of nesting flattened as `a.b`; arrays and kernel hashes are left out.
fn environment_of(value: &serde_json::Value) -> Vec<(String, String)> {
    let env = value.get("environment").unwrap_or(value);
    let mut out = Vec::new();
    if let Some(map) = env.as_object() {
        for (key, v) in map {
            match v {
                // Per-kernel source hashes belong in the manifest, not in a
                // report header (dozens of lines of hex).
                serde_json::Value::Object(_) if key == "kernel_hashes" => {}
                serde_json::Value::Object(inner) => {
                    for (sub, w) in inner {
                        if let Some(s) = scalar_text(w) {
                            out.push((format!("{key}.{sub}"), s));
                        }
                    }
                }
                other => {
                    if let Some(s) = scalar_text(other) {
                        out.push((key.clone(), s));
                    }
                }
            }
        }
    }
    out
}

fn scalar_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Default base arm: "ss" if present, else the first GPU arm (not named
/// `cpu-*` and not host-clock timed), else "cpu-ss", else the first arm.
pub fn default_base_arm(cases: &[CaseTime]) -> Option<String> {
    let arms = arms_in_order(cases);
    let is_cpu = |arm: &str| {
        arm.starts_with("cpu")
            || cases
                .iter()
                .any(|c| c.arm == arm && c.method == Some(TimingMethod::HostClock))
    };
    if arms.iter().any(|a| a == "ss") {
        return Some("ss".to_string());
    }
    if let Some(gpu) = arms.iter().find(|a| !is_cpu(a)) {
        return Some(gpu.clone());
    }
    if arms.iter().any(|a| a == "cpu-ss") {
        return Some("cpu-ss".to_string());
    }
    arms.first().cloned()
}

fn unknown_arm(option: &str, arm: &str, arms: &[String]) -> GvrError {
    GvrError::Usage(format!(
        "{option} {arm}: no such arm in the run (arms present: {})",
        arms.join(", ")
    ))
}

/// Compute every statistic of a report (pure: no I/O).
pub fn summarise(
    run: &Path,
    records: &[CaseRecord],
    floors: &[crate::floor::FloorRecord],
    environment: Vec<(String, String)>,
    base: Option<&str>,
    vs: &[String],
    bandwidth: f64,
) -> Result<ReportSummary> {
    if !(bandwidth.is_finite() && bandwidth > 0.0) {
        return Err(GvrError::Usage(format!(
            "--bandwidth {bandwidth}: must be a positive number of bytes/s"
        )));
    }
    let cases = CaseTime::from_records(records);
    let arms = arms_in_order(&cases);
    let base_arm = match base {
        Some(b) => b.to_string(),
        None => default_base_arm(&cases)
            .ok_or_else(|| GvrError::input(run, "records", "the run has no arms"))?,
    };
    if !arms.contains(&base_arm) {
        return Err(unknown_arm("--base", &base_arm, &arms));
    }
    let comparison_arms: Vec<String> = if vs.is_empty() {
        arms.iter().filter(|a| **a != base_arm).cloned().collect()
    } else {
        for arm in vs {
            if !arms.contains(arm) {
                return Err(unknown_arm("--vs", arm, &arms));
            }
        }
        vs.iter().filter(|a| **a != base_arm).cloned().collect()
    };
    let comparisons = comparison_arms
        .iter()
        .map(|other| stats::compare(&cases, &base_arm, other))
        .collect();
    let timing_methods = arms
        .iter()
        .map(|arm| {
            let mut methods: Vec<TimingMethod> = Vec::new();
            let mut untimed = 0;
            for c in cases.iter().filter(|c| &c.arm == arm) {
                match c.method {
                    Some(m) if !methods.contains(&m) => methods.push(m),
                    Some(_) => {}
                    None => untimed += 1,
                }
            }
            ArmMethods {
                arm: arm.clone(),
                methods,
                untimed,
            }
        })
        .collect();
    let floor = crate::floor::section(&cases, floors, &arms, bandwidth);
    Ok(ReportSummary {
        run: run.to_path_buf(),
        environment,
        floor,
        bandwidth_source: String::new(),
        peer_notes: Vec::new(),
        best_baseline: stats::best_baseline(
            &cases,
            &base_arm,
            (!vs.is_empty()).then_some(&comparison_arms[..]),
        ),
        tiers: stats::tier_tables(&cases, &base_arm),
        exactness: stats::exact_counts(&cases, &arms),
        inexact: crate::record::inexact_cases(records),
        roofline: stats::roofline_by_arm(&cases, &arms, bandwidth),
        base_arm,
        arms,
        bandwidth,
        bucket_labels: stats::ratios::BUCKET_LABELS
            .iter()
            .map(|l| l.to_string())
            .collect(),
        comparisons,
        timing_methods,
        files: Vec::new(),
        reps: RepsTaken::of(records),
        cases,
    })
}

/// The bandwidth a run's fractions are of, and where it comes from: the
/// device read-bandwidth probe in the run's manifest; for a `--devices`
/// run, the mean of its shards' probes; a CPU run's host copy probe
/// (`--bandwidth`); else the H200's nominal figure.
pub fn run_bandwidth(
    run_dir: &Path,
    manifest: Option<&crate::env_manifest::EnvManifest>,
) -> (f64, String) {
    use crate::env_manifest::EnvManifest;
    use crate::timing::bandwidth::from_notes;
    let device = |m: &EnvManifest| {
        m.gpu
            .as_ref()
            .and_then(|g| g.get("name"))
            .and_then(|n| n.as_str())
            .unwrap_or("the run's GPU")
            .to_string()
    };
    if let Some(m) = manifest {
        if let Some(bw) = from_notes(&m.notes) {
            let text = format!(
                "measured on {} by the run's read-bandwidth probe: {}",
                device(m),
                bw.describe()
            );
            return (bw.bytes_per_s, text);
        }
    }
    let mut shard_rates = Vec::new();
    let mut shard_device = None;
    for index in 0.. {
        let dir = crate::run::devices::shard_dir(run_dir, index);
        if !dir.is_dir() {
            break;
        }
        if let Ok(m) = EnvManifest::read(&dir) {
            if let Some(bw) = from_notes(&m.notes) {
                shard_rates.push(bw.bytes_per_s);
                shard_device.get_or_insert_with(|| device(&m));
            }
        }
    }
    if let Some(mean) = stats::quantile::mean(&shard_rates) {
        let text = format!(
            "measured on {} by the read-bandwidth probe of each shard: mean of {} shards, {:.3} TB/s",
            shard_device.unwrap_or_default(),
            shard_rates.len(),
            mean / 1e12
        );
        return (mean, text);
    }
    if let Some(gbs) = manifest
        .and_then(|m| m.notes.get("host_copy_bandwidth_gbs"))
        .and_then(|v| v.as_f64())
        .filter(|g| *g > 0.0)
    {
        return (
            gbs * 1e9,
            format!("the host copy probe of this CPU run (--bandwidth): {gbs:.1} GB/s"),
        );
    }
    (
        H200_BANDWIDTH_BYTES_PER_S,
        format!(
            "nominal: the H200's {:.2} TB/s (this run recorded no bandwidth probe)",
            H200_BANDWIDTH_BYTES_PER_S / 1e12
        ),
    )
}

/// One line per library peer of the run (`notes.peer_*.meta` in its
/// manifest, written by scripts/peer.py): library, method, and the JIT
/// build time that no record contains.
pub fn peer_notes(manifest: Option<&crate::env_manifest::EnvManifest>) -> Vec<String> {
    let Some(manifest) = manifest else {
        return Vec::new();
    };
    manifest
        .notes
        .iter()
        .filter_map(|(key, note)| {
            let peer = key.strip_prefix("peer_")?;
            let meta = note.get("meta")?;
            let text = |k: &str| meta.get(k).and_then(|v| v.as_str()).map(str::to_string);
            let seconds = |k: &str| meta.get(k).and_then(|v| v.as_f64());
            let mut parts = vec![text("library")
                .or_else(|| text("stand_in").map(|s| format!("{s} stand-in")))
                .unwrap_or_else(|| "library unknown".into())];
            if let Some(method) = text("method") {
                parts.push(format!("timed by {method}"));
            }
            if let Some(s) = seconds("jit_build_s").filter(|s| *s > 0.0) {
                parts.push(format!("JIT build {s:.1} s (before timing, in no record)"));
            }
            if let Some(s) = seconds("first_calls_s").filter(|s| *s > 0.0) {
                parts.push(format!("first calls {s:.1} s (untimed)"));
            }
            Some(format!("peer {peer}: {}", parts.join("; ")))
        })
        .collect()
}

fn write_text(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| GvrError::io(path, e))
}

fn to_json_pretty<T: Serialize>(value: &T) -> Result<String> {
    serde_json::to_string_pretty(value)
        .map_err(|e| GvrError::Other(anyhow::anyhow!("serialising JSON: {e}")))
}

/// `gvr-bench report`: writes summary.md, cases.csv, summary.json and the SVG
/// plots into the output directory and returns the summary.
pub fn report(opts: &ReportOptions) -> Result<ReportSummary> {
    let run = load_run(&opts.run)?;
    // Only `report` shows floors (`grid --floor` runs; none otherwise).
    let floors = crate::floor::read_floor_records(&run.dir)?;
    let (bandwidth, bandwidth_source) = match opts.bandwidth {
        Some(bw) => (
            bw,
            format!("given with --bandwidth ({:.3} TB/s)", bw / 1e12),
        ),
        None => run_bandwidth(&run.dir, run.manifest.as_ref()),
    };
    let mut summary = summarise(
        &run.dir,
        &run.records,
        &floors,
        run.environment.clone(),
        opts.base.as_deref(),
        &opts.vs,
        bandwidth,
    )?;
    summary.bandwidth_source = bandwidth_source;
    summary.reps.protocol = run.manifest.as_ref().map(|m| m.protocol);
    summary.peer_notes = peer_notes(run.manifest.as_ref());
    let out = opts.out.clone().unwrap_or_else(|| run.dir.join("report"));
    std::fs::create_dir_all(&out).map_err(|e| GvrError::io(&out, e))?;

    let csv_path = out.join("cases.csv");
    write_cases_csv(&csv_path, &run.records, summary.bandwidth)?;
    summary.files.push(csv_path);
    if !opts.no_plots {
        summary.files.extend(plot::write_plots(&summary, &out)?);
    }
    let md_path = out.join("summary.md");
    let json_path = out.join("summary.json");
    summary.files.push(md_path.clone());
    summary.files.push(json_path.clone());
    write_text(&md_path, &render_summary(&summary))?;
    write_text(&json_path, &to_json_pretty(&summary)?)?;
    Ok(summary)
}

/// `gvr-bench aa`: the A/A noise floor of two runs, or of two arms of one run.
#[derive(Debug, Clone, clap::Args)]
pub struct AaOptions {
    /// First run directory (or its results.jsonl).
    pub run_a: PathBuf,
    /// Second run of the same thing; omit to compare two arms of `run_a`.
    pub run_b: Option<PathBuf>,
    /// Arm of side A [two runs: default every arm present in both, pooled].
    #[arg(long)]
    pub arm: Option<String>,
    /// Arm of side B (same run, e.g. "radix" vs "radix#2") [default: --arm;
    /// one run without --arm: every ARM with a twin ARM#2, pooled].
    #[arg(long)]
    pub arm_b: Option<String>,
    /// Refuse (exit 2) when the two sides share fewer than this fraction
    /// of their cases (common / larger side).
    #[arg(long, default_value_t = DEFAULT_MIN_COMMON)]
    pub min_common: f64,
    /// Write the noise floor as JSON here.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Per-case ratios time(B) / time(A) of an A/A setup. Pure; shared by `aa`.
pub fn aa_ratios(
    a: &[CaseTime],
    b: &[CaseTime],
    arm_a: Option<&str>,
    arm_b: Option<&str>,
    same_run: bool,
) -> Result<Vec<f64>> {
    let arms_a = arms_in_order(a);
    let arms_b = arms_in_order(b);
    let pairs: Vec<(String, String)> = match (arm_a, arm_b) {
        (Some(x), Some(y)) => vec![(x.to_string(), y.to_string())],
        (Some(x), None) if !same_run => vec![(x.to_string(), x.to_string())],
        (None, None) if !same_run => arms_a.iter().filter(|x| arms_b.contains(x)).map(|x| (x.clone(), x.clone())).collect(),
        (None, Some(_)) => return Err(GvrError::Usage("--arm-b needs --arm".to_string())),
        (None, None) => {
            // One run: every arm against its interleaved twin (`grid --aa`).
            let twins: Vec<(String, String)> = arms_a
                .iter()
                .filter(|x| !x.ends_with("#2") && arms_a.contains(&format!("{x}#2")))
                .map(|x| (x.clone(), format!("{x}#2")))
                .collect();
            if twins.is_empty() {
                return Err(GvrError::Usage(format!(
                    "aa on one run compares an arm with its twin, and this run has none (arms: {}); record one with `grid --aa ARM`, or name two arms with --arm and --arm-b",
                    arms_a.join(", ")
                )));
            }
            twins
        }
        _ => {
            return Err(GvrError::Usage(
                "aa on one run compares two arms: give --arm and --arm-b (e.g. --arm radix --arm-b radix#2)".to_string(),
            ))
        }
    };
    if pairs.is_empty() {
        return Err(GvrError::Usage(format!(
            "the two runs share no arm (A: {}; B: {})",
            arms_a.join(", "),
            arms_b.join(", ")
        )));
    }
    let mut ratios = Vec::new();
    for (x, y) in &pairs {
        if !arms_a.contains(x) {
            return Err(unknown_arm("--arm", x, &arms_a));
        }
        if !arms_b.contains(y) {
            return Err(unknown_arm(
                if arm_b.is_some() { "--arm-b" } else { "--arm" },
                y,
                &arms_b,
            ));
        }
        ratios.extend(stats::pair(a, x, b, y).ratios());
    }
    Ok(ratios)
}

/// Default of `--min-common` (`aa`, `regress`): the share of cases two sides
/// must have in common before their comparison means anything.
pub const DEFAULT_MIN_COMMON: f64 = 0.9;

/// Cases of `arm_a` in `a` and of `arm_b` in `b`: (common, only in a, only in b).
pub fn case_overlap(
    a: &[CaseTime],
    arm_a: &str,
    b: &[CaseTime],
    arm_b: &str,
) -> (usize, usize, usize) {
    use std::collections::BTreeSet;
    let of = |v: &[CaseTime], arm: &str| -> BTreeSet<String> {
        v.iter()
            .filter(|c| c.arm == arm)
            .map(|c| c.case.clone())
            .collect()
    };
    let (x, y) = (of(a, arm_a), of(b, arm_b));
    let common = x.intersection(&y).count();
    (common, x.len() - common, y.len() - common)
}

/// Refuse a comparison whose sides share too few cases: nothing in common
/// always, else less than `min_common` of the larger side.
pub fn check_overlap(
    what: &str,
    (common, only_a, only_b): (usize, usize, usize),
    min_common: f64,
) -> Result<()> {
    let larger = (common + only_a).max(common + only_b);
    if common == 0 || (common as f64) < min_common * larger as f64 {
        return Err(GvrError::Usage(format!(
            "cannot compare {what}: {common} cases in common, {only_a} only in the first, {only_b} only in the second (--min-common {min_common} needs {:.0} of {larger})",
            (min_common * larger as f64).ceil().max(1.0)
        )));
    }
    Ok(())
}

/// The manifest of the run a `regress`/`aa` input came from (a run
/// directory, its results.jsonl, or its report's summary.json), if any.
pub fn input_manifest(path: &Path) -> Option<crate::env_manifest::EnvManifest> {
    path.ancestors()
        .take(3)
        .filter(|dir| dir.join(MANIFEST_FILE).is_file())
        .find_map(|dir| crate::env_manifest::EnvManifest::read(dir).ok())
}

/// Refuse to compare two runs measured on other inputs, protocol or rows
/// mode. Inputs without a manifest (a copied summary.json) are compared on
/// their cases alone, with a warning.
fn check_comparable(a: &Path, b: &Path) -> Result<()> {
    match (input_manifest(a), input_manifest(b)) {
        (Some(ma), Some(mb)) => ma.comparison_conflict(&mb).map_err(|why| {
            GvrError::Usage(format!(
                "cannot compare {} with {}: {why}",
                a.display(),
                b.display()
            ))
        }),
        _ => {
            tracing::warn!(
                "no manifest.json beside {} or {}: capture set, protocol and rows mode not checked",
                a.display(),
                b.display()
            );
            Ok(())
        }
    }
}

/// The (arm A, arm B) pairs `aa` compares, as `aa_ratios` picks them
/// (empty when the options are refused there).
fn aa_arm_pairs(
    a: &[CaseTime],
    b: &[CaseTime],
    opts: &AaOptions,
    same_run: bool,
) -> Vec<(String, String)> {
    let arms_a = arms_in_order(a);
    let arms_b = arms_in_order(b);
    match (&opts.arm, &opts.arm_b, same_run) {
        (Some(x), Some(y), _) => vec![(x.clone(), y.clone())],
        (Some(x), None, false) => vec![(x.clone(), x.clone())],
        (None, None, false) => arms_a
            .iter()
            .filter(|x| arms_b.contains(x))
            .map(|x| (x.clone(), x.clone()))
            .collect(),
        (None, None, true) => arms_a
            .iter()
            .filter(|x| arms_a.contains(&format!("{x}#2")))
            .map(|x| (x.clone(), format!("{x}#2")))
            .collect(),
        _ => Vec::new(),
    }
    .into_iter()
    .filter(|(x, y)| arms_a.contains(x) && arms_b.contains(y))
    .collect()
}

fn check_fraction(flag: &str, v: f64) -> Result<()> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(GvrError::Usage(format!("{flag} {v}: must be in [0, 1]")))
    }
}

/// `gvr-bench aa`: compute (and optionally write) the noise floor.
pub fn aa(opts: &AaOptions) -> Result<NoiseFloor> {
    let run_a = load_run(&opts.run_a)?;
    let cases_a = CaseTime::from_records(&run_a.records);
    let (cases_b, same_run) = match &opts.run_b {
        Some(path) => (CaseTime::from_records(&load_run(path)?.records), false),
        None => (cases_a.clone(), true),
    };
    check_fraction("--min-common", opts.min_common)?;
    if let Some(run_b) = &opts.run_b {
        check_comparable(&opts.run_a, run_b)?;
        if opts.arm.is_none() {
            // As sets: the records' order of arms is the order cases finished in,
            // which two runs of one command need not share (parallel CPU engines).
            let (mut arms_a, mut arms_b) = (arms_in_order(&cases_a), arms_in_order(&cases_b));
            arms_a.sort();
            arms_b.sort();
            if arms_a != arms_b {
                return Err(GvrError::Usage(format!(
                    "cannot pool the A/A of {} and {}: arm lists differ ({} vs {}); name one with --arm",
                    opts.run_a.display(),
                    run_b.display(),
                    arms_a.join(","),
                    arms_b.join(",")
                )));
            }
        }
    }
    for (x, y) in aa_arm_pairs(&cases_a, &cases_b, opts, same_run) {
        check_overlap(
            &format!("{x} with {y}"),
            case_overlap(&cases_a, &x, &cases_b, &y),
            opts.min_common,
        )?;
    }
    let ratios = aa_ratios(
        &cases_a,
        &cases_b,
        opts.arm.as_deref(),
        opts.arm_b.as_deref(),
        same_run,
    )?;
    let floor = NoiseFloor::of(&ratios).ok_or_else(|| {
        GvrError::input(
            &run_a.results,
            "records",
            "no case is exact and timed on both sides of the A/A",
        )
    })?;
    if let Some(out) = &opts.out {
        write_text(out, &to_json_pretty(&floor)?)?;
    }
    Ok(floor)
}

/// `gvr-bench regress`: baseline vs current; exit 1 when regressed.
#[derive(Debug, Clone, clap::Args)]
pub struct RegressOptions {
    /// Baseline: run directory, results.jsonl, or a report's summary.json.
    #[arg(long)]
    pub baseline: PathBuf,
    /// Current: run directory, results.jsonl, or a report's summary.json.
    #[arg(long)]
    pub current: PathBuf,
    /// A/A noise floor JSON (from `aa --out`); its P99 is the noise band edge
    /// [default band edge: 1.05].
    #[arg(long)]
    pub noise: Option<PathBuf>,
    /// Only this arm [default: every arm present in both].
    #[arg(long)]
    pub arm: Option<String>,
    /// A slower case must also be slower by more than this many µs.
    #[arg(long, default_value_t = 0.5)]
    pub abs_floor_us: f64,
    /// Flag an arm whose geomean current/baseline exceeds this.
    #[arg(long, default_value_t = 1.02)]
    pub geomean_threshold: f64,
    /// An arm regresses on slower cases only when they exceed this share of
    /// its compared cases (about 1 % fall outside an A/A P99 band by chance);
    /// 0 makes any slower case a regression.
    #[arg(long, default_value_t = 0.01)]
    pub max_slower_fraction: f64,
    /// Refuse (exit 2) when an arm's cases in common are fewer than this
    /// fraction of the larger side's.
    #[arg(long, default_value_t = DEFAULT_MIN_COMMON)]
    pub min_common: f64,
    /// Write the markdown summary here.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// The outcome of `regress`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegressVerdict {
    pub regressed: bool,
    pub markdown: String,
    pub analysis: RegressAnalysis,
}

impl std::fmt::Display for RegressVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.markdown)
    }
}

/// Per-case times from a run directory, a results.jsonl, or a summary.json
/// written by `report` (its `cases` array).
pub fn load_case_times(path: &Path) -> Result<Vec<CaseTime>> {
    let is_summary_json = path.is_file() && path.extension().is_some_and(|e| e == "json");
    if !is_summary_json {
        return Ok(CaseTime::from_records(&load_run(path)?.records));
    }
    let text = std::fs::read_to_string(path).map_err(|e| GvrError::io(path, e))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| GvrError::input(path, "json", e.to_string()))?;
    let cases = value.get("cases").ok_or_else(|| {
        GvrError::input(
            path,
            "cases",
            "missing: not a summary.json written by `report`",
        )
    })?;
    let cases: Vec<CaseTime> = serde_json::from_value(cases.clone())
        .map_err(|e| GvrError::input(path, "cases", e.to_string()))?;
    if cases.is_empty() {
        return Err(GvrError::input(path, "cases", "empty"));
    }
    Ok(cases)
}

/// Read a NoiseFloor JSON written by `aa --out`.
pub fn load_noise_floor(path: &Path) -> Result<NoiseFloor> {
    let text = std::fs::read_to_string(path).map_err(|e| GvrError::io(path, e))?;
    let floor: NoiseFloor = serde_json::from_str(&text)
        .map_err(|e| GvrError::input(path, "noise floor", e.to_string()))?;
    if !(floor.p99.is_finite() && floor.p99 > 0.0) {
        return Err(GvrError::input(
            path,
            "p99",
            format!("{} is not a positive ratio", floor.p99),
        ));
    }
    Ok(floor)
}

/// `gvr-bench regress`: compare, render, optionally write the markdown.
pub fn regress(opts: &RegressOptions) -> Result<RegressVerdict> {
    if !(opts.abs_floor_us.is_finite() && opts.abs_floor_us >= 0.0) {
        return Err(GvrError::Usage(format!(
            "--abs-floor-us {}: must be >= 0",
            opts.abs_floor_us
        )));
    }
    if !(opts.geomean_threshold.is_finite() && opts.geomean_threshold > 0.0) {
        return Err(GvrError::Usage(format!(
            "--geomean-threshold {}: must be a positive ratio",
            opts.geomean_threshold
        )));
    }
    check_fraction("--min-common", opts.min_common)?;
    let baseline = load_case_times(&opts.baseline)?;
    let current = load_case_times(&opts.current)?;
    check_comparable(&opts.baseline, &opts.current)?;
    let noise = opts.noise.as_deref().map(load_noise_floor).transpose()?;
    let config = RegressConfig {
        noise_upper: noise.map_or(RegressConfig::default().noise_upper, |n| n.upper_edge()),
        abs_floor_us: opts.abs_floor_us,
        geomean_threshold: opts.geomean_threshold,
        max_slower_fraction: opts.max_slower_fraction,
    };
    let baseline_arms = arms_in_order(&baseline);
    let current_arms = arms_in_order(&current);
    let arms: Vec<String> = match &opts.arm {
        Some(arm) => {
            if !baseline_arms.contains(arm) {
                return Err(unknown_arm("--arm", arm, &baseline_arms));
            }
            if !current_arms.contains(arm) {
                return Err(unknown_arm("--arm", arm, &current_arms));
            }
            vec![arm.clone()]
        }
        None => {
            let missing: Vec<&str> = baseline_arms
                .iter()
                .filter(|a| !current_arms.contains(a))
                .map(String::as_str)
                .collect();
            let added: Vec<&str> = current_arms
                .iter()
                .filter(|a| !baseline_arms.contains(a))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() || !added.is_empty() {
                let mut why = Vec::new();
                if !missing.is_empty() {
                    why.push(format!(
                        "missing from the current run: {}",
                        missing.join(", ")
                    ));
                }
                if !added.is_empty() {
                    why.push(format!("not in the baseline: {}", added.join(", ")));
                }
                return Err(GvrError::Usage(format!(
                    "cannot compare every arm ({}); pass --arm ARM to gate one arm",
                    why.join("; ")
                )));
            }
            baseline_arms.clone()
        }
    };
    for arm in &arms {
        check_overlap(
            &format!("arm {arm} of the baseline and the current run"),
            case_overlap(&baseline, arm, &current, arm),
            opts.min_common,
        )?;
    }
    if arms.is_empty() {
        return Err(GvrError::input(
            &opts.current,
            "arm",
            "no arm is present in both the baseline and the current run",
        ));
    }
    let analysis = stats::analyse(&baseline, &current, &arms, &config);
    let markdown = render_regress(
        &analysis,
        &opts.baseline,
        &opts.current,
        opts.noise.as_deref(),
    );
    if let Some(out) = &opts.out {
        write_text(out, &markdown)?;
    }
    Ok(RegressVerdict {
        regressed: analysis.regressed(),
        markdown,
        analysis,
    })
}

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
    report(&parsed.opts).map(|summary| summary.to_string())
}

#[derive(clap::Parser)]
struct AaDefaults {
    #[command(flatten)]
    opts: AaOptions,
}

/// The A/A noise floor of `ARM` vs `ARM#2` inside one run → printable text.
pub fn aa_in_run(run_dir: &Path, arm: &str) -> Result<String> {
    use clap::Parser;
    let args = [
        "aa".to_string(),
        run_dir.display().to_string(),
        format!("--arm={arm}"),
        format!("--arm-b={arm}#2"),
    ];
    let parsed = AaDefaults::try_parse_from(&args)
        .map_err(|e| GvrError::Other(anyhow::anyhow!("default aa options: {e}")))?;
    aa(&parsed.opts).map(|floor| floor.to_string())
}
