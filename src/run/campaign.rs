//! `gvr-bench grid`: cases × arms with timing, exactness and streaming
//! results.
//!
//! Shape of the loop:
//! - a loader thread reads one cell ahead (at most two cells in memory);
//! - the main thread forms each case's batch once, so every arm sees
//!   byte-identical input, then stages, poisons, times and reads each arm;
//! - with a GPU, the case's inputs are uploaded once (only the distinct
//!   rows cross PCIe; replicas are copied on the device) and every GPU arm's
//!   `stage` copies them device-to-device;
//! - checker threads verify outputs (overlapping the next arm's work) and
//!   append the records to `results.jsonl`; the per-row selection work of a
//!   check is done once per distinct row and shared by the case's arms
//!   (`exact::PeriodicCheck`);
//! - the main thread's wall time is split into phases, printed at the end
//!   and written to `phases.json`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::arms::registry::{self, Tunings};
use crate::arms::{Arm, Backend, Shape};
use crate::capture::{CaptureSet, CellData, CellMeta};
use crate::env_manifest::EnvManifest;
use crate::error::{GvrError, Result};
use crate::exact::{ExactStatus, PeriodicCheck};
use crate::gpu::{Gpu, SharedInputs};
use crate::grid::Selection;
use crate::grid::{Batch, Case, RowsMode};
use crate::record::results::{completed_pairs, ResultsWriter, RESULTS_FILE};
use crate::record::CaseRecord;
use crate::timing::gpu::TimingChoice;
use crate::timing::phases::{Phase, PhaseTimes};
use crate::timing::{HostTimer, Protocol, Timer, TimingMethod, Timings};

/// Everything `gvr-bench grid` was asked to do.
#[derive(Debug, Clone)]
pub struct GridConfig {
    pub captures: PathBuf,
    /// Grid file; `None` = every cell of the capture set.
    pub grid: Option<PathBuf>,
    pub selection: Selection,
    /// Explicit arm list; `None` = the default for the available backend.
    pub arms: Option<Vec<String>>,
    pub run_dir: PathBuf,
    /// Continue an existing run directory, skipping finished (case, arm) pairs.
    pub resume: bool,
    pub protocol: Protocol,
    pub device: usize,
    /// Do not try the GPU at all.
    pub cpu_only: bool,
    /// A/A: run this arm twice (as `ARM` and `ARM#2`), order alternating per case.
    pub aa: Option<String>,
    /// Record a memory-bandwidth probe in the manifest.
    pub bandwidth: bool,
    /// Also measure each case's latency floor into `floor.jsonl` (GPU only).
    pub floor: bool,
    /// The knobs of every arm instance (`--knob`, `--tune`, experiment variants).
    pub tunings: Tunings,
    /// How GPU arms are timed (`grid --timing`).
    pub timing: TimingChoice,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    pub run_dir: PathBuf,
    pub cases: usize,
    pub records_written: usize,
    pub pairs_skipped: usize,
    /// Records whose exactness check failed (WRONG / UNWRITTEN / FAILED).
    pub inexact: usize,
    /// Stopped early by SIGINT or SIGTERM; the run can be resumed.
    pub interrupted: bool,
    /// The signal that stopped it (0 when not interrupted).
    pub stop_signal: i32,
    /// Bandwidth of the memory the arms ran on (bytes/s), for roofline
    /// fractions: the device read-bandwidth probe on a GPU, the host copy
    /// probe with `--bandwidth` on a CPU run; `None` when not measured.
    pub bandwidth_bytes_per_s: Option<f64>,
    /// The method the GPU timer used (`None`: no GPU); peers use the same.
    pub gpu_method: Option<TimingMethod>,
}

/// GPU arms run by default when a GPU is present.
pub const DEFAULT_GPU_ARMS: [&str; 5] = ["ss", "radix", "radix-mcta", "filtered", "gvr1"];

/// The cases a configuration selects, checked against the capture set.
pub fn select_cases(
    captures: &CaptureSet,
    grid: Option<&Path>,
    selection: &Selection,
) -> Result<Vec<Case>> {
    let cells: Vec<CellMeta> = match grid {
        Some(path) => crate::grid::load_grid(path)?,
        None => captures
            .manifest
            .cells
            .iter()
            .map(|c| c.meta.clone())
            .collect(),
    };
    let cases = crate::grid::select(&cells, selection)?;
    if let Some(grid_path) = grid {
        let mut missing: Vec<&str> = cases
            .iter()
            .map(|c| c.cell.id.as_str())
            .filter(|id| captures.cell(id).is_none())
            .collect();
        missing.dedup();
        if !missing.is_empty() {
            let shown: Vec<&str> = missing.iter().take(5).copied().collect();
            return Err(GvrError::input(
                grid_path,
                "cells",
                format!(
                    "{} selected cell(s) are not in the capture set {} (first: {})",
                    missing.len(),
                    captures.dir.display(),
                    shown.join(", ")
                ),
            ));
        }
        // A grid row's n must be the captured cell's: a run would otherwise
        // be labelled with a shape its rows do not have.
        for case in &cases {
            let captured = captures.cell(&case.cell.id).map(|c| c.meta.n);
            if let Some(captured) = captured.filter(|&n| n != case.cell.n) {
                return Err(GvrError::input(
                    grid_path,
                    format!("cell {} n", case.cell.id),
                    format!(
                        "the grid says n = {} but the capture set {} has n = {captured}",
                        case.cell.n,
                        captures.dir.display()
                    ),
                ));
            }
        }
    }
    if cases.is_empty() {
        return Err(GvrError::Usage("the selection matches no cases".into()));
    }
    Ok(cases)
}

