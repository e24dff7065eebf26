//! SIGINT (Ctrl-C) or SIGTERM during `grid`: the run stops after the current
//! case, exits 130 / 143, leaves a valid results file and its phases.json,
//! says how to resume; resuming completes it with nothing lost or duplicated.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::cli::*;

#[test]
fn sigint_stops_after_the_current_case_and_resume_completes() {
    stop_and_resume("-INT", 130);
}

#[test]
fn sigterm_stops_after_the_current_case_and_resume_completes() {
    stop_and_resume("-TERM", 143);
}

fn stop_and_resume(signal: &str, code: i32) {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let run_dir = root.path().join("run");
    // Two cases (one per cell) of 256 rows, enough reps that a case takes
    // well over the signal's latency.
    let child = Command::new(binary())
        .args([
            "grid",
            "--cpu",
            "--no-report",
            "--batches",
            "256",
            "--warmup",
            "1",
            "--warm-reps",
            "1",
        ])
        .args([
            "--cold-reps",
            "30",
            "--captures",
            path_str(&captures),
            "--out",
            path_str(&run_dir),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    // Interrupt as soon as the first record is on disk (first case under way).
    let results = run_dir.join("results.jsonl");
    let deadline = Instant::now() + Duration::from_secs(120);
    while std::fs::metadata(&results)
        .map(|m| m.len() == 0)
        .unwrap_or(true)
    {
        assert!(Instant::now() < deadline, "no record after 120 s");
        std::thread::sleep(Duration::from_millis(1));
    }
    let status = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "stderr: {stderr}");
    assert!(run_dir.join("phases.json").is_file(), "stderr: {stderr}");
    assert!(
        stderr.contains(&format!("gvr-bench grid --resume {}", run_dir.display())),
        "stderr: {stderr}"
    );
    let partial = run_pairs(&run_dir);
    assert_eq!(
        partial.len(),
        2,
        "exactly the first case's two arms: {partial:?}"
    );

    let out = run(&["grid", "--resume", path_str(&run_dir), "--no-report"]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let full = run_pairs(&run_dir);
    assert_eq!(full.len(), 4, "{full:?}");
    let mut unique = full.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 4, "a pair recorded twice: {full:?}");
    assert!(partial.iter().all(|p| full.contains(p)));
}
