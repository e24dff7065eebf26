//! `grid --peer torch,flashinfer`: time library top-K calls on the run's own
//! cases with `scripts/peer.py` and join their records into the run, so the
//! libraries sit in the same tables as our arms.
//!
//! Peers and their arms:
//! - `torch`: arm `torch`, `torch.topk(x, K, sorted=False)`;
//! - `flashinfer`: arms `fi-auto` (`flashinfer.top_k` with its own dispatch)
//!   and one per backend it offers on sm_90: `fi-cub` (CUB
//!   DeviceBatchedTopK), `fi-filtered` (FilteredTopK), `fi-radix`
//!   (RadixTopKMultiCTA), each forced with `FLASHINFER_TOPK_ALGO`. Its JIT
//!   build happens before anything is timed; its time is in the manifest
//!   (`notes.peer_flashinfer.meta.jit_build_s`).
//!
//! Why a Python child rather than libtorch: a peer is "what a library user
//! gets", so it must be the library a user installs; the script runs the
//! same cold-L2 protocol, with the run's timing method (CUPTI kernel time by
//! default, read through torch.profiler; graph replay or events when the
//! run uses those), and writes `CaseRecord` lines. The join goes through
//! `read_records`, so a schema drift in the script is an error, not a silent
//! hole in the tables.
//!
//! Files in the run directory, per peer `P`: `peer-P-cases.txt` (the cases
//! asked for), `P.jsonl` (the script's raw records, appended), `peer-P.log`,
//! `peer-P.json` (what the script ran: versions, JIT build time). Records
//! land in `results.jsonl` like any arm's, so `--resume` skips what a peer
//! already has.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::env_manifest::EnvManifest;
use crate::error::{GvrError, Result};
use crate::grid::RowsMode;
use crate::record::results::{run_records, ResultsWriter};
use crate::record::{read_records, CaseRecord};
use crate::timing::{Protocol, TimingMethod};

/// Arm name of the torch peer in records and reports.
pub const TORCH_ARM: &str = "torch";
/// Raw records of the torch peer (inside the run directory).
pub const TORCH_RECORDS_FILE: &str = "torch.jsonl";

/// Peers `grid --peer` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Peer {
    /// `torch.topk(x, K, sorted=False)`: arm `torch`.
    Torch,
    /// `flashinfer.top_k` (flashinfer-python 0.7.2.post1): arms `fi-auto`,
    /// `fi-cub`, `fi-filtered`, `fi-radix`.
    Flashinfer,
}

impl Peer {
    /// The name on the command line and in file names.
    pub fn name(self) -> &'static str {
        match self {
            Peer::Torch => "torch",
            Peer::Flashinfer => "flashinfer",
        }
    }

    /// The arms the peer's records carry.
    pub fn arms(self) -> &'static [&'static str] {
        match self {
            Peer::Torch => &[TORCH_ARM],
            Peer::Flashinfer => &["fi-auto", "fi-cub", "fi-filtered", "fi-radix"],
        }
    }

    /// The peer whose records carry `arm`, if any.
    pub fn of_arm(arm: &str) -> Option<Peer> {
        [Peer::Torch, Peer::Flashinfer]
            .into_iter()
            .find(|p| p.arms().contains(&arm))
    }

    /// Python modules the real peer imports (checked before the grid).
    fn modules(self) -> &'static str {
        match self {
            Peer::Torch => "torch, numpy, safetensors",
            Peer::Flashinfer => "torch, numpy, safetensors, flashinfer",
        }
    }

    /// How to get the modules, for the preflight's message.
    fn install_hint(self) -> &'static str {
        match self {
            Peer::Torch => "install them (or pass --python PATH)",
            Peer::Flashinfer => {
                "carry the wheels of scripts/fetch_peer_wheels.sh and install them with \
                 `python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && \
                 export PYTHONPATH=/tmp/site` (or pass --python PATH)"
            }
        }
    }

    /// Raw records the script appends to.
    pub fn records_file(self) -> String {
        format!("{}.jsonl", self.name())
    }

    /// Case list handed to the script.
    pub fn cases_file(self) -> String {
        format!("peer-{}-cases.txt", self.name())
    }

    /// The script's stdout and stderr.
    pub fn log_file(self) -> String {
        format!("peer-{}.log", self.name())
    }

    /// What the script ran (versions, JIT build time), as JSON.
    pub fn meta_file(self) -> String {
        format!("peer-{}.json", self.name())
    }

    /// Manifest note key.
    fn note_key(self) -> String {
        format!("peer_{}", self.name())
    }
}

