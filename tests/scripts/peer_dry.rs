//! `grid --peer torch,flashinfer` and scripts/peer.py without a GPU: the
//! script's case selection, exactness check, kernel-time partition and
//! FlashInfer backend rules, and the whole join through the script's numpy
//! stand-in backend. Needs python3 with numpy and safetensors; without them
//! the python-dependent tests print SKIPPED and return. The GPU tests at the
//! end are `#[ignore]`d (they need torch, flashinfer and a Hopper GPU).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::cli::*;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/peer.py")
}

/// The old entry point, kept for existing command lines.
fn torch_script() -> PathBuf {
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
        .args([
            "--peer",
            "flashinfer",
            "--dry-run",
            "--batches",
            "1,4",
            "--captures",
        ])
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
    // Through the old entry point too: it re-exports the script's functions.
    for path in [script(), torch_script()] {
        let out = Command::new("python3")
            .args(["-c", code])
            .arg(path)
            .output()
            .unwrap();
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).contains("ok"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Runs `code` with the script loaded as `peer` (argv[1] is its path).
fn script_check(code: &str) {
    let out = Command::new("python3")
        .args(["-c", code])
        .arg(script())
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("ok"),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

const LOAD: &str = r#"
import importlib.util, sys
spec = importlib.util.spec_from_file_location("peer", sys.argv[1])
peer = importlib.util.module_from_spec(spec); spec.loader.exec_module(peer)
"#;

/// Kernel time from profiler records: each rep sums the activities strictly
/// between its two markers, whatever the delivery order; flushes and other
/// work outside the markers never count; a lost marker is an error.
#[test]
fn kernel_time_sums_what_lies_between_a_reps_markers() {
    if !python_ready() {
        return;
    }
    let code = format!(
        "{LOAD}{}",
        r#"
M = "spin_kernel"
ev = [
    (0, 10, M), (20, 1000, "fill"),                      # marker 0, a flush before rep 0
    (1010, 1020, M), (1030, 1530, "topk_a"), (1540, 1790, "topk_b"), (1800, 1810, M),  # rep 0: 750 ns
    (1900, 2900, "fill"),                                 # flush before rep 1
    (3000, 3010, M), (3020, 4020, "topk_a"), (4030, 4130, "[memset]"), (4200, 4210, M), # rep 1: 1100 ns
    (5000, 6000, "check"),                                # the exactness check, after the reps
]
import random
random.seed(1); random.shuffle(ev)
times, counts = peer.rep_kernel_times(ev, M, [(1, 2), (3, 4)])
assert times == [0.75, 1.1], times
assert counts == [2, 2], counts
assert peer.check_rep_counts(counts) is None
assert "rep 1 has 1 of 2" in peer.check_rep_counts([2, 1])
assert "no kernel" in peer.check_rep_counts([0, 0])
try:
    peer.rep_kernel_times(ev, M, [(1, 2), (3, 5)])
    raise SystemExit("a missing marker must raise")
except ValueError as e:
    assert "5 marker records for 6" in str(e), e
print("ok")
"#
    );
    script_check(&code);
}

/// FlashInfer 0.7.2.post1's sm_90 dispatch as the script mirrors it, and
/// the backend named by kernel names.
#[test]
fn flashinfer_backend_rules() {
    if !python_ready() {
        return;
    }
    let code = format!(
        "{LOAD}{}",
        r#"
p = peer.fi_predict_backend
# auto, eager: CUB below 128 rows or up to 8K values; else filtered up to 32K,
# then filtered only when rows > d / 16384.
assert p(None, 64, 131072, 2048, False) == "cub"
assert p(None, 512, 8192, 512, False) == "cub"
assert p(None, 512, 16384, 512, False) == "filtered"
assert p(None, 256, 131072, 2048, False) == "filtered"
assert p(None, 4, 262144, 2048, False) == "cub"
assert p(None, 128, 262144, 2048, False) == "filtered"
assert p(None, 128, 4194304, 2048, False) == "radix"
# auto under graph capture: CUB also from 32K values up.
assert p(None, 512, 65536, 2048, True) == "cub"
assert p(None, 512, 16384, 2048, True) == "filtered"
# forced backends
assert p("cub", 1024, 262144, 2048, False) == "cub"
assert p("filtered", 4, 262144, 2048, False) == "filtered"
assert p("multi_cta", 1024, 8192, 512, False) == "radix"
assert p("filtered", 4, 2048, 2048, False) == "radix"  # d == k: FilteredTopK refuses
assert peer.fi_backend_of_kernels(["void flashinfer::sampling::FilteredTopKUnifiedKernel<...>"]) == "filtered"
assert peer.fi_backend_of_kernels(["RadixTopKKernel_Unified<1024u, 4u, false>", "elementwise_kernel"]) == "radix"
assert peer.fi_backend_of_kernels(["cub::detail::batched_topk::DeviceBatchedTopKKernel"]) == "cub"
assert peer.fi_backend_of_kernels(["at::native::vectorized_elementwise_kernel"]) is None
assert peer.PEER_ARMS["flashinfer"] == ["fi-auto", "fi-cub", "fi-filtered", "fi-radix"]
print("ok")
"#
    );
    script_check(&code);
}

/// The whole `--peer` path with the numpy stand-in: every case gets a
/// record per peer arm, exact, joined into results.jsonl and shown in the
/// report; a resume asks the peers for nothing more.
#[test]
fn peer_records_join_the_run_and_the_report() {
    if !python_ready() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let run_dir = root.path().join("run");
    let env: [(&str, &str); 0] = [];
    let mut args = vec![
        "grid",
        "--peer-backend",
        "numpy",
        "--cpu",
        "--arms",
        "cpu-ref",
        "--peer",
        "torch,flashinfer",
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
    for arm in ["torch", "fi-auto", "fi-cub", "fi-filtered", "fi-radix"] {
        assert_eq!(cases_of(&run_dir, Some(arm)), ours, "{arm}");
    }
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
    assert!(out.stdout.contains("| fi-cub |"), "{}", out.stdout);
    assert!(
        out.stdout.contains("- peer flashinfer: numpy"),
        "{}",
        out.stdout
    );
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("manifest.json")).unwrap())
            .unwrap();
    assert!(
        manifest["notes"]["peer_torch"]["arms"]["torch"].is_object(),
        "{manifest}"
    );
    let fi = &manifest["notes"]["peer_flashinfer"];
    assert_eq!(fi["meta"]["peer"], "flashinfer", "{manifest}");
    assert!(fi["meta"]["jit_build_s"].is_number(), "{manifest}");
    assert_eq!(manifest["timing_methods"]["fi-radix"], "host-clock");

    // Nothing left to do: the peer is not started again, nothing duplicated.
    let again = run_with_env(
        &[
            "grid",
            "--resume",
            path_str(&run_dir),
            "--no-report",
            "--peer-backend",
            "numpy",
        ],
        &env,
    );
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(!again.stderr.contains("on device"), "{}", again.stderr);
    assert_eq!(run_pairs(&run_dir).len(), 4 * 6);
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
            "flashinfer",
            "--captures",
            path_str(&captures),
            "--out",
            path_str(&run_dir),
            "--python",
            "/nonexistent/python3",
        ],
        &[],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    let lines = out.error_lines();
    assert!(lines[0].contains("without --peer flashinfer"), "{lines:?}");
    assert!(!run_dir.join("results.jsonl").exists());
}

/// flashinfer without the library: the preflight names the carried wheels
/// (python3 with numpy+safetensors but no torch/flashinfer here).
#[test]
fn missing_flashinfer_names_the_carried_wheels() {
    if !python_ready() {
        return;
    }
    let has_flashinfer = Command::new("python3")
        .args(["-c", "import torch, flashinfer"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if has_flashinfer {
        eprintln!("SKIPPED: torch and flashinfer are importable here");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let out = run(&[
        "grid",
        "--cpu",
        "--arms",
        "cpu-ref",
        "--peer",
        "flashinfer",
        "--captures",
        path_str(&captures),
        "--out",
        path_str(&root.path().join("run")),
    ]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    let lines = out.error_lines();
    assert!(lines[0].contains(".whl/*.whl"), "{lines:?}");
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
        "torch,flashinfer",
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
    args.extend_from_slice(&["--peer-backend", "numpy"]);
    let out = run_with_env(&args, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let ours = cases_of(&run_dir, Some("cpu-ref"));
    assert_eq!(ours.len(), 4);
    assert_eq!(cases_of(&run_dir, Some("torch")), ours);
    assert_eq!(cases_of(&run_dir, Some("fi-auto")), ours);
    for shard in ["0", "1"] {
        let dir = run_dir.join("shards").join(shard);
        for file in ["torch.jsonl", "flashinfer.jsonl"] {
            assert!(dir.join(file).exists(), "shard {shard} has no {file}");
        }
    }
}

/// The real peer on a GPU: every case exact, timed by kernel time like the
/// GPU arm next to it. Run on the device with
/// `cargo test --release --test peer_dry -- --ignored --nocapture`.
#[test]
#[ignore = "needs a Hopper GPU and python3 with torch"]
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
        assert_eq!(r["method"], "cupti", "{r}");
        assert_eq!(r["cold_us"].as_array().unwrap().len(), 10, "{r}");
    }
    let log = std::fs::read_to_string(run_dir.join("peer-torch.log")).unwrap();
    eprintln!("{log}");
    assert!(out.stdout.contains("| torch |"), "{}", out.stdout);
}

/// Every flashinfer arm on a GPU, by kernel time and by graph replay: exact
/// on every case, the method of our arm, the backend read off the kernels,
/// the JIT build time in the manifest. Needs the carried wheels installed
/// (`python3 -m pip install -q --no-index --no-deps --target /tmp/site
/// .whl/*.whl && export PYTHONPATH=/tmp/site`).
#[test]
#[ignore = "needs a Hopper GPU and python3 with torch and flashinfer"]
fn flashinfer_peer_on_the_gpu() {
    for (timing, method) in [("cupti", "cupti"), ("graph", "graph-replay")] {
        let root = tempfile::tempdir().unwrap();
        let captures = capture_set(root.path());
        let run_dir = root.path().join("run");
        let out = run(&[
            "grid",
            "--arms",
            "radix",
            "--peer",
            "flashinfer",
            "--timing",
            timing,
            "--captures",
            path_str(&captures),
            "--out",
            path_str(&run_dir),
            "--batches",
            "1,7,64,1024",
            "--rows",
            "independent",
        ]);
        let log = std::fs::read_to_string(run_dir.join("peer-flashinfer.log")).unwrap_or_default();
        eprintln!("{log}");
        assert_eq!(out.code, 0, "{}", out.stderr);
        let text = std::fs::read_to_string(run_dir.join("results.jsonl")).unwrap();
        let fi: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|v| v["arm"].as_str().is_some_and(|a| a.starts_with("fi-")))
            .collect();
        assert_eq!(fi.len(), 4 * 8);
        for r in &fi {
            assert_eq!(r["exact"]["status"], "exact", "{r}");
            assert_eq!(r["method"], method, "{r}");
            let variant = r["variant"].as_str().unwrap();
            let forced = match r["arm"].as_str().unwrap() {
                "fi-cub" => Some("cub"),
                "fi-filtered" => Some("filtered"),
                "fi-radix" => Some("radix"),
                _ => None,
            };
            if let Some(backend) = forced {
                assert!(variant.starts_with(backend), "{r}");
            }
        }
        let manifest = std::fs::read_to_string(run_dir.join("manifest.json")).unwrap();
        assert!(manifest.contains("jit_build_s"), "{manifest}");
        assert!(out.stdout.contains("## Headline: "), "{}", out.stdout);
    }
}
