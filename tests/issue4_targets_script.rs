//! scripts/issue4_targets.py turns a run's records into issue 4's target lines
//! (the numbers of record are read with it): two cases of ss and radix, one of
//! them B >= 256 & N >= 64K, so the ratio, the B = 1 median and the bandwidth
//! share can be checked by hand, at the H200's default and at another GPU's
//! `--read-tbs`. Needs python3 (standard library only); without it the test
//! prints SKIPPED and returns.

mod script_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use script_support::{python3_or_skip, script};

fn record(case: &str, arm: &str, b: u32, n: u32, bytes: u64, cold_us: &[f64]) -> String {
    serde_json::json!({
        "case": case, "arm": arm, "b": b, "n": n, "model": "v32", "bytes": bytes,
        "variant": "main/blk512/r1", "cold_us": cold_us, "exact": {"status": "exact"},
    })
    .to_string()
}

/// `python3 scripts/issue4_targets.py RESULTS`, not started yet.
fn targets_command(results: &Path) -> Command {
    let mut command = script("issue4_targets.py");
    command.arg(results);
    command
}

fn run(results: &Path, extra: &[&str]) -> Output {
    targets_command(results).args(extra).output().unwrap()
}

/// Two cases of ss and radix in a temporary `results.jsonl`. Big case:
/// 4.49e6 bytes in 2 µs = 2.245 TB/s, half of 4.49. B = 1 case: 4 µs.
fn two_cases() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.jsonl");
    let lines = [
        record("big@b256", "ss", 256, 65_551, 4_490_000, &[1.0, 3.0]),
        record("big@b256", "radix", 256, 65_551, 4_490_000, &[8.0]),
        record("one@b1", "ss", 1, 4_111, 32_000, &[4.0, 4.0]),
        record("one@b1", "radix", 1, 4_111, 32_000, &[8.0]),
    ];
    std::fs::write(&results, lines.join("\n") + "\n").unwrap();
    (dir, results)
}

#[test]
fn the_targets_read_the_records_and_the_bandwidth_figure() {
    if !python3_or_skip() {
        return;
    }
    let (_dir, results) = two_cases();

    let out = run(&results, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // radix / ss: 8 / 2 and 8 / 4, geomean sqrt(8) = 2.828.
    assert!(text.contains("geomean 2.828x, faster in 100.0 %"), "{text}");
    assert!(
        text.contains("B = 1 median: 4.00 us over 1 cases"),
        "{text}"
    );
    assert!(
        text.contains("mean read BW: 50.0 % of 4.49 TB/s = 2.25 TB/s (1 cases)"),
        "{text}"
    );

    // The same records against a GPU of half the bandwidth: the share doubles.
    let out = run(&results, &["--read-tbs", "2.245"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("mean read BW: 100.0 % of 2.245 TB/s = 2.25 TB/s"),
        "{text}"
    );

    // A figure that is not a positive bandwidth is refused (argparse's exit 2).
    let out = run(&results, &["--read-tbs", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--read-tbs must be a positive"));
}

#[test]
fn a_reader_that_stops_early_gets_no_traceback() {
    // `issue4_targets.py RUN | head -3` (NOTES' campaign recipe): the script
    // must die of SIGPIPE like a shell tool, not print a BrokenPipeError.
    if !python3_or_skip() {
        return;
    }
    let (_dir, results) = two_cases();
    let mut child = targets_command(&results)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader is gone before python starts, so before any line
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("Traceback"), "{stderr}");
    assert!(!out.status.success(), "a closed stdout cannot be a success");
}