/// Consecutive runs of cases that share a cell, in selection order, so each
/// cell file is loaded once.
pub fn group_by_cell(cases: Vec<Case>) -> Vec<Vec<Case>> {
    let mut order: Vec<String> = Vec::new();
    let mut groups: HashMap<String, Vec<Case>> = HashMap::new();
    for case in cases {
        let id = case.cell.id.clone();
        if !groups.contains_key(&id) {
            order.push(id.clone());
        }
        groups.entry(id).or_default().push(case);
    }
    order
        .into_iter()
        .filter_map(|id| groups.remove(&id))
        .collect()
}

/// The device, or why there is none (the reason is printed to the user).
pub fn open_device(cpu_only: bool, device: usize) -> (Option<Arc<Gpu>>, Option<String>) {
    open_device_for(cpu_only, device, TimingChoice::Auto)
}

/// [`open_device`] for a run timed as `timing` (CUPTI attached only for
/// kernel time).
pub fn open_device_for(
    cpu_only: bool,
    device: usize,
    timing: TimingChoice,
) -> (Option<Arc<Gpu>>, Option<String>) {
    if cpu_only {
        return (None, Some("--cpu given".into()));
    }
    match Gpu::open_with(device, timing.wants_cupti()) {
        Ok(gpu) => (Some(gpu), None),
        Err(e) => (None, Some(e.to_string())),
    }
}

