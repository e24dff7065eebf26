//! `grid --devices 0,1,…`: one worker process per GPU over disjoint shards
//! (`--shard i/n --device d --out RUN/shards/i`), then one merged run.
//!
//! Why child processes rather than threads with one `Gpu` each: a worker
//! owns its CUDA context, NVRTC cache handle, Ctrl-C state and progress, so
//! a device fault (a sticky CUDA error, an abort inside the driver) kills
//! one shard, not the campaign; every shard is an ordinary run directory,
//! so `--resume` and `merge` work on it unchanged; and the mechanism is the
//! same one a Slurm array uses, tested here with CPU engines.
//!
//! Layout: `RUN/manifest.json` (the parent's command line, so `grid --resume
//! RUN` restarts the fan-out), `RUN/shards/<i>/` (worker runs),
//! `RUN/shards/<i>.log` (worker output), and after every worker succeeded
//! `RUN/results.jsonl` + the merged manifest.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::merge::merge;
use crate::env_manifest::{EnvManifest, MANIFEST_FILE};
use crate::error::{GvrError, Result};
use crate::record::results::RESULTS_FILE;

/// Parse `--devices 0,1,3`: at least one ordinal, no repeats.
pub fn parse_devices(list: &str) -> Result<Vec<usize>> {
    let mut devices = Vec::new();
    for part in list.split(',').map(str::trim) {
        let device: usize = part.parse().map_err(|_| {
            GvrError::Usage(format!(
                "--devices {list}: `{part}` is not a device ordinal (expected e.g. 0,1,2,3)"
            ))
        })?;
        if devices.contains(&device) {
            return Err(GvrError::Usage(format!(
                "--devices {list}: device {device} is listed twice (each worker needs its own GPU)"
            )));
        }
        devices.push(device);
    }
    if devices.is_empty() {
        return Err(GvrError::Usage("--devices: no device given".into()));
    }
    Ok(devices)
}

/// Run directory of worker `index`.
pub fn shard_dir(run_dir: &Path, index: usize) -> PathBuf {
    run_dir.join("shards").join(index.to_string())
}

/// Output log of worker `index`.
pub fn shard_log(run_dir: &Path, index: usize) -> PathBuf {
    run_dir.join("shards").join(format!("{index}.log"))
}

/// One worker: its shard, device and full `gvr-bench` argument list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerSpec {
    pub index: usize,
    pub device: usize,
    pub args: Vec<String>,
}

/// How a worker ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerResult {
    pub index: usize,
    pub device: usize,
    /// Exit code; `None` when killed by a signal or never started.
    pub code: Option<i32>,
    pub log: PathBuf,
}

impl WorkerResult {
    pub fn succeeded(&self) -> bool {
        self.code == Some(0)
    }
}

/// What a fan-out did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FanOutOutcome {
    /// Every worker succeeded and the shards were merged into the run.
    Merged { records: usize, cases: usize },
    /// Ctrl-C: every worker stopped; `grid --resume RUN` continues.
    Interrupted,
}

/// Prepare the run directory for a fan-out: a fresh one gets the parent's
/// manifest (so `--resume RUN` re-parses the `--devices` command line);
/// a resumed one must already have it.
pub fn prepare_run_dir(run_dir: &Path, resume: bool, manifest: &EnvManifest) -> Result<()> {
    if resume {
        if !run_dir.join(MANIFEST_FILE).exists() {
            return Err(GvrError::input(
                run_dir,
                MANIFEST_FILE,
                "not a run directory (nothing to resume)",
            ));
        }
        return Ok(());
    }
    if run_dir.join(RESULTS_FILE).exists() || run_dir.join("shards").exists() {
        return Err(GvrError::input(
            run_dir,
            RESULTS_FILE,
            "run directory already has results; pass --resume to continue it or choose another --out",
        ));
    }
    super::create_out_dir(run_dir)?;
    let shards = run_dir.join("shards");
    std::fs::create_dir_all(&shards).map_err(|e| GvrError::io(&shards, e))?;
    manifest.write(run_dir)
}

