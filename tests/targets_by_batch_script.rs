//! scripts/targets_by_batch.py builds reports/TARGETS.md's per-batch tables from a
//! campaign's records and a floor run: three hand-checkable cases (B 1, and B 256 / 512
//! at N >= 64K, each 4.49e6 bytes) give every column and the bandwidth projection; a
//! missing floor run is an error, not an empty table. Needs python3 (standard library
//! only); without it the test prints SKIPPED and returns.

mod script_support;

use std::path::Path;
use std::process::Output;

use script_support::{python3_or_skip, script};

const BYTES: u64 = 4_490_000; // 1 µs of it is 4.49 TB/s: a roofline of 100 %

fn record(case: &str, arm: &str, b: u32, n: u32, cold_us: f64) -> String {
    serde_json::json!({
        "case": case, "arm": arm, "b": b, "n": n, "bytes": BYTES,
        "cold_us": [cold_us], "exact": {"status": "exact"},
    })
    .to_string()
}

fn floor(case: &str, b: u32, n: u32, cold_us: f64) -> String {
    serde_json::json!({"case": case, "b": b, "n": n, "bytes": BYTES, "cold_us": [cold_us]})
        .to_string()
}

fn write(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// The three cases of both runs: (case, B, N).
const CASES: [(&str, u32, u32); 3] = [
    ("one@b1", 1, 4_111),
    ("big@b256", 256, 65_551),
    ("big@b512", 512, 65_551),
];

fn run(campaign: &Path, floor_run: &Path) -> Output {
    script("targets_by_batch.py")
        .arg(campaign)
        .arg(floor_run)
        .output()
        .unwrap()
}

#[test]
fn the_tables_come_from_both_runs() {
    if !python3_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let campaign = dir.path().join("campaign.jsonl");
    // ss 2 µs everywhere (50 %), radix 3x / 6x slower, torch 5x slower.
    let mut lines = Vec::new();
    for (case, b, n) in CASES {
        lines.push(record(case, "ss", b, n, 2.0));
        lines.push(record(case, "radix", b, n, if b == 1 { 12.0 } else { 6.0 }));
        lines.push(record(case, "torch", b, n, 10.0));
    }
    write(&campaign, &lines);
    let floor_run = dir.path().join("floor-run");
    std::fs::create_dir(&floor_run).unwrap();
    let mut results = Vec::new();
    let mut floors = Vec::new();
    for (case, b, n) in CASES {
        results.push(record(case, "ss", b, n, 1.5));
        results.push(record(case, "radix", b, n, 4.0));
        floors.push(floor(case, b, n, 1.0));
    }
    write(&floor_run.join("results.jsonl"), &results);
    write(&floor_run.join("floor.jsonl"), &floors);

    let out = run(&campaign, &floor_run);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "| 1 | 6.00× | 5.00× | 50.0 % | 4.00 | 1.50 | 100.0 % | 1.00 µs |",
        "| 256 | 3.00× | 5.00× | 50.0 % | 4.00 | 1.50 | 100.0 % | 1.00 µs |",
        "B >= 256 & N >= 64K: 2 cases, ss 50.0 %, floor 100.0 %",
        "B 256: ss 50.0 %, floor 100.0 %",
        // B 512 at 95 % of 100 % next to B 256's 50 %: (95 + 50) / 2.
        "B >= 512 at 95% of the floor's throughput, B 256 as is: 72.5 %",
        "B >= 512 at 100% of the floor's throughput, B 256 as is: 75.0 %",
    ] {
        assert!(text.contains(want), "missing `{want}` in:\n{text}");
    }

    let missing = run(&campaign, &dir.path().join("no-such-run"));
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("not found"));
}
