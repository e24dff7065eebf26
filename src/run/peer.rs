//! `grid --peer torch`: time `torch.topk(sorted=False)` on the run's own
//! cases with `scripts/peer_torch.py` and join its records into the run, so
//! torch sits in the same tables as our arms.
//!
//! Why a Python child rather than libtorch: the peer is "what a PyTorch user
//! gets", so it must be the torch a user installs; the script runs the same
//! cold-L2 protocol (flush outside the timed window, events recorded while
//! the GPU is busy) and writes `CaseRecord` lines. The join goes through
//! `read_records`, so a schema drift in the script is an error, not a silent
//! hole in the tables.
//!
//! Files in the run directory: `peer-torch-cases.txt` (the cases asked for),
//! `torch.jsonl` (the script's raw records, appended), `peer-torch.log`.
//! Records land in `results.jsonl` like any arm's, so `--resume` skips the
//! cases torch already has.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::env_manifest::EnvManifest;
use crate::error::{GvrError, Result};
use crate::grid::RowsMode;
use crate::record::results::{run_records, ResultsWriter};
use crate::record::{read_records, CaseRecord};
use crate::timing::Protocol;

/// Arm name of the torch peer in records and reports.
pub const TORCH_ARM: &str = "torch";
/// Raw records the script appends to (inside the run directory).
pub const TORCH_RECORDS_FILE: &str = "torch.jsonl";
/// Case list handed to the script.
pub const TORCH_CASES_FILE: &str = "peer-torch-cases.txt";
/// The script's stdout and stderr.
pub const TORCH_LOG_FILE: &str = "peer-torch.log";

/// Peers `grid --peer` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Peer {
    /// `torch.topk(x, K, sorted=False)` via scripts/peer_torch.py.
    Torch,
}

/// How the torch peer is timed (recorded per record as `method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PeerTiming {
    /// One CUDA graph per case, replayed between events (`graph-replay`).
    Graph,
    /// Eager calls between events, the GPU kept busy ahead (`cuda-events`).
    Events,
}

/// Everything needed to run the torch peer on a run directory.
#[derive(Debug, Clone)]
pub struct TorchPeerConfig {
    /// Python interpreter (`$GVR_PYTHON`, default `python3`).
    pub python: PathBuf,
    /// `peer_torch.py` (`$GVR_PEER_TORCH_SCRIPT`, else `scripts/peer_torch.py`
    /// under the working directory, else under the source tree).
    pub script: PathBuf,
    /// `torch` for the real peer; `numpy` is the script's host stand-in that
    /// lets the plumbing be tested without a GPU (`$GVR_PEER_TORCH_BACKEND`).
    pub backend: String,
    pub captures: PathBuf,
    pub run_dir: PathBuf,
    pub device: usize,
    pub protocol: Protocol,
    pub rows: RowsMode,
    pub timing: PeerTiming,
}

/// What one peer pass did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerOutcome {
    /// Cases handed to the script (0: torch already had every case).
    pub cases_run: usize,
    /// Records appended to `results.jsonl`.
    pub records_joined: usize,
    /// Joined records whose exactness check failed.
    pub inexact: usize,
}

impl TorchPeerConfig {
    /// Interpreter, script and backend from the environment; the rest from the run.
    pub fn from_env(
        captures: &Path,
        run_dir: &Path,
        device: usize,
        protocol: Protocol,
        rows: RowsMode,
    ) -> TorchPeerConfig {
        let python = std::env::var_os("GVR_PYTHON")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("python3"));
        let script = std::env::var_os("GVR_PEER_TORCH_SCRIPT")
            .map(PathBuf::from)
            .unwrap_or_else(default_script);
        let backend = std::env::var("GVR_PEER_TORCH_BACKEND").unwrap_or_else(|_| "torch".into());
        TorchPeerConfig {
            python,
            script,
            backend,
            captures: captures.to_path_buf(),
            run_dir: run_dir.to_path_buf(),
            device,
            protocol,
            rows,
            timing: PeerTiming::Graph,
        }
    }

    /// Fail fast, before the grid spends minutes on our arms: the
    /// interpreter runs, the script exists, the backend's modules import.
    pub fn preflight(&self) -> Result<()> {
        if !self.script.is_file() {
            return Err(GvrError::Usage(format!(
                "--peer torch: script {} not found (set GVR_PEER_TORCH_SCRIPT, or run without --peer and time torch later with scripts/peer_torch.py)",
                self.script.display()
            )));
        }
        let modules = match self.backend.as_str() {
            "torch" => "torch, numpy, safetensors",
            "numpy" => "numpy, safetensors",
            other => {
                return Err(GvrError::Usage(format!(
                    "GVR_PEER_TORCH_BACKEND={other}: expected torch or numpy"
                )))
            }
        };
        let probe = Command::new(&self.python)
            .args(["-c", &format!("import {modules}")])
            .stdin(Stdio::null())
            .output();
        let why = match probe {
            Ok(out) if out.status.success() => return Ok(()),
            Ok(out) => last_line(&String::from_utf8_lossy(&out.stderr)),
            Err(e) => format!("cannot start {}: {e}", self.python.display()),
        };
        Err(GvrError::Usage(format!(
            "--peer torch needs python with {modules} ({why}); install them (or set GVR_PYTHON), or run without --peer"
        )))
    }

    /// The script's command line for a case-list file.
    pub fn command_args(&self, cases_file: &Path) -> Vec<String> {
        let mut args = vec![
            self.script.display().to_string(),
            "--captures".into(),
            self.captures.display().to_string(),
            "--cases-file".into(),
            cases_file.display().to_string(),
            "--out".into(),
            self.run_dir.join(TORCH_RECORDS_FILE).display().to_string(),
            "--rows".into(),
            rows_name(self.rows).into(),
            "--device".into(),
            self.device.to_string(),
            "--warmup".into(),
            self.protocol.warmup.to_string(),
            "--warm-reps".into(),
            self.protocol.warm_reps.to_string(),
            "--cold-reps".into(),
            self.protocol.cold_reps.to_string(),
            "--flush-bytes".into(),
            self.protocol.flush_bytes.to_string(),
            "--backend".into(),
            self.backend.clone(),
        ];
        if self.timing == PeerTiming::Graph {
            args.push("--graph".into());
        }
        args
    }
}