/// Start every worker, wait for all of them (one failing does not stop the
/// others), then merge. A failed worker makes this an error naming the
/// shard, its device and its log; finished shards stay on disk for `--resume`.
pub fn run_workers(exe: &Path, run_dir: &Path, workers: &[WorkerSpec]) -> Result<FanOutOutcome> {
    // The terminal's Ctrl-C reaches the workers too (same process group):
    // they stop after their current case; the parent just waits for them.
    // SIGTERM sent to the parent alone is forwarded below.
    super::signals::install();
    let mut slots = Vec::new();
    for worker in workers {
        let log = shard_log(run_dir, worker.index);
        let child = spawn_worker(exe, worker, &log);
        match &child {
            Ok(_) => eprintln!(
                "worker {} on device {}: started (log: {})",
                worker.index,
                worker.device,
                log.display()
            ),
            Err(e) => eprintln!("worker {}: cannot start: {e}", worker.index),
        }
        let child = child.ok();
        slots.push(Slot {
            // A worker that never started has ended, with no exit code.
            ended: if child.is_none() { Some(None) } else { None },
            worker: worker.clone(),
            child,
            log,
        });
    }
    let results = wait_all(run_dir, slots);
    finish(run_dir, &results)
}

/// How often the parent reports the workers' record counts.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// A worker being waited for.
struct Slot {
    worker: WorkerSpec,
    child: Option<Child>,
    log: PathBuf,
    /// `Some(exit code)` once it has ended (`Some(None)`: killed or never started).
    ended: Option<Option<i32>>,
}