/// Resolve the arm names for a run: explicit list, A/A pair, or defaults.
/// Prints the one-line CPU notice when falling back to CPU engines.
pub fn resolve_arms(
    explicit: Option<&[String]>,
    aa: Option<&str>,
    gpu: &Option<Arc<Gpu>>,
    no_gpu_reason: Option<&str>,
) -> Result<Vec<String>> {
    let mut names: Vec<String> = match explicit {
        Some(list) => list.to_vec(),
        None if aa.is_some() => Vec::new(),
        None if gpu.is_some() => DEFAULT_GPU_ARMS.iter().map(|s| s.to_string()).collect(),
        None => registry::CPU_ARMS.iter().map(|s| s.to_string()).collect(),
    };
    if let Some(arm) = aa {
        registry::info(arm)?;
        if arm.contains('#') {
            return Err(GvrError::Usage(format!(
                "--aa {arm}: give the plain arm name; the twin is added for you"
            )));
        }
        for name in [arm.to_string(), format!("{arm}#2")] {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    for name in &names {
        registry::info(name)?;
    }
    let wants_gpu = names.iter().any(|n| {
        registry::info(n)
            .map(|i| i.backend == Backend::Gpu)
            .unwrap_or(false)
    });
    if gpu.is_none() {
        if wants_gpu {
            let reason = no_gpu_reason.unwrap_or("unknown reason");
            return Err(GvrError::Usage(format!(
                "no GPU available ({reason}), and the requested arms include GPU arms; use the CPU arms {}",
                registry::CPU_ARMS.join(", ")
            )));
        }
        if explicit.is_none() && aa.is_none() {
            println!(
                "no GPU available ({}): running the CPU engines {}; times are host-clock and not comparable to GPU kernel times",
                no_gpu_reason.unwrap_or("unknown reason"),
                registry::CPU_ARMS.join(", ")
            );
        }
    }
    Ok(names)
}

/// Arm names as recorded, with their instances (same order).
pub type BuiltArms = (Vec<String>, Vec<Box<dyn Arm>>);

/// Instantiate the arms. An explicitly requested arm must build; from a
/// default list, GPU arms not yet in this binary are skipped with a note.
pub fn build_arms(
    names: Vec<String>,
    defaults: bool,
    gpu: &Option<Arc<Gpu>>,
    tunings: &Tunings,
) -> Result<BuiltArms> {
    if !defaults {
        let arms = names
            .iter()
            .map(|n| registry::create_tuned(n, gpu.clone(), tunings))
            .collect::<Result<_>>()?;
        return Ok((names, arms));
    }
    let mut built = Vec::new();
    let mut skipped = Vec::new();
    for name in names {
        match registry::try_create(&name, gpu.clone(), tunings)? {
            Some(arm) => built.push((name, arm)),
            None => skipped.push(name),
        }
    }
    if !skipped.is_empty() {
        eprintln!(
            "note: skipping default arms not built into this binary yet: {}",
            skipped.join(", ")
        );
    }
    if built.is_empty() {
        return Err(GvrError::Usage(
            "none of the default arms is built into this binary; pass --arms".into(),
        ));
    }
    Ok(built.into_iter().unzip())
}

/// One (case, arm) waiting for its exactness verdict.
struct CheckJob {
    /// The case's batch with its shared per-row check work.
    check: Arc<PeriodicCheck>,
    /// `None` when the verdict is already known (unsupported, failed).
    output: Option<Vec<i32>>,
    /// The first timed launch's output (written over a fresh poison).
    first_output: Option<Vec<i32>>,
    record: CaseRecord,
}

/// The verdict of one (case, arm): the first timed launch's output, then
/// the last launch's. A wrong first launch is reported as such even when
/// later launches are right (state left by the warm-up, a launch that only
/// works over its predecessor's output).
fn verdict(check: &PeriodicCheck, first: Option<&[i32]>, last: &[i32]) -> ExactStatus {
    if let Some(first) = first {
        match check.check(first) {
            ExactStatus::Exact => {}
            ExactStatus::Wrong { row, reason } => {
                return ExactStatus::Wrong {
                    row,
                    reason: format!("first timed launch: {reason}"),
                }
            }
            other => return other,
        }
    }
    check.check(last)
}

/// Checker threads: verify, then append. Errors (I/O) are kept for the caller.
struct CheckerPool {
    sender: Option<SyncSender<CheckJob>>,
    workers: Vec<JoinHandle<()>>,
    written: Arc<Mutex<(usize, usize)>>, // (records, inexact)
    first_error: Arc<Mutex<Option<GvrError>>>,
}

impl CheckerPool {
    fn start(writer: ResultsWriter, threads: usize) -> CheckerPool {
        // Small bound: each queued job may hold a large batch (Arc-shared
        // between the arms of one case, so this is about cases, not arms).
        let (sender, receiver) = sync_channel::<CheckJob>(4);
        let receiver = Arc::new(Mutex::new(receiver));
        let writer = Arc::new(Mutex::new(writer));
        let written = Arc::new(Mutex::new((0usize, 0usize)));
        let first_error = Arc::new(Mutex::new(None));
        let workers = (0..threads.max(1))
            .map(|_| {
                let receiver = Arc::clone(&receiver);
                let writer = Arc::clone(&writer);
                let written = Arc::clone(&written);
                let first_error = Arc::clone(&first_error);
                std::thread::spawn(move || checker_loop(&receiver, &writer, &written, &first_error))
            })
            .collect();
        CheckerPool {
            sender: Some(sender),
            workers,
            written,
            first_error,
        }
    }

    fn submit(&self, job: CheckJob) -> Result<()> {
        let sender = self
            .sender
            .as_ref()
            .ok_or_else(|| GvrError::Other(anyhow::anyhow!("checker pool closed")))?;
        sender
            .send(job)
            .map_err(|_| GvrError::Other(anyhow::anyhow!("checker threads exited early")))
    }

    /// Wait for every queued check; → (records written, inexact records).
    fn finish(mut self) -> Result<(usize, usize)> {
        drop(self.sender.take());
        for worker in self.workers.drain(..) {
            if worker.join().is_err() {
                return Err(GvrError::Other(anyhow::anyhow!(
                    "a checker thread panicked"
                )));
            }
        }
        if let Some(e) = lock(&self.first_error).take() {
            return Err(e);
        }
        let counts = *lock(&self.written);
        Ok(counts)
    }
}

/// A poisoned mutex only means another checker panicked; the data is still
/// the best we have, and the panic itself is reported by `finish`.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn checker_loop(
    receiver: &Mutex<Receiver<CheckJob>>,
    writer: &Mutex<ResultsWriter>,
    written: &Mutex<(usize, usize)>,
    first_error: &Mutex<Option<GvrError>>,
) {
    loop {
        let job = match lock(receiver).recv() {
            Ok(job) => job,
            Err(_) => return, // sender dropped: no more work
        };
        let CheckJob {
            check,
            output,
            first_output,
            mut record,
        } = job;
        if let Some(output) = output {
            record.exact = verdict(&check, first_output.as_deref(), &output);
        }
        drop(check);
        let inexact = is_inexact(&record.exact);
        match lock(writer).append(&record) {
            Ok(()) => {
                let mut counts = lock(written);
                counts.0 += 1;
                counts.1 += usize::from(inexact);
            }
            Err(e) => {
                lock(first_error).get_or_insert(e);
            }
        }
    }
}

/// A verdict that blocks certification: the arm ran (or tried to) and was wrong.
pub fn is_inexact(status: &ExactStatus) -> bool {
    matches!(
        status,
        ExactStatus::Wrong { .. } | ExactStatus::Unwritten { .. } | ExactStatus::Failed { .. }
    )
}

/// The record skeleton of (case, arm); timings and verdict are filled later.
pub fn base_record(
    case: &Case,
    rows: RowsMode,
    batch: &Batch,
    arm: &str,
    variant: Option<String>,
) -> CaseRecord {
    let meta = &case.cell;
    let valid_elems: u64 = batch.n.iter().map(|&n| n as u64).sum();
    CaseRecord {
        case: case.id(),
        cell: meta.id.clone(),
        model: meta.model,
        isl: meta.isl.clone(),
        layer: meta.layer,
        n: meta.n,
        k: meta.k,
        cr: meta.cr,
        next_n: meta.next_n,
        b: case.b as u32,
        rows,
        arm: arm.to_string(),
        variant,
        cold_us: Vec::new(),
        warm_us: Vec::new(),
        method: None,
        exact: ExactStatus::Unsupported {
            reason: "not run".into(),
        },
        // 4·Σ(n_r + K): equals min_bytes(B, N, K) for uniform rows and stays
        // the true minimum when rows differ in length.
        bytes: 4 * (valid_elems + batch.rows as u64 * batch.k as u64),
    }
}

/// Stage, poison, time and read one arm on a batch. Timings are kept even
/// when the read-back fails, so a slow-but-broken arm is still visible.
pub fn measure_arm(
    arm: &mut dyn Arm,
    timer: &mut dyn Timer,
    batch: &Batch,
    protocol: &Protocol,
) -> (Option<Timings>, Result<Vec<i32>>) {
    measure_arm_phased(arm, timer, batch, protocol, &mut PhaseTimes::default())
}

/// [`measure_arm`], charging its wall time to `phases`.
pub fn measure_arm_phased(
    arm: &mut dyn Arm,
    timer: &mut dyn Timer,
    batch: &Batch,
    protocol: &Protocol,
    phases: &mut PhaseTimes,
) -> (Option<Timings>, Result<Vec<i32>>) {
    let staged = phases
        .time(Phase::Stage, || arm.stage(batch))
        .and_then(|_| phases.time(Phase::Poison, || arm.poison_output()));
    if let Err(e) = staged {
        return (None, Err(e));
    }
    let started = Instant::now();
    let measured = timer.measure(arm, protocol);
    charge_timer(timer, phases, started);
    let timings = match measured {
        Ok(t) => t,
        Err(e) => return (None, Err(e)),
    };
    let output = phases.time(Phase::ReadBack, || arm.read_output());
    (Some(timings), output)
}

/// Charge the timer's own split of the measurements since `started` to
/// `phases` (all of it to the timed reps when the timer does not split).
fn charge_timer(timer: &mut dyn Timer, phases: &mut PhaseTimes, started: Instant) {
    let timer_phases = timer.take_phases();
    if timer_phases.is_empty() {
        phases.add(Phase::TimedReps, started.elapsed());
    } else {
        phases.merge(&timer_phases);
    }
}

/// A cell's cases with the loaded cell (or why it failed to load).
type LoadedGroup = (Vec<Case>, Result<CellData>);

/// Cells loaded one ahead of the consumer on a background thread.
fn spawn_loader(
    captures: CaptureSet,
    groups: Vec<Vec<Case>>,
) -> (Receiver<LoadedGroup>, JoinHandle<()>) {
    // Capacity 0: the loader holds at most one finished cell while the main
    // thread works on another: two cells in memory at most.
    let (sender, receiver) = sync_channel(0);
    let handle = std::thread::spawn(move || {
        for group in groups {
            let id = group[0].cell.id.clone();
            let cell = match captures.cell(&id) {
                Some(entry) => captures.load_cell(entry).inspect(|cell| {
                    let (values, rows) = cell.nan_counts();
                    if values > 0 {
                        eprintln!(
                            "cell {id}: {values} NaN value(s) in {rows} of {} rows' valid prefixes",
                            cell.steps()
                        );
                    }
                }),
                None => Err(GvrError::input(
                    &captures.dir,
                    "cells",
                    format!("cell {id} is not in the capture set"),
                )),
            };
            if sender.send((group, cell)).is_err() {
                return; // consumer stopped (Ctrl-C or error)
            }
        }
    });
    (receiver, handle)
}

/// Run a campaign. Prints progress to stderr; returns counts for the caller
/// to report.
/// Batch sizes a CPU-only run uses unless `--batches` is given.
pub const CPU_DEFAULT_BATCHES: &str = "1,4,16";

pub fn run_grid(cfg: &GridConfig) -> Result<RunOutcome> {
    let mut created = false;
    let outcome = run_grid_in(cfg, &mut created);
    if outcome.is_err() && created {
        // A start that failed before its first record leaves nothing behind,
        // so rerunning the same command is not refused as "already has results".
        let results = cfg.run_dir.join(RESULTS_FILE);
        let empty = std::fs::metadata(&results).map_or(true, |m| m.len() == 0);
        if empty {
            let _ = std::fs::remove_dir_all(&cfg.run_dir);
        }
    }
    outcome
}

/// `run_grid`; sets `created` once it has created the run directory.
fn run_grid_in(cfg: &GridConfig, created: &mut bool) -> Result<RunOutcome> {
    let run_started = Instant::now();
    let captures = crate::capture::CaptureSet::open(&cfg.captures)?;
    let (gpu, no_gpu_reason) = open_device_for(cfg.cpu_only, cfg.device, cfg.timing);
    if cfg.floor && gpu.is_none() {
        return Err(GvrError::Usage(format!(
            "the latency floor (`grid --floor`, `floor = true` in an experiment file) needs a \
             GPU ({}); drop it or run on the GPU host",
            no_gpu_reason.as_deref().unwrap_or("none opened")
        )));
    }
    let mut selection = cfg.selection.clone();
    if gpu.is_none() && selection.batches.is_none() {
        // CPU engines are references, not contenders: small batches keep a
        // CPU-only run (the README's first command) to seconds.
        selection.batches = Some(CPU_DEFAULT_BATCHES.to_string());
        println!("CPU engines: batch sizes {CPU_DEFAULT_BATCHES} (pass --batches to change)");
    }
    let cases = select_cases(&captures, cfg.grid.as_deref(), &selection)?;
    let rows_mode = selection.rows;

    let arm_names = resolve_arms(
        cfg.arms.as_deref(),
        cfg.aa.as_deref(),
        &gpu,
        no_gpu_reason.as_deref(),
    )?;
    let defaults = cfg.arms.is_none() && cfg.aa.is_none();
    let (arm_names, mut arms) = build_arms(arm_names, defaults, &gpu, &cfg.tunings)?;
    if gpu.is_some() && cfg.timing == TimingChoice::Graph {
        refuse_uncapturable(&arms, cfg.floor)?;
    }
    let mut host_timer = HostTimer;
    let gpu_timer = gpu
        .clone()
        .map(|g| crate::timing::gpu::GpuTimer::with_choice(g, cfg.protocol, cfg.timing))
        .transpose()?;
    let gpu_method = gpu_timer.as_ref().map(|t| t.method());
    let mut gpu_timer = gpu_timer.map(|t| Box::new(t) as Box<dyn Timer>);

    // Run directory: fresh unless resuming.
    let run_dir = &cfg.run_dir;
    let done: HashSet<(String, String)> = if cfg.resume {
        if !run_dir.join(crate::env_manifest::MANIFEST_FILE).exists() {
            return Err(GvrError::input(
                run_dir,
                "manifest.json",
                "not a run directory (nothing to resume)",
            ));
        }
        crate::record::results::repair_torn_tail(run_dir)?;
        completed_pairs(run_dir)?
    } else {
        if run_dir.join(RESULTS_FILE).exists() {
            return Err(GvrError::input(
                run_dir,
                RESULTS_FILE,
                "run directory already has results; pass --resume to continue it or choose another --out",
            ));
        }
        *created = !run_dir.exists();
        super::create_out_dir(run_dir)?;
        HashSet::new()
    };

    let mut manifest =
        EnvManifest::collect(&cfg.captures, cfg.grid.as_deref(), cfg.protocol, rows_mode);
    if cfg.resume {
        // Keep the original start time and any notes; refresh the rest.
        if let Ok(previous) = EnvManifest::read(run_dir) {
            if let Err(why) = previous.merge_conflict(&manifest) {
                return Err(GvrError::input(
                    run_dir,
                    "manifest.json",
                    format!("cannot resume: {why}"),
                ));
            }
            manifest.started_utc = previous.started_utc;
            // The original command line defines the run (`--resume` re-parses it).
            manifest.command_line = previous.command_line;
            manifest.notes = previous.notes;
            manifest.timing_methods = previous.timing_methods;
        }
    }
    manifest.gpu = gpu.as_deref().map(Gpu::facts_json);
    if let Some(shard) = cfg.selection.shard.clone() {
        manifest
            .notes
            .insert("shard".into(), serde_json::json!(shard));
    }
    manifest
        .notes
        .insert("arms".into(), serde_json::json!(arm_names));
    // What was selected, less the shard: `merge` requires it to agree.
    let mut selection = cfg.selection.clone();
    selection.shard = None;
    manifest.notes.insert(
        "selection".into(),
        serde_json::json!(format!("{selection:?} grid={:?}", cfg.grid)),
    );
    // Only the host probe exists: it describes CPU arms' memory, not HBM.
    let bandwidth_bytes_per_s = match (cfg.bandwidth, &gpu) {
        (true, None) => {
            let gbs = super::bandwidth::host_copy_gbs();
            manifest
                .notes
                .insert("host_copy_bandwidth_gbs".into(), serde_json::json!(gbs));
            Some(gbs * 1e9)
        }
        (_, Some(gpu)) => device_bandwidth(gpu, &mut manifest, gpu_timer.as_deref_mut()),
        (false, None) => None,
    };
    // The latency floor: its own file, resumed like the results.
    let mut floor = match &gpu {
        Some(gpu) if cfg.floor => {
            manifest
                .notes
                .insert("floor".into(), serde_json::json!(true));
            let floored = if cfg.resume {
                crate::floor::floored_cases(run_dir)?
            } else {
                HashSet::new()
            };
            Some(CaseFloor {
                kernel: crate::floor::arm::FloorKernel::new(Arc::clone(gpu))
                    .with_extra_shapes(crate::floor::extra_shapes(&cfg.tunings.base)?)
                    .with_screen(crate::floor::screen_reps(&cfg.tunings.base)),
                writer: crate::floor::FloorWriter::open(run_dir)?,
                floored,
            })
        }
        _ => None,
    };
    manifest.write(run_dir)?;

    super::signals::install();

    let total_cases = cases.len();
    let mut progress = crate::progress::Progress::new("grid", "cases", total_cases as u64);

    let mut phases = PhaseTimes::default();
    if let Some(gpu) = &gpu {
        phases.time(Phase::Prebuild, || {
            super::prebuild::prebuild_for_cases(gpu, &arms, &cases, &captures)
        })?;
    }
    let checkers = CheckerPool::start(ResultsWriter::open(run_dir)?, checker_threads());
    let (cells, loader) = spawn_loader(captures, group_by_cell(cases));
    let mut skipped = 0usize;
    let mut interrupted = false;
    let mut stop_signal = 0;
    let mut case_index = 0usize;
    phases.add(
        Phase::Setup,
        run_started
            .elapsed()
            .saturating_sub(phases.get(Phase::Prebuild)),
    );
    let mut case_arms = 0usize;
    let loop_result: Result<()> = (|| {
        loop {
            let waiting = Instant::now();
            let Ok((group, cell)) = cells.recv() else {
                break;
            };
            phases.add(Phase::LoadCaptures, waiting.elapsed());
            let cell = cell?;
            for case in &group {
                let pending: Vec<usize> = (0..arms.len())
                    .filter(|&i| !done.contains(&(case.id(), arms[i].name().to_string())))
                    .collect();
                skipped += arms.len() - pending.len();
                let wants_floor = floor
                    .as_ref()
                    .is_some_and(|f| !f.floored.contains(&case.id()));
                if !pending.is_empty() || wants_floor {
                    progress.set_message(case.id());
                    let batch = Arc::new(
                        phases.time(Phase::BuildBatch, || Batch::form(&cell, case.b, rows_mode))?,
                    );
                    let period = Batch::row_period(cell.steps(), case.b, rows_mode);
                    let check = Arc::new(PeriodicCheck::new(Arc::clone(&batch), period));
                    // One upload per case for every GPU arm (held until the
                    // case's arms are done).
                    let any_gpu_arm =
                        wants_floor || pending.iter().any(|&i| arms[i].backend() == Backend::Gpu);
                    let _shared = match (&gpu, any_gpu_arm) {
                        (Some(gpu), true) => {
                            phases.time(Phase::StageShared, || share_inputs(gpu, &batch, period))
                        }
                        _ => None,
                    };
                    // With an A/A pair, alternate the arm order per case so
                    // neither twin always runs first (drift cancels out).
                    let order: Vec<usize> = if cfg.aa.is_some() && case_index % 2 == 1 {
                        pending.into_iter().rev().collect()
                    } else {
                        pending
                    };
                    for i in order {
                        let arm = arms[i].as_mut();
                        let timer: &mut dyn Timer = match (arm.backend(), gpu_timer.as_mut()) {
                            (Backend::Gpu, Some(t)) => t.as_mut(),
                            _ => &mut host_timer,
                        };
                        let job = run_one(
                            arm,
                            timer,
                            case,
                            rows_mode,
                            &check,
                            &cfg.protocol,
                            &mut phases,
                        );
                        case_arms += usize::from(job.record.method.is_some());
                        if let Some(method) = job.record.method {
                            manifest
                                .timing_methods
                                .insert(job.record.arm.clone(), method);
                        }
                        phases.time(Phase::CheckWait, || checkers.submit(job))?;
                    }
                    if let (Some(f), Some(timer), true) =
                        (floor.as_mut(), gpu_timer.as_mut(), wants_floor)
                    {
                        f.measure(
                            timer.as_mut(),
                            case,
                            rows_mode,
                            &batch,
                            &cfg.protocol,
                            &mut phases,
                        )?;
                    }
                }
                case_index += 1;
                progress.inc(1);
                if let Some(sig) = super::signals::requested() {
                    interrupted = true;
                    stop_signal = sig;
                    return Ok(());
                }
            }
        }
        Ok(())
    })();
    drop(cells); // lets the loader thread exit if we stopped early
    let _ = loader.join();
    progress.finish();
    let (written, inexact) = phases.time(Phase::CheckWait, || checkers.finish())?;
    loop_result?;
    if let Some(gpu) = &gpu {
        phases.add(Phase::CompileInside, gpu.compile_time());
    }

    if !interrupted {
        manifest.finished_utc = Some(crate::env_manifest::utc_now_iso());
    }
    manifest.write(run_dir)?;
    if let Some(gpu) = &gpu {
        let stats = gpu.compile_stats();
        eprintln!(
            "kernels: {} compiled by NVRTC, {} from the disk cache ({})",
            stats.compiled,
            stats.disk_hits,
            gpu.cache_dir().display()
        );
    }
    let summary = phases.summary(run_started.elapsed(), case_index, case_arms);
    eprintln!("{summary}");
    if let Err(e) = summary.write(run_dir) {
        tracing::warn!("phase breakdown not written: {e}");
    }
    if interrupted {
        eprintln!(
            "interrupted: {} holds every finished record; continue with: gvr-bench grid --resume {}",
            run_dir.join(RESULTS_FILE).display(),
            run_dir.display()
        );
    }
    Ok(RunOutcome {
        run_dir: run_dir.clone(),
        cases: total_cases,
        records_written: written,
        pairs_skipped: skipped,
        inexact,
        interrupted,
        stop_signal,
        bandwidth_bytes_per_s,
        gpu_method,
    })
}

/// `--timing graph` takes only arms whose launch sequence was audited for
/// capture (timing::graph); refuse the run before anything is measured.
fn refuse_uncapturable(arms: &[Box<dyn Arm>], floor: bool) -> Result<()> {
    let mut names: Vec<String> = arms
        .iter()
        .filter(|a| a.backend() == Backend::Gpu)
        .map(|a| a.name().to_string())
        .collect();
    if floor {
        names.push(crate::floor::FLOOR_ARM.to_string());
    }
    let refused = crate::timing::graph::refused(&names);
    if refused.is_empty() {
        return Ok(());
    }
    Err(GvrError::Usage(format!(
        "--timing graph: {}; drop those arms or time the run with --timing cupti",
        refused.join("; ")
    )))
}

/// The device's read bandwidth for this run's manifest: kept from the run
/// being resumed, else measured now with the run's timer. A failed probe is
/// a warning (reports then say they use a nominal figure).
fn device_bandwidth(
    gpu: &Arc<Gpu>,
    manifest: &mut EnvManifest,
    timer: Option<&mut (dyn Timer + 'static)>,
) -> Option<f64> {
    use crate::timing::bandwidth;
    if let Some(bw) = bandwidth::from_notes(&manifest.notes) {
        return Some(bw.bytes_per_s);
    }
    let probed = timer
        .ok_or_else(|| GvrError::Gpu("no GPU timer".into()))
        .and_then(|timer| bandwidth::measure(gpu, timer));
    match probed {
        Ok(bw) => {
            eprintln!("device read bandwidth: {}", bw.describe());
            let rate = bw.bytes_per_s;
            if let Ok(value) = serde_json::to_value(&bw) {
                manifest
                    .notes
                    .insert(bandwidth::MANIFEST_NOTE.to_string(), value);
            }
            Some(rate)
        }
        Err(e) => {
            tracing::warn!("device read-bandwidth probe failed: {e}");
            None
        }
    }
}

/// What `--floor` holds across a run.
struct CaseFloor {
    kernel: crate::floor::arm::FloorKernel,
    writer: crate::floor::FloorWriter,
    /// Cases whose floor the run directory already has (resume).
    floored: HashSet<String>,
}

impl CaseFloor {
    /// Time the case's floor on the run's timer and append its record.
    fn measure(
        &mut self,
        timer: &mut dyn Timer,
        case: &Case,
        rows: RowsMode,
        batch: &Batch,
        protocol: &Protocol,
        phases: &mut PhaseTimes,
    ) -> Result<()> {
        let skeleton = base_record(case, rows, batch, crate::floor::FLOOR_ARM, None);
        let started = Instant::now();
        let record = crate::floor::arm::measure_floor(
            &mut self.kernel,
            timer,
            batch,
            protocol,
            crate::floor::FloorRecord::for_case(&skeleton),
        );
        // All of it on one line of the phase table, the timer's split of
        // every shape's reps included (not mixed with the arms' reps).
        drop(timer.take_phases());
        phases.add(Phase::Floor, started.elapsed());
        if record.best.is_none() {
            tracing::warn!(
                "floor of {}: {}",
                record.case,
                record.error.as_deref().unwrap_or("every shape failed")
            );
        }
        self.writer.append(&record)
    }
}

/// Upload the case's inputs once for all GPU arms. A failure is not fatal:
/// each arm then uploads its own copy, as without sharing.
fn share_inputs(gpu: &Arc<Gpu>, batch: &Arc<Batch>, period: usize) -> Option<SharedInputs> {
    match crate::gpu::StagedInputs::share(gpu, Arc::clone(batch), period) {
        Ok(shared) => Some(shared),
        Err(e) => {
            tracing::warn!("shared staging failed ({e}); arms upload their own copies");
            None
        }
    }
}

fn checker_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get().clamp(1, 4))
        .unwrap_or(1)
}

