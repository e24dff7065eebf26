//! Shared helpers for the CLI integration tests: run the built binary, make
//! a tiny synthetic capture set (once per test binary) and damage copies of it.
#![allow(dead_code)] // each test crate uses a different subset

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// The stderr lines that are not progress noise.
    pub fn error_lines(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| l.starts_with("error:") || l.starts_with("hint:"))
            .collect()
    }
}

/// A private copy of the binary, made once per test binary: the shared
/// target directory may be rebuilt while tests run, and runs that must agree
/// on `binary_sha256` (resume, merge) need one stable executable.
pub fn binary() -> &'static Path {
    static BIN: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, path) = BIN.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("gvr-bench");
        std::fs::copy(env!("CARGO_BIN_EXE_gvr-bench"), &path).expect("copy gvr-bench");
        (dir, path)
    });
    path
}

pub fn run_with_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(binary());
    cmd.args(args).env_remove("RUST_LOG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("spawn gvr-bench");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn run(args: &[&str]) -> Output {
    run_with_env(args, &[])
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

/// A pristine two-cell synthetic capture set (V4 Flash, N ≈ 4K, 3 steps),
/// generated once per test binary by `gvr-bench capture synth`.
fn pristine() -> &'static Path {
    static SET: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, path) = SET.get_or_init(|| {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("sample");
        let out = run(&[
            "capture",
            "synth",
            "--out",
            path_str(&dir),
            "--cells",
            "v4_flash_16k_*",
            "--limit",
            "2",
            "--steps",
            "3",
        ]);
        assert_eq!(out.code, 0, "capture synth failed: {}", out.stderr);
        (root, dir)
    });
    path
}

/// A private copy of the pristine capture set under `root` (tests may damage it).
pub fn capture_set(root: &Path) -> PathBuf {
    let dst = root.join("captures");
    std::fs::create_dir_all(&dst).unwrap();
    for entry in std::fs::read_dir(pristine()).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dst.join(entry.file_name())).unwrap();
    }
    dst
}

/// Path of the first cell file listed in a capture set's manifest.
pub fn first_cell_file(captures: &Path) -> PathBuf {
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(captures.join("manifest.json")).unwrap())
            .unwrap();
    captures.join(manifest["cells"][0]["file"].as_str().unwrap())
}

/// Write a one-row grid file at `path` naming cell `index` of the capture
/// set, with `n` added to the captured length (0: as captured). Returns the
/// cell's manifest entry.
pub fn one_cell_grid(
    captures: &Path,
    index: usize,
    n_offset: u64,
    path: &Path,
) -> serde_json::Value {
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(captures.join("manifest.json")).unwrap())
            .unwrap();
    let c = manifest["cells"][index].clone();
    std::fs::write(
        path,
        format!(
            "cell,model,isl,layer,n,k,cr,next_n\n{},{},{},{},{},{},{},{}\n",
            c["id"].as_str().unwrap(),
            c["model"].as_str().unwrap(),
            c["isl"].as_str().unwrap(),
            c["layer"],
            c["n"].as_u64().unwrap() + n_offset,
            c["k"],
            c["cr"],
            c["next_n"]
        ),
    )
    .unwrap();
    c
}

/// Edit the first cell entry of the manifest.
pub fn edit_manifest(captures: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = captures.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut manifest["cells"][0]);
    std::fs::write(&path, serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
}

/// The safetensors header of a file: (header JSON, byte offset where tensor data starts).
pub fn safetensors_header(bytes: &[u8]) -> (serde_json::Value, usize) {
    let len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header = serde_json::from_slice(&bytes[8..8 + len]).unwrap();
    (header, 8 + len)
}

/// Case ids (`cell@bB`) and (case, arm) pairs of a run directory.
pub fn run_pairs(run: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(run.join("results.jsonl")).unwrap();
    let mut pairs: Vec<(String, String)> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["case"].as_str().unwrap().to_string(),
                v["arm"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    pairs.sort();
    pairs
}

/// Fast protocol flags for CPU runs in tests.
pub const FAST: [&str; 6] = ["--warmup", "1", "--warm-reps", "1", "--cold-reps", "2"];