/// `--peer` list without repeats, in the given order.
pub fn dedup_peers(peers: &[Peer]) -> Vec<Peer> {
    let mut seen = HashSet::new();
    peers.iter().copied().filter(|p| seen.insert(*p)).collect()
}

/// The script's `--timing` value for a method.
pub fn script_timing(method: TimingMethod) -> &'static str {
    match method {
        TimingMethod::GraphReplay => "graph-replay",
        TimingMethod::CudaEvents => "cuda-events",
        // Kernel time for GPU runs; a CPU-only run's peers (the numpy
        // stand-in) are host-clock whatever is asked.
        TimingMethod::Cupti | TimingMethod::HostClock => "cupti",
    }
}

/// Everything needed to run one peer on a run directory.
#[derive(Debug, Clone)]
pub struct PeerConfig {
    pub peer: Peer,
    /// Python interpreter (`grid --python`, default `python3`).
    pub python: PathBuf,
    /// `peer.py` (`grid --peer-script`, else `scripts/peer.py` under the
    /// working directory, else under the source tree).
    pub script: PathBuf,
    /// `real` for the library; `numpy` is the script's host stand-in that
    /// lets the plumbing be tested without a GPU (hidden `grid
    /// --peer-backend numpy`; it applies to every peer).
    pub backend: String,
    pub captures: PathBuf,
    pub run_dir: PathBuf,
    pub device: usize,
    pub protocol: Protocol,
    pub rows: RowsMode,
    /// The method our arms were timed with; the peer uses the same.
    pub method: TimingMethod,
}

/// What one peer pass did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerOutcome {
    /// Cases handed to the script (0: the peer already had every case).
    pub cases_run: usize,
    /// Records appended to `results.jsonl`.
    pub records_joined: usize,
    /// Joined records whose exactness check failed.
    pub inexact: usize,
}

impl PeerConfig {
    /// `python3`, the default script and the real library; the rest from the
    /// run (the grid's `--python`, `--peer-script` and `--peer-backend`
    /// replace the first three).
    pub fn new(
        peer: Peer,
        captures: &Path,
        run_dir: &Path,
        device: usize,
        protocol: Protocol,
        rows: RowsMode,
        method: TimingMethod,
    ) -> PeerConfig {
        PeerConfig {
            peer,
            python: PathBuf::from("python3"),
            script: default_script(),
            backend: "real".to_string(),
            captures: captures.to_path_buf(),
            run_dir: run_dir.to_path_buf(),
            device,
            protocol,
            rows,
            method,
        }
    }