/// One (case, arm): admissibility, measurement, read-back → a check job.
fn run_one(
    arm: &mut dyn Arm,
    timer: &mut dyn Timer,
    case: &Case,
    rows: RowsMode,
    check: &Arc<PeriodicCheck>,
    protocol: &Protocol,
    phases: &mut PhaseTimes,
) -> CheckJob {
    let batch = check.batch();
    let shape = Shape::of(batch);
    let mut record = base_record(case, rows, batch, arm.name(), arm.variant(&shape));
    if let Err(reason) = arm.admits(&shape) {
        record.exact = ExactStatus::Unsupported { reason };
        return CheckJob {
            check: Arc::clone(check),
            output: None,
            first_output: None,
            record,
        };
    }
    let (timings, output) = measure_arm_phased(arm, timer, batch, protocol, phases);
    if output.is_ok() {
        if let Some(note) = arm.call_note() {
            record.variant = Some(match record.variant.take() {
                Some(variant) => format!("{variant}; {note}"),
                None => note,
            });
        }
    }
    let mut first_output = None;
    if let Some(t) = timings {
        record.cold_us = t.cold_us;
        record.warm_us = t.warm_us;
        record.method = Some(t.method);
        first_output = t.first_output;
    }
    match output {
        Ok(output) => CheckJob {
            check: Arc::clone(check),
            output: Some(output),
            first_output,
            record,
        },
        Err(e) => {
            tracing::warn!("{} on {}: {e}", record.arm, record.case);
            record.exact = ExactStatus::Failed {
                message: e.to_string(),
            };
            CheckJob {
                check: Arc::clone(check),
                output: None,
                first_output: None,
                record,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Model;

    fn case(cell: &str, b: usize) -> Case {
        Case {
            cell: CellMeta {
                id: cell.into(),
                model: Model::Flash,
                isl: "16k".into(),
                layer: 2,
                n: 4099,
                k: 512,
                cr: 4,
                next_n: 1,
            },
            b,
        }
    }

    /// The first timed launch's output is checked on its own: a wrong first
    /// output fails the case even when the last output is exact, and the
    /// host timer hands back what that launch wrote over a fresh poison.
    #[test]
    fn the_first_timed_launch_is_checked() {
        let rows = [vec![3.0f32, 1.0, 2.0, 0.0], vec![0.0f32, 5.0, 4.0, 1.0]];
        let batch = Arc::new(Batch::from_rows(&rows, 64, 2, f32::MIN));
        let check = PeriodicCheck::new(Arc::clone(&batch), 2);
        let good = [0, 2, 1, 2];
        let bad = [0, 2, 1, 3];
        assert_eq!(verdict(&check, Some(&good), &good), ExactStatus::Exact);
        assert_eq!(verdict(&check, None, &good), ExactStatus::Exact);
        match verdict(&check, Some(&bad), &good) {
            ExactStatus::Wrong { row: 1, reason } => {
                assert!(reason.starts_with("first timed launch"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            verdict(&check, Some(&[0, 2, 1, crate::exact::UNWRITTEN]), &good),
            ExactStatus::Unwritten { row: 1, slot: 1 }
        ));
        assert!(!verdict(&check, Some(&good), &bad).is_exact());

        let mut arm = crate::arms::registry::create("cpu-ref", None).unwrap();
        arm.stage(&batch).unwrap();
        let protocol = Protocol {
            warmup: 1,
            warm_reps: 1,
            cold_reps: 1,
            ..Protocol::default()
        };
        let timings = crate::timing::HostTimer
            .measure(arm.as_mut(), &protocol)
            .unwrap();
        let first = timings
            .first_output
            .expect("the first timed launch's output");
        assert_eq!(check.check(&first), ExactStatus::Exact);
    }

    #[test]
    fn groups_keep_first_appearance_order() {
        let groups = group_by_cell(vec![
            case("a", 1),
            case("b", 1),
            case("a", 4),
            case("c", 2),
            case("b", 8),
        ]);
        let ids: Vec<Vec<String>> = groups
            .iter()
            .map(|g| g.iter().map(Case::id).collect())
            .collect();
        assert_eq!(
            ids,
            vec![vec!["a@b1", "a@b4"], vec!["b@b1", "b@b8"], vec!["c@b2"]]
        );
    }

    #[test]
    fn arm_resolution() {
        let none = None;
        // Explicit CPU arms: no notice needed, kept in order.
        let explicit = vec!["cpu-ss".to_string(), "cpu-ref".to_string()];
        assert_eq!(
            resolve_arms(Some(&explicit), None, &none, Some("x")).unwrap(),
            explicit
        );
        // A/A adds the twin after the explicit arms, once.
        let names = resolve_arms(Some(&explicit), Some("cpu-ref"), &none, Some("x")).unwrap();
        assert_eq!(names, ["cpu-ss", "cpu-ref", "cpu-ref#2"]);
        // A/A alone runs just the pair.
        assert_eq!(
            resolve_arms(None, Some("cpu-ss"), &none, None).unwrap(),
            ["cpu-ss", "cpu-ss#2"]
        );
        assert!(resolve_arms(None, Some("cpu-ss#2"), &none, None).is_err());
        // No GPU: defaults fall back to the CPU engines; GPU arms are refused.
        assert_eq!(
            resolve_arms(None, None, &none, Some("x")).unwrap(),
            registry::CPU_ARMS
        );
        let gpu_arms = vec!["radix".to_string()];
        let err = resolve_arms(Some(&gpu_arms), None, &none, Some("no driver")).unwrap_err();
        assert!(err.to_string().contains("no driver"), "{err}");
    }

    #[test]
    fn inexact_means_ran_and_was_wrong() {
        assert!(!is_inexact(&ExactStatus::Exact));
        assert!(!is_inexact(&ExactStatus::Unsupported {
            reason: String::new()
        }));
        assert!(is_inexact(&ExactStatus::Unwritten { row: 0, slot: 0 }));
        assert!(is_inexact(&ExactStatus::Failed {
            message: String::new()
        }));
    }

    #[test]
    fn bytes_count_each_rows_own_length() {
        let c = case("a", 2);
        let batch = Batch {
            rows: 2,
            npad: 64,
            k: 4,
            logits: vec![0.0; 128],
            n: vec![10, 64],
            hints: vec![0; 8],
            varlen: None,
        };
        let rec = base_record(&c, RowsMode::Independent, &batch, "cpu-ref", None);
        assert_eq!(rec.bytes, 4 * (10 + 64 + 2 * 4));
        assert_eq!(rec.case, "a@b2");
        assert_eq!(rec.rows, RowsMode::Independent);
    }

    /// A CPU run writes a phase breakdown that accounts for the run: every
    /// case-arm counted, the loop's phases present, nothing negative.
    #[test]
    fn cpu_run_writes_phase_breakdown() {
        use crate::timing::phases::{Phase, PhaseSummary};
        let dir = tempfile::tempdir().unwrap();
        let caps = dir.path().join("caps");
        let mut synth = crate::synth::SynthOptions::new(&caps);
        synth.limit = Some(1);
        synth.steps = 2;
        synth.threads = Some(1);
        crate::synth::synth(&synth).unwrap();
        let selection = Selection {
            batches: Some("1,3".into()),
            ..Selection::default()
        };
        let cfg = GridConfig {
            captures: caps,
            grid: None,
            selection,
            arms: Some(vec!["cpu-ref".into()]),
            run_dir: dir.path().join("run"),
            resume: false,
            protocol: Protocol::default(),
            device: 0,
            cpu_only: true,
            aa: None,
            bandwidth: false,
            floor: false,
            tunings: Tunings::default(),
            timing: TimingChoice::Auto,
        };
        let outcome = run_grid(&cfg).unwrap();
        assert_eq!(outcome.records_written, 2);
        assert_eq!(outcome.inexact, 0);
        let summary = PhaseSummary::read(&cfg.run_dir).unwrap();
        assert_eq!((summary.cases, summary.case_arms), (2, 2));
        let seen: Vec<Phase> = summary.phases.iter().map(|e| e.phase).collect();
        for phase in [
            Phase::Setup,
            Phase::BuildBatch,
            Phase::Stage,
            Phase::TimedReps,
        ] {
            assert!(seen.contains(&phase), "{phase:?} missing from {seen:?}");
        }
        // CPU arms: no shared GPU staging.
        assert!(!seen.contains(&Phase::StageShared));
        let accounted: f64 = summary.phases.iter().map(|e| e.seconds).sum();
        assert!(summary.unaccounted_s >= 0.0);
        assert!(accounted <= summary.wall_s + 1e-6, "{summary:?}");
    }
}