fn rows_name(rows: RowsMode) -> &'static str {
    match rows {
        RowsMode::Replicate => "replicate",
        RowsMode::Independent => "independent",
    }
}

fn last_line(text: &str) -> String {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no message")
        .trim()
        .to_string()
}

/// `scripts/peer_torch.py` under the working directory (the repository root,
/// where the README runs everything), else under the source tree this
/// binary was built from.
fn default_script() -> PathBuf {
    let local = PathBuf::from("scripts/peer_torch.py");
    if local.is_file() {
        return local;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/peer_torch.py")
}

/// Cases of a run (first-appearance order) that the peer arm still lacks,
/// given the run's records and the peer's raw records not yet joined.
pub fn pending_cases(run: &[CaseRecord], peer_raw: &[CaseRecord]) -> Vec<String> {
    let have: HashSet<&str> = run
        .iter()
        .chain(peer_raw)
        .filter(|r| r.arm == TORCH_ARM)
        .map(|r| r.case.as_str())
        .collect();
    let mut seen = HashSet::new();
    run.iter()
        .filter(|r| r.arm != TORCH_ARM && !have.contains(r.case.as_str()))
        .filter(|r| seen.insert(r.case.as_str()))
        .map(|r| r.case.clone())
        .collect()
}

/// The peer's raw records that belong in the run and are not there yet: one
/// per case (the first), only for cases the run has, arm `torch` only.
pub fn records_to_join(run: &[CaseRecord], peer_raw: Vec<CaseRecord>) -> Vec<CaseRecord> {
    let run_cases: HashSet<&str> = run.iter().map(|r| r.case.as_str()).collect();
    let mut joined: HashSet<String> = run
        .iter()
        .filter(|r| r.arm == TORCH_ARM)
        .map(|r| r.case.clone())
        .collect();
    peer_raw
        .into_iter()
        .filter(|r| r.arm == TORCH_ARM && run_cases.contains(r.case.as_str()))
        .filter(|r| joined.insert(r.case.clone()))
        .collect()
}

fn peer_raw_records(run_dir: &Path) -> Result<Vec<CaseRecord>> {
    let path = run_dir.join(TORCH_RECORDS_FILE);
    if path.exists() {
        read_records(&path)
    } else {
        Ok(Vec::new())
    }
}

/// Run the torch peer on every case of the run that torch lacks, then join
/// its records into `results.jsonl` and note the method in the manifest.
/// A script failure still joins whatever it finished (a rerun with
/// `--resume` completes the rest) and then returns the error.
pub fn run_torch_peer(cfg: &TorchPeerConfig) -> Result<PeerOutcome> {
    let run_dir = &cfg.run_dir;
    let records = run_records(run_dir)?;
    let pending = pending_cases(&records, &peer_raw_records(run_dir)?);
    let mut script_error = None;
    if !pending.is_empty() {
        cfg.preflight()?;
        let cases_file = run_dir.join(TORCH_CASES_FILE);
        std::fs::write(&cases_file, pending.join("\n") + "\n")
            .map_err(|e| GvrError::io(&cases_file, e))?;
        let log_path = run_dir.join(TORCH_LOG_FILE);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| GvrError::io(&log_path, e))?;
        let log_err = log.try_clone().map_err(|e| GvrError::io(&log_path, e))?;
        eprintln!(
            "peer torch: {} cases on device {} (log: {})",
            pending.len(),
            cfg.device,
            log_path.display()
        );
        let status = Command::new(&cfg.python)
            .args(cfg.command_args(&cases_file))
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .status()
            .map_err(|e| {
                GvrError::Usage(format!(
                    "--peer torch: cannot start {}: {e}; run without --peer",
                    cfg.python.display()
                ))
            })?;
        if !status.success() {
            let log_text = std::fs::read_to_string(&log_path).unwrap_or_default();
            script_error = Some(GvrError::Other(anyhow::anyhow!(
                "peer_torch.py exited with {status}: {} (full log: {}); `gvr-bench grid --resume {}` retries the missing cases",
                last_line(&log_text),
                log_path.display(),
                run_dir.display()
            )));
        }
    }
    let outcome = join_peer_records(run_dir, &records, pending.len())?;
    match script_error {
        Some(e) => Err(e),
        None => Ok(outcome),
    }
}