    /// Fail fast, before the grid spends minutes on our arms: the
    /// interpreter runs, the script exists, the backend's modules import.
    pub fn preflight(&self) -> Result<()> {
        let peer = self.peer.name();
        if !self.script.is_file() {
            return Err(GvrError::Usage(format!(
                "--peer {peer}: script {} not found (pass --peer-script PATH, or run without --peer and time the peer later with scripts/peer.py)",
                self.script.display()
            )));
        }
        let (modules, hint) = match self.backend.as_str() {
            "real" => (self.peer.modules(), self.peer.install_hint()),
            "numpy" => ("numpy, safetensors", "install them (or pass --python PATH)"),
            other => {
                return Err(GvrError::Usage(format!(
                    "--peer-backend {other}: expected real (the library) or numpy"
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
            "--peer {peer} needs python with {modules} ({why}); {hint}, or run without --peer {peer}"
        )))
    }

    /// The script's command line for a case-list file.
    pub fn command_args(&self, cases_file: &Path) -> Vec<String> {
        vec![
            self.script.display().to_string(),
            "--peer".into(),
            self.peer.name().into(),
            "--captures".into(),
            self.captures.display().to_string(),
            "--cases-file".into(),
            cases_file.display().to_string(),
            "--out".into(),
            self.run_dir
                .join(self.peer.records_file())
                .display()
                .to_string(),
            "--meta".into(),
            self.run_dir
                .join(self.peer.meta_file())
                .display()
                .to_string(),
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
            "--timing".into(),
            script_timing(self.method).into(),
        ]
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

/// `scripts/peer.py` under the working directory (the repository root,
/// where the README runs everything), else under the source tree this
/// binary was built from.
fn default_script() -> PathBuf {
    let local = PathBuf::from("scripts/peer.py");
    if local.is_file() {
        return local;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/peer.py")
}

/// Cases of a run (first-appearance order) for which some arm of `arms`
/// has no record yet, in the run or in the peer's raw records not yet
/// joined. Only cases of our own arms count (a peer never adds a case).
pub fn pending_cases(run: &[CaseRecord], peer_raw: &[CaseRecord], arms: &[&str]) -> Vec<String> {
    let have: HashSet<(&str, &str)> = run
        .iter()
        .chain(peer_raw)
        .filter(|r| arms.contains(&r.arm.as_str()))
        .map(|r| (r.case.as_str(), r.arm.as_str()))
        .collect();
    let mut seen = HashSet::new();
    run.iter()
        .filter(|r| Peer::of_arm(&r.arm).is_none())
        .filter(|r| arms.iter().any(|a| !have.contains(&(r.case.as_str(), *a))))
        .filter(|r| seen.insert(r.case.as_str()))
        .map(|r| r.case.clone())
        .collect()
}

/// The peer's raw records that belong in the run and are not there yet: one
/// per (case, arm) (the first), only for cases the run has, arms of `arms` only.
pub fn records_to_join(
    run: &[CaseRecord],
    peer_raw: Vec<CaseRecord>,
    arms: &[&str],
) -> Vec<CaseRecord> {
    let run_cases: HashSet<&str> = run.iter().map(|r| r.case.as_str()).collect();
    let mut joined: HashSet<(String, String)> = run
        .iter()
        .filter(|r| arms.contains(&r.arm.as_str()))
        .map(|r| (r.case.clone(), r.arm.clone()))
        .collect();
    peer_raw
        .into_iter()
        .filter(|r| arms.contains(&r.arm.as_str()) && run_cases.contains(r.case.as_str()))
        .filter(|r| joined.insert((r.case.clone(), r.arm.clone())))
        .collect()
}

fn peer_raw_records(run_dir: &Path, peer: Peer) -> Result<Vec<CaseRecord>> {
    let path = run_dir.join(peer.records_file());
    if path.exists() {
        read_records(&path)
    } else {
        Ok(Vec::new())
    }
}

/// Run one peer on every case of the run that one of its arms lacks, then
/// join its records into `results.jsonl` and note the method in the
/// manifest. A script failure still joins whatever it finished (a rerun with
/// `--resume` completes the rest) and then returns the error.
pub fn run_peer(cfg: &PeerConfig) -> Result<PeerOutcome> {
    let run_dir = &cfg.run_dir;
    let peer = cfg.peer;
    let records = run_records(run_dir)?;
    let pending = pending_cases(&records, &peer_raw_records(run_dir, peer)?, peer.arms());
    let mut script_error = None;
    if !pending.is_empty() {
        cfg.preflight()?;
        let cases_file = run_dir.join(peer.cases_file());
        std::fs::write(&cases_file, pending.join("\n") + "\n")
            .map_err(|e| GvrError::io(&cases_file, e))?;
        let log_path = run_dir.join(peer.log_file());
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| GvrError::io(&log_path, e))?;
        let log_err = log.try_clone().map_err(|e| GvrError::io(&log_path, e))?;
        eprintln!(
            "peer {}: {} cases × {} arms on device {}, {} (log: {})",
            peer.name(),
            pending.len(),
            peer.arms().len(),
            cfg.device,
            script_timing(cfg.method),
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
                    "--peer {}: cannot start {}: {e}; run without --peer",
                    peer.name(),
                    cfg.python.display()
                ))
            })?;
        if !status.success() {
            let log_text = std::fs::read_to_string(&log_path).unwrap_or_default();
            script_error = Some(GvrError::Other(anyhow::anyhow!(
                "peer.py --peer {} exited with {status}: {} (full log: {}); `gvr-bench grid --resume {}` retries the missing cases",
                peer.name(),
                last_line(&log_text),
                log_path.display(),
                run_dir.display()
            )));
        }
    }
    let outcome = join_peer_records(run_dir, peer, &records, pending.len())?;
    match script_error {
        Some(e) => Err(e),
        None => Ok(outcome),
    }
}

/// Append the peer's new records to `results.jsonl` and record each arm's
/// timing method, its first variant and what the script ran (its meta
/// file: versions, JIT build time) in the manifest.
fn join_peer_records(
    run_dir: &Path,
    peer: Peer,
    records: &[CaseRecord],
    cases_run: usize,
) -> Result<PeerOutcome> {
    let new = records_to_join(records, peer_raw_records(run_dir, peer)?, peer.arms());
    let mut writer = ResultsWriter::open(run_dir)?;
    let mut inexact = 0;
    for record in &new {
        writer.append(record)?;
        inexact += usize::from(super::campaign::is_inexact(&record.exact));
    }
    let meta_path = run_dir.join(peer.meta_file());
    let meta: Option<serde_json::Value> = std::fs::read_to_string(&meta_path)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok());
    if new.iter().any(|r| r.method.is_some()) || meta.is_some() {
        let mut manifest = EnvManifest::read(run_dir)?;
        let mut arms = serde_json::Map::new();
        for arm in peer.arms() {
            if let Some(first) = new.iter().find(|r| r.arm == *arm && r.method.is_some()) {
                if let Some(method) = first.method {
                    manifest.timing_methods.insert(arm.to_string(), method);
                }
                arms.insert(
                    arm.to_string(),
                    serde_json::json!({ "variant": first.variant, "method": first.method }),
                );
            }
        }
        let mut note = manifest
            .notes
            .remove(&peer.note_key())
            .filter(serde_json::Value::is_object)
            .unwrap_or_else(|| serde_json::json!({}));
        if !arms.is_empty() {
            note["arms"] = serde_json::Value::Object(arms);
        }
        if let Some(meta) = meta {
            note["meta"] = meta;
        }
        manifest.notes.insert(peer.note_key(), note);
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

    const FI: &[&str] = &["fi-auto", "fi-cub", "fi-filtered", "fi-radix"];

    #[test]
    fn pending_skips_cases_the_peer_has_in_either_file() {
        let run = vec![
            record("a@b1", "ss"),
            record("a@b1", "radix"),
            record("b@b1", "ss"),
            record("c@b1", "ss"),
            record("c@b1", TORCH_ARM),
        ];
        let raw = vec![record("b@b1", TORCH_ARM)];
        assert_eq!(pending_cases(&run, &raw, &[TORCH_ARM]), ["a@b1"]);
        assert_eq!(pending_cases(&run, &[], &[TORCH_ARM]), ["a@b1", "b@b1"]);
    }

    #[test]
    fn a_case_is_pending_while_any_arm_of_the_peer_lacks_it() {
        let mut run = vec![record("a@b1", "ss"), record("b@b1", "ss")];
        run.extend(FI.iter().map(|arm| record("a@b1", arm)));
        run.extend(FI[..3].iter().map(|arm| record("b@b1", arm)));
        // b lacks fi-radix; a torch record does not make a case of its own.
        run.push(record("z@b1", TORCH_ARM));
        assert_eq!(pending_cases(&run, &[], FI), ["b@b1"]);
        let raw = vec![record("b@b1", "fi-radix")];
        assert!(pending_cases(&run, &raw, FI).is_empty());
    }

    #[test]
    fn join_takes_each_new_case_arm_once_and_ignores_strangers() {
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
        let joined = records_to_join(&run, raw, &[TORCH_ARM]);
        assert_eq!(joined.len(), 1);
        assert_eq!(
            (joined[0].case.as_str(), joined[0].arm.as_str()),
            ("a@b1", TORCH_ARM)
        );
        let raw = vec![
            record("a@b1", "fi-auto"),
            record("a@b1", "fi-cub"),
            record("a@b1", "fi-auto"),
        ];
        let joined = records_to_join(&run, raw, FI);
        let arms: Vec<&str> = joined.iter().map(|r| r.arm.as_str()).collect();
        assert_eq!(arms, ["fi-auto", "fi-cub"]);
    }

    #[test]
    fn peers_name_their_arms_and_files() {
        assert_eq!(Peer::of_arm("fi-cub"), Some(Peer::Flashinfer));
        assert_eq!(Peer::of_arm("torch"), Some(Peer::Torch));
        assert_eq!(Peer::of_arm("radix"), None);
        assert_eq!(Peer::Torch.records_file(), TORCH_RECORDS_FILE);
        assert_eq!(Peer::Flashinfer.log_file(), "peer-flashinfer.log");
        assert_eq!(
            dedup_peers(&[Peer::Torch, Peer::Flashinfer, Peer::Torch]),
            [Peer::Torch, Peer::Flashinfer]
        );
    }

    #[test]
    fn command_passes_the_protocol_rows_and_method() {
        let mut cfg = PeerConfig::new(
            Peer::Flashinfer,
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
            TimingMethod::GraphReplay,
        );
        cfg.backend = "real".into();
        let args = cfg.command_args(Path::new("run/cases.txt")).join(" ");
        for want in [
            "--peer flashinfer",
            "--captures caps",
            "--cases-file run/cases.txt",
            "--rows independent",
            "--device 3",
            "--warmup 7",
            "--warm-reps 2",
            "--cold-reps 9",
            "--flush-bytes 1048576",
            "--backend real",
            "--timing graph-replay",
        ] {
            assert!(args.contains(want), "{want} missing from {args}");
        }
        for file in ["flashinfer.jsonl", "peer-flashinfer.json"] {
            assert!(
                args.contains(&Path::new("run").join(file).display().to_string()),
                "{file} missing from {args}"
            );
        }
        assert_eq!(script_timing(TimingMethod::Cupti), "cupti");
        assert_eq!(script_timing(TimingMethod::CudaEvents), "cuda-events");
    }

    #[test]
    fn preflight_names_the_way_out() {
        let mut cfg = PeerConfig::new(
            Peer::Flashinfer,
            Path::new("caps"),
            Path::new("run"),
            0,
            Protocol::default(),
            RowsMode::Replicate,
            TimingMethod::Cupti,
        );
        cfg.script = PathBuf::from(file!()); // any existing file
        cfg.python = PathBuf::from("/nonexistent/python3");
        cfg.backend = "real".into();
        let err = cfg.preflight().unwrap_err();
        assert_eq!(err.exit_code(), 2);
        let text = err.to_string();
        assert!(text.contains("without --peer flashinfer"), "{text}");
        assert!(text.contains(".whl/*.whl"), "{text}");
        cfg.backend = "tensorflow".into();
        assert!(cfg.preflight().is_err());
        cfg.backend = "real".into();
        cfg.script = PathBuf::from("/nonexistent/peer.py");
        assert!(cfg
            .preflight()
            .unwrap_err()
            .to_string()
            .contains("without --peer"));
    }
}
