//! `grid --devices LIST` with CPU engines: one worker process per listed
//! device, disjoint shards merged into one run equal to a single run; a
//! failed worker is named, the others finish, and `--resume` completes it.

use std::collections::BTreeSet;
use std::path::Path;

use crate::support::cli::*;

fn grid(captures: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "grid",
        "--cpu",
        "--arms",
        "cpu-ref,cpu-ss",
        "--captures",
        path_str(captures),
        "--out",
        path_str(out),
    ];
    args.extend_from_slice(&FAST);
    args.extend_from_slice(extra);
    run(&args)
}

fn cases(run: &Path) -> BTreeSet<String> {
    run_pairs(run).into_iter().map(|(c, _)| c).collect()
}

#[test]
fn workers_merge_into_the_single_run() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let whole = root.path().join("whole");
    let out = grid(&captures, &whole, &["--batches", "1,2,4", "--no-report"]);
    assert_eq!(out.code, 0, "{}", out.stderr);

    let fanned = root.path().join("fanned");
    let out = grid(
        &captures,
        &fanned,
        &["--batches", "1,2,4", "--devices", "0,1,2"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(run_pairs(&fanned), run_pairs(&whole));
    // Each worker ran its own disjoint, non-empty shard.
    let mut seen = BTreeSet::new();
    for i in 0..3 {
        let shard = cases(&fanned.join("shards").join(i.to_string()));
        assert!(!shard.is_empty(), "shard {i} is empty");
        assert!(shard.is_disjoint(&seen), "shard {i} overlaps");
        seen.extend(shard);
    }
    assert_eq!(seen, cases(&whole));
    // The run is the parent's: its command line restarts the fan-out, and
    // the report was printed from the merged results.
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fanned.join("manifest.json")).unwrap())
            .unwrap();
    let command = manifest["command_line"].to_string();
    assert!(command.contains("--devices"), "{command}");
    assert_eq!(manifest["notes"]["shards"].as_array().unwrap().len(), 3);
    assert!(out.stdout.contains("cpu-ss"), "no report: {}", out.stdout);

    // Resuming a finished fan-out re-merges the same records.
    let again = run(&["grid", "--resume", path_str(&fanned), "--no-report"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(run_pairs(&fanned), run_pairs(&whole));
}

#[test]
fn a_failed_worker_is_named_and_a_repaired_capture_cannot_resume_into_it() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    // One case per cell and two workers: each worker reads one cell.
    let cell = first_cell_file(&captures);
    let pristine = std::fs::read(&cell).unwrap();
    std::fs::write(&cell, &pristine[..pristine.len() / 2]).unwrap();

    let run_dir = root.path().join("run");
    let out = grid(&captures, &run_dir, &["--batches", "1", "--devices", "0,1"]);
    assert_ne!(out.code, 0, "{}", out.stderr);
    let error = out.error_lines().join("\n");
    assert!(error.contains("1 of 2 workers failed"), "{error}");
    assert!(error.contains("--resume"), "{error}");
    assert!(
        !run_dir.join("results.jsonl").exists(),
        "merged a partial run"
    );
    // The healthy worker finished its shard.
    let finished: usize = (0..2)
        .map(|i| {
            run_dir
                .join("shards")
                .join(i.to_string())
                .join("results.jsonl")
        })
        .filter(|p| p.exists() && !std::fs::read_to_string(p).unwrap().is_empty())
        .count();
    assert_eq!(finished, 1);

    // Repairing the cell changes the capture set the finished shard was
    // measured on: resume refuses rather than mix inputs.
    std::fs::write(&cell, &pristine).unwrap();
    let resumed = run(&["grid", "--resume", path_str(&run_dir), "--no-report"]);
    assert_ne!(resumed.code, 0, "{}", resumed.stderr);
    let log = std::fs::read_to_string(run_dir.join("shards").join("0.log")).unwrap()
        + &std::fs::read_to_string(run_dir.join("shards").join("1.log")).unwrap();
    assert!(log.contains("capture_content_hash"), "{log}");
}

#[test]
fn devices_refuse_bad_lists_and_shard_or_limit() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    for extra in [
        &["--devices", "0,0"][..],
        &["--devices", "x"][..],
        &["--devices", "0,1", "--shard", "0/2"][..],
        &["--devices", "0,1", "--limit", "3"][..],
    ] {
        let out = grid(&captures, &root.path().join("r"), extra);
        assert_eq!(out.code, 2, "{extra:?}: {}", out.stderr);
        assert!(
            !root.path().join("r").exists(),
            "{extra:?} left a run directory"
        );
    }
}