/// Wait for every worker (polling, so each exit is reported when it
/// happens), printing each shard's record count now and then.
fn wait_all(run_dir: &Path, mut slots: Vec<Slot>) -> Vec<WorkerResult> {
    let started = std::time::Instant::now();
    let mut last_progress = started;
    let mut forwarded = false;
    while slots.iter().any(|slot| slot.ended.is_none()) {
        // A SIGTERM aimed at the parent alone (a batch scheduler) reaches
        // the workers too, so they stop after their current case.
        if !forwarded && super::signals::requested() == Some(libc::SIGTERM) {
            forwarded = true;
            for process in slots
                .iter()
                .filter(|s| s.ended.is_none())
                .filter_map(|s| s.child.as_ref())
            {
                // SAFETY: kill(2) on a child's pid.
                unsafe { libc::kill(process.id() as libc::pid_t, libc::SIGTERM) };
            }
        }
        for slot in slots.iter_mut().filter(|slot| slot.ended.is_none()) {
            let Some(process) = slot.child.as_mut() else {
                continue;
            };
            let code = match process.try_wait() {
                Ok(Some(status)) => status.code(),
                Ok(None) => continue,
                Err(_) => None,
            };
            eprintln!(
                "worker {} on device {}: {}",
                slot.worker.index,
                slot.worker.device,
                match code {
                    Some(0) => "done".to_string(),
                    Some(c) => format!("exit code {c}"),
                    None => "killed".to_string(),
                }
            );
            slot.ended = Some(code);
        }
        if last_progress.elapsed() >= PROGRESS_EVERY {
            last_progress = std::time::Instant::now();
            let counts: Vec<String> = slots
                .iter()
                .map(|slot| {
                    let index = slot.worker.index;
                    format!(
                        "shard {index}: {}",
                        record_count(&shard_dir(run_dir, index))
                    )
                })
                .collect();
            eprintln!(
                "[{:>5} s] records so far: {}",
                started.elapsed().as_secs(),
                counts.join(", ")
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    slots
        .into_iter()
        .map(|slot| WorkerResult {
            index: slot.worker.index,
            device: slot.worker.device,
            code: slot.ended.flatten(),
            log: slot.log,
        })
        .collect()
}

/// Lines in a shard's results.jsonl (0 when it has none yet).
fn record_count(shard: &Path) -> usize {
    std::fs::read(shard.join(RESULTS_FILE))
        .map(|bytes| bytes.iter().filter(|&&b| b == b'\n').count())
        .unwrap_or(0)
}

fn spawn_worker(exe: &Path, worker: &WorkerSpec, log: &Path) -> Result<Child> {
    let out = std::fs::File::create(log).map_err(|e| GvrError::io(log, e))?;
    let err = out.try_clone().map_err(|e| GvrError::io(log, e))?;
    Command::new(exe)
        .args(&worker.args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| GvrError::io(exe, e))
}

/// Decide from the workers' exit codes; merge when all succeeded.
pub fn finish(run_dir: &Path, results: &[WorkerResult]) -> Result<FanOutOutcome> {
    let failed: Vec<&WorkerResult> = results.iter().filter(|r| !r.succeeded()).collect();
    if !failed.is_empty()
        && failed
            .iter()
            .all(|r| matches!(r.code, Some(130) | Some(143)))
    {
        eprintln!(
            "interrupted: every finished record is kept; continue with: gvr-bench grid --resume {}",
            run_dir.display()
        );
        return Ok(FanOutOutcome::Interrupted);
    }
    if !failed.is_empty() {
        let which: Vec<String> = failed
            .iter()
            .map(|r| {
                format!(
                    "shard {} (device {}, exit {}, log {})",
                    r.index,
                    r.device,
                    r.code.map_or("signal".to_string(), |c| c.to_string()),
                    r.log.display()
                )
            })
            .collect();
        return Err(GvrError::Other(anyhow::anyhow!(
            "{} of {} workers failed: {}; the other shards finished and every record is kept; fix the cause and continue with: gvr-bench grid --resume {}",
            failed.len(),
            results.len(),
            which.join("; "),
            run_dir.display()
        )));
    }
    let shards: Vec<PathBuf> = results
        .iter()
        .map(|r| shard_dir(run_dir, r.index))
        .collect();
    let (records, cases) = merge_into_run(run_dir, &shards)?;
    Ok(FanOutOutcome::Merged { records, cases })
}

/// Merge the shards into `run_dir` through a scratch directory, then move
/// the merged results and manifest in (replacing an earlier merge on
/// `--resume`). The parent's command line stays the run's command line.
fn merge_into_run(run_dir: &Path, shards: &[PathBuf]) -> Result<(usize, usize)> {
    let scratch = run_dir.join("shards").join("merging");
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch).map_err(|e| GvrError::io(&scratch, e))?;
    }
    let parent = EnvManifest::read(run_dir)?;
    let outcome = merge(shards, &scratch)?;
    let mut merged = EnvManifest::read(&scratch)?;
    merged.command_line = parent.command_line;
    merged.started_utc = merged.started_utc.min(parent.started_utc);
    merged.notes.extend(parent.notes);
    merged.write(&scratch)?;
    for file in [RESULTS_FILE, MANIFEST_FILE, crate::floor::FLOOR_FILE] {
        let (from, to) = (scratch.join(file), run_dir.join(file));
        if file == crate::floor::FLOOR_FILE && !from.exists() {
            continue; // the run did not measure floors
        }
        std::fs::rename(&from, &to).map_err(|e| GvrError::io(&to, e))?;
    }
    let _ = std::fs::remove_dir_all(&scratch);
    Ok((outcome.records, outcome.cases))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_lists() {
        assert_eq!(parse_devices("0,1, 3").unwrap(), [0, 1, 3]);
        assert_eq!(parse_devices("2").unwrap(), [2]);
        for bad in ["", "0,,1", "a", "0,0", "-1"] {
            let err = parse_devices(bad).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad}");
        }
    }

    #[test]
    fn failed_worker_is_named_and_nothing_is_merged() {
        let dir = tempfile::tempdir().unwrap();
        let result = |index, code| WorkerResult {
            index,
            device: index + 4,
            code,
            log: shard_log(dir.path(), index),
        };
        let err = finish(dir.path(), &[result(0, Some(0)), result(1, Some(3))]).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("shard 1 (device 5, exit 3"), "{text}");
        assert!(text.contains("--resume"), "{text}");
        assert!(!dir.path().join(RESULTS_FILE).exists());
        // Killed by a signal.
        let err = finish(dir.path(), &[result(0, None)]).unwrap_err();
        assert!(err.to_string().contains("exit signal"), "{err}");
        // Ctrl-C everywhere is an interruption, not a failure.
        assert_eq!(
            finish(dir.path(), &[result(0, Some(130)), result(1, Some(130))]).unwrap(),
            FanOutOutcome::Interrupted
        );
    }

    #[test]
    fn fresh_run_dir_refuses_existing_results() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = EnvManifest::without_hashes(
            Path::new("/nonexistent"),
            crate::timing::Protocol::default(),
            crate::grid::RowsMode::Replicate,
        );
        let run = dir.path().join("run");
        prepare_run_dir(&run, false, &manifest).unwrap();
        assert!(run.join(MANIFEST_FILE).exists() && run.join("shards").is_dir());
        assert!(prepare_run_dir(&run, false, &manifest).is_err());
        assert!(prepare_run_dir(&run, true, &manifest).is_ok());
        assert!(prepare_run_dir(&dir.path().join("none"), true, &manifest).is_err());
    }
}