/// Append the peer's new records to `results.jsonl` and record the
/// timing method and variant in the manifest.
fn join_peer_records(
    run_dir: &Path,
    records: &[CaseRecord],
    cases_run: usize,
) -> Result<PeerOutcome> {
    let new = records_to_join(records, peer_raw_records(run_dir)?);
    let mut writer = ResultsWriter::open(run_dir)?;
    let mut inexact = 0;
    for record in &new {
        writer.append(record)?;
        inexact += usize::from(super::campaign::is_inexact(&record.exact));
    }
    if let Some(first_timed) = new.iter().find(|r| r.method.is_some()) {
        let mut manifest = EnvManifest::read(run_dir)?;
        if let Some(method) = first_timed.method {
            manifest.timing_methods.insert(TORCH_ARM.into(), method);
        }
        manifest.notes.insert(
            "peer_torch".into(),
            serde_json::json!({
                "variant": first_timed.variant,
                "method": first_timed.method,
            }),
        );
        manifest.write(run_dir)?;
    }
    Ok(PeerOutcome {
        cases_run,
        records_joined: new.len(),
        inexact,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::results::tests::record;

    #[test]
    fn pending_skips_cases_torch_has_in_either_file() {
        let run = vec![
            record("a@b1", "ss"),
            record("a@b1", "radix"),
            record("b@b1", "ss"),
            record("c@b1", "ss"),
            record("c@b1", TORCH_ARM),
        ];
        let raw = vec![record("b@b1", TORCH_ARM)];
        assert_eq!(pending_cases(&run, &raw), ["a@b1"]);
        assert_eq!(pending_cases(&run, &[]), ["a@b1", "b@b1"]);
    }

    #[test]
    fn join_takes_each_new_case_once_and_ignores_strangers() {
        let run = vec![
            record("a@b1", "ss"),
            record("b@b1", "ss"),
            record("b@b1", TORCH_ARM),
        ];
        let raw = vec![
            record("a@b1", TORCH_ARM),
            record("a@b1", TORCH_ARM), // a retried case: keep the first
            record("b@b1", TORCH_ARM), // already joined
            record("z@b1", TORCH_ARM), // not a case of this run
            record("a@b1", "radix"),   // not the peer's arm
        ];
        let joined = records_to_join(&run, raw);
        assert_eq!(joined.len(), 1);
        assert_eq!(
            (joined[0].case.as_str(), joined[0].arm.as_str()),
            ("a@b1", TORCH_ARM)
        );
    }

    #[test]
    fn command_passes_the_protocol_and_rows() {
        let mut cfg = TorchPeerConfig::from_env(
            Path::new("caps"),
            Path::new("run"),
            3,
            Protocol {
                warmup: 7,
                warm_reps: 2,
                cold_reps: 9,
                flush_bytes: 1 << 20,
            },
            RowsMode::Independent,
        );
        cfg.backend = "torch".into();
        let args = cfg.command_args(Path::new("run/cases.txt")).join(" ");
        for want in [
            "--captures caps",
            "--cases-file run/cases.txt",
            "--rows independent",
            "--device 3",
            "--warmup 7",
            "--warm-reps 2",
            "--cold-reps 9",
            "--flush-bytes 1048576",
            "--backend torch",
            "--graph",
        ] {
            assert!(args.contains(want), "{want} missing from {args}");
        }
        assert!(args.contains(&format!(
            "--out {}",
            Path::new("run").join(TORCH_RECORDS_FILE).display()
        )));
    }

    #[test]
    fn preflight_names_the_way_out() {
        let mut cfg = TorchPeerConfig::from_env(
            Path::new("caps"),
            Path::new("run"),
            0,
            Protocol::default(),
            RowsMode::Replicate,
        );
        cfg.script = PathBuf::from(file!()); // any existing file
        cfg.python = PathBuf::from("/nonexistent/python3");
        cfg.backend = "torch".into();
        let err = cfg.preflight().unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("without --peer"), "{err}");
        cfg.backend = "tensorflow".into();
        assert!(cfg.preflight().is_err());
        cfg.backend = "torch".into();
        cfg.script = PathBuf::from("/nonexistent/peer_torch.py");
        assert!(cfg
            .preflight()
            .unwrap_err()
            .to_string()
            .contains("without --peer"));
    }
}
