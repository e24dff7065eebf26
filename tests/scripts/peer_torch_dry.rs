//! `grid --peer torch` and scripts/peer_torch.py without a GPU: the script's
//! case selection and exactness check, and the whole join through the
//! script's numpy stand-in backend. Needs python3 with numpy and safetensors;
//! without them the python-dependent tests print SKIPPED and return.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::cli::*;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/peer_torch.py")
}

fn python_ready() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import numpy, safetensors"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("SKIPPED: python3 with numpy+safetensors not available");
    }
    ok
}

fn cases_of(run: &Path, arm: Option<&str>) -> BTreeSet<String> {
    run_pairs(run)
        .into_iter()
        .filter(|(_, a)| arm.is_none_or(|want| a == want))
        .map(|(c, _)| c)
        .collect()
}

#[test]
fn dry_run_lists_the_cases_grid_selects() {
    if !python_ready() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let run_dir = root.path().join("run");
    let out = run(&[
        "grid",
        "--cpu",
        "--arms",
        "cpu-ref",
        "--captures",
        path_str(&captures),
        "--out",
        path_str(&run_dir),
        "--batches",
        "1,4",
        "--no-report",
        "--warmup",
        "0",
        "--warm-reps",
        "0",
        "--cold-reps",
        "1",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let listed = Command::new("python3")
        .arg(script())
        .args(["--dry-run", "--batches", "1,4", "--captures"])
        .arg(&captures)
        .output()
        .unwrap();
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let listed: BTreeSet<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(listed, cases_of(&run_dir, None));
}

/// The script's host check against hand-made outputs: ties, signed zeros,
/// out-of-range and duplicate indices, a wrong value.
#[test]
fn script_exactness_check_catches_each_kind_of_wrong() {
    if !python_ready() {
        return;
    }
    let code = r#"
import importlib.util, sys
import numpy as np
spec = importlib.util.spec_from_file_location("peer", sys.argv[1])
peer = importlib.util.module_from_spec(spec); spec.loader.exec_module(peer)
logits = np.array([[3.0, 1.0, 3.0, -0.0, 2.0, 0.0, 9.0, 9.0]], dtype=np.float32)
n = np.array([6])
check = lambda idx: peer.check_exact(np.array([idx]), logits, n, [0], 3)["status"]
assert check([0, 2, 4]) == "exact"          # 3, 3, 2
assert check([2, 0, 4]) == "exact"          # order is free (sorted=False)
assert check([0, 4, 1]) == "wrong"          # 1 instead of the second 3
assert check([0, 2, 6]) == "wrong"          # index 6 is past n = 6
assert check([0, 0, 4]) == "wrong"          # duplicate
z = np.array([[1.0, -0.0, 0.0, -1.0]], dtype=np.float32)
assert peer.check_exact(np.array([[0, 1]]), z, np.array([4]), [0], 2)["status"] == "exact"
assert peer.check_exact(np.array([[0, 2]]), z, np.array([4]), [0], 2)["status"] == "exact"
assert peer.form_rows(3, 5, "independent") == [0, 1, 2, 0, 1]
assert peer.form_rows(3, 2, "replicate") == [2, 2]
x = peer.build_batch(np.arange(8, dtype=np.float32).reshape(2, 4), np.array([2, 3]), [1, 0])
assert x.shape == (2, 3) and x[1, 2] == -np.inf and list(x[0]) == [4.0, 5.0, 6.0]
assert peer.parse_case("a_b@b16") == ("a_b", 16) and peer.parse_case("a@b0") is None
print("ok")
"#;
    let out = Command::new("python3")
        .args(["-c", code])
        .arg(script())
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("ok"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The whole `--peer` path with the numpy stand-in: every case gets a peer
/// record, exact, joined into results.jsonl and shown in the report; a
/// resume asks the peer for nothing more.
#[test]
fn peer_records_join_the_run_and_the_report() {
    if !python_ready() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let run_dir = root.path().join("run");
    let env = [("GVR_PEER_TORCH_BACKEND", "numpy")];
    let mut args = vec![
        "grid",
        "--cpu",
        "--arms",
        "cpu-ref",
        "--peer",
        "torch",
        "--captures",
        path_str(&captures),
        "--out",
        path_str(&run_dir),
        "--batches",
        "1,4",
    ];
    args.extend_from_slice(&FAST);
    let out = run_with_env(&args, &env);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let ours = cases_of(&run_dir, Some("cpu-ref"));
    assert_eq!(ours.len(), 4);
    assert_eq!(cases_of(&run_dir, Some("torch")), ours);
    let text = std::fs::read_to_string(run_dir.join("results.jsonl")).unwrap();
    let torch_lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("\"arm\":\"torch\""))
        .collect();
    assert!(
        torch_lines
            .iter()
            .all(|l| l.contains("\"status\":\"exact\"")),
        "{torch_lines:?}"
    );
    assert!(
        out.stdout.contains("torch"),
        "report lacks torch: {}",
        out.stdout
    );
    let manifest = std::fs::read_to_string(run_dir.join("manifest.json")).unwrap();
    assert!(manifest.contains("peer_torch"), "{manifest}");

    // Nothing left to do: the peer is not started again, nothing duplicated.
    let again = run_with_env(
        &["grid", "--resume", path_str(&run_dir), "--no-report"],
        &env,
    );
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        !again.stderr.contains("cases on device"),
        "{}",
        again.stderr
    );
    assert_eq!(run_pairs(&run_dir).len(), 8);
}

#[test]
fn missing_python_is_a_usage_error_before_the_grid() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let run_dir = root.path().join("run");
    let out = run_with_env(
        &[
            "grid",
            "--cpu",
            "--arms",
            "cpu-ref",
            "--peer",
            "torch",
            "--captures",
            path_str(&captures),
            "--out",
            path_str(&run_dir),
        ],
        &[("GVR_PYTHON", "/nonexistent/python3")],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    let lines = out.error_lines();
    assert!(lines[0].contains("without --peer"), "{lines:?}");
    assert!(!run_dir.join("results.jsonl").exists());
}

/// Each `--devices` worker runs the peer on its own shard; the merged run
/// has a peer record for every case.
#[test]
fn peer_runs_inside_each_device_worker() {
    if !python_ready() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let run_dir = root.path().join("run");
    let mut args = vec![
        "grid",
        "--cpu",
        "--arms",
        "cpu-ref",
        "--peer",
        "torch",
        "--devices",
        "0,1",
        "--captures",
        path_str(&captures),
        "--out",
        path_str(&run_dir),
        "--batches",
        "1,4",
        "--no-report",
    ];
    args.extend_from_slice(&FAST);
    let out = run_with_env(&args, &[("GVR_PEER_TORCH_BACKEND", "numpy")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let ours = cases_of(&run_dir, Some("cpu-ref"));
    assert_eq!(ours.len(), 4);
    assert_eq!(cases_of(&run_dir, Some("torch")), ours);
    for shard in ["0", "1"] {
        let dir = run_dir.join("shards").join(shard);
        assert!(
            dir.join("torch.jsonl").exists(),
            "shard {shard} ran no peer"
        );
    }
}

/// The real peer on a GPU: every case exact, timed by graph replay, joined
/// next to a GPU arm. Run on the device with
/// `cargo test --release --test peer_torch_dry -- --ignored --nocapture`.
#[test]
#[ignore = "needs an H200 and python3 with torch"]
fn torch_peer_on_the_gpu() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let run_dir = root.path().join("run");
    let out = run(&[
        "grid",
        "--arms",
        "radix",
        "--peer",
        "torch",
        "--captures",
        path_str(&captures),
        "--out",
        path_str(&run_dir),
        "--batches",
        "1,7,64,1024",
        "--rows",
        "independent",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(run_dir.join("results.jsonl")).unwrap();
    let torch: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["arm"] == "torch")
        .collect();
    assert_eq!(torch.len(), 8);
    for r in &torch {
        assert_eq!(r["exact"]["status"], "exact", "{r}");
        assert_eq!(r["method"], "graph-replay", "{r}");
        assert_eq!(r["cold_us"].as_array().unwrap().len(), 10, "{r}");
    }
    let log = std::fs::read_to_string(run_dir.join("peer-torch.log")).unwrap();
    eprintln!("{log}");
    assert!(out.stdout.contains("| torch |"), "{}", out.stdout);
}
