//! `gvr-bench grid` end to end on CPU arms: results, report, resume, merge, A/A.

use crate::support::cli::*;

fn grid(captures: &std::path::Path, out: &std::path::Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "grid",
        "--cpu",
        "--captures",
        path_str(captures),
        "--out",
        path_str(out),
        "--batches",
        "1,4",
    ];
    args.extend_from_slice(&FAST);
    args.extend_from_slice(extra);
    run(&args)
}

#[test]
fn cpu_grid_writes_results_manifest_and_report() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let run_dir = root.path().join("run");
    let out = grid(&captures, &run_dir, &[]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    // Stderr is a pipe here: a plain progress line, no bar, no colour codes.
    assert!(out.stderr.contains("grid: 4/4 cases, "), "{}", out.stderr);
    assert!(!out.stderr.contains('\x1b'), "{:?}", out.stderr);
    // 2 cells × 2 batch sizes × 2 CPU arms.
    let pairs = run_pairs(&run_dir);
    assert_eq!(pairs.len(), 8, "{pairs:?}");
    assert!(pairs
        .iter()
        .any(|(c, a)| c.ends_with("@b4") && a == "cpu-ss"));
    let text = std::fs::read_to_string(run_dir.join("results.jsonl")).unwrap();
    assert!(
        !text.contains("\"WRONG\"") && text.matches("\"status\":\"exact\"").count() == 8,
        "{text}"
    );

    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["binary_sha256"].as_str().unwrap().len(), 64);
    assert_eq!(manifest["capture_set_hash"].as_str().unwrap().len(), 64);
    assert!(manifest["finished_utc"].as_str().unwrap().ends_with('Z'));
    assert_eq!(manifest["protocol"]["cold_reps"], 2);
    assert_eq!(manifest["timing_methods"]["cpu-ref"], "host-clock");

    // The report is printed and written under the run directory.
    assert!(out.stdout.contains("Exactness"), "stdout: {}", out.stdout);
    assert!(run_dir.join("report").is_dir());
    // Its header names the reps this run took (FAST), not the defaults, and
    // the files it wrote.
    let summary = std::fs::read_to_string(run_dir.join("report/summary.md")).unwrap();
    assert!(
        summary.contains("Protocol (manifest.json): 1 warm-up, 1 warm, 2 cold reps per case.")
            && summary.contains("Reps recorded per timed case: 1 warm, 2 cold."),
        "{summary}"
    );
    for file in ["cases.csv", "summary.md", "summary.json"] {
        let path = run_dir.join("report").join(file);
        assert!(
            summary.contains(&format!("- {}", path.display())),
            "{file} not listed: {summary}"
        );
    }
    assert!(summary.contains(".svg"), "no plot listed: {summary}");
}

#[test]
fn floor_without_a_gpu_is_a_usage_error() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let run_dir = root.path().join("run");
    let out = grid(&captures, &run_dir, &["--floor"]);
    assert_eq!(out.code, 2, "stderr: {}", out.stderr);
    assert!(
        out.stderr
            .contains("(`grid --floor`, `floor = true` in an experiment file) needs a GPU"),
        "{}",
        out.stderr
    );
    assert!(!run_dir.exists(), "a refused run left its directory");
}

#[test]
fn without_gpu_prints_one_notice_line() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let run_dir = root.path().join("run");
    let out = grid(&captures, &run_dir, &["--no-report", "--cells", "*_L02"]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let notices: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("no GPU available"))
        .collect();
    assert_eq!(notices.len(), 1, "stdout: {}", out.stdout);
    assert!(notices[0].contains("cpu-ref, cpu-ss") && notices[0].contains("not comparable"));
    // --no-report: nothing but the notice on stdout.
    assert_eq!(out.stdout.lines().count(), 1, "stdout: {}", out.stdout);
}

#[test]
fn resume_skips_finished_pairs_and_repairs_a_torn_line() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let run_dir = root.path().join("run");
    assert_eq!(grid(&captures, &run_dir, &["--no-report"]).code, 0);
    let complete = run_pairs(&run_dir);

    // Simulate a kill: keep 3 records and half of the 4th.
    let results = run_dir.join("results.jsonl");
    let text = std::fs::read_to_string(&results).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let torn = format!(
        "{}\n{}",
        lines[..3].join("\n"),
        &lines[3][..lines[3].len() / 2]
    );
    std::fs::write(&results, torn).unwrap();

    let out = run(&["grid", "--resume", path_str(&run_dir), "--no-report"]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert!(
        out.stderr.contains("3 pairs already done"),
        "stderr: {}",
        out.stderr
    );
    assert_eq!(
        run_pairs(&run_dir),
        complete,
        "every pair exactly once after resume"
    );

    // Resuming a complete run does nothing.
    let out = run(&["grid", "--resume", path_str(&run_dir), "--no-report"]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert!(
        out.stderr.contains("0 records written"),
        "stderr: {}",
        out.stderr
    );
    assert_eq!(run_pairs(&run_dir), complete);
}

#[test]
fn existing_run_dir_is_not_overwritten() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let run_dir = root.path().join("run");
    assert_eq!(
        grid(&captures, &run_dir, &["--no-report", "--cells", "*_L02"]).code,
        0
    );
    let out = grid(&captures, &run_dir, &["--no-report"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--resume"), "stderr: {}", out.stderr);
}

#[test]
fn merged_shards_equal_a_single_run_and_mismatches_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let whole = root.path().join("whole");
    let shard0 = root.path().join("s0");
    let shard1 = root.path().join("s1");
    assert_eq!(grid(&captures, &whole, &["--no-report"]).code, 0);
    assert_eq!(
        grid(&captures, &shard0, &["--no-report", "--shard", "0/2"]).code,
        0
    );
    assert_eq!(
        grid(&captures, &shard1, &["--no-report", "--shard", "1/2"]).code,
        0
    );
    assert!(!run_pairs(&shard0).is_empty() && !run_pairs(&shard1).is_empty());

    let merged = root.path().join("merged");
    let out = run(&[
        "merge",
        path_str(&shard0),
        path_str(&shard1),
        "--out",
        path_str(&merged),
    ]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(run_pairs(&merged), run_pairs(&whole));

    // Overlapping shards are refused.
    let out = run(&[
        "merge",
        path_str(&shard0),
        path_str(&shard0),
        "--out",
        path_str(&root.path().join("dup")),
    ]);
    assert_eq!(out.code, 2, "stderr: {}", out.stderr);
    assert!(
        out.stderr.contains("appears in both"),
        "stderr: {}",
        out.stderr
    );

    // A shard measured on other inputs is refused.
    let manifest_path = shard1.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    manifest["capture_set_hash"] = serde_json::json!("0".repeat(64));
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    let out = run(&[
        "merge",
        path_str(&shard0),
        path_str(&shard1),
        "--out",
        path_str(&root.path().join("bad")),
    ]);
    assert_eq!(out.code, 2, "stderr: {}", out.stderr);
    assert_eq!(out.error_lines().len(), 1, "stderr: {}", out.stderr);
    assert!(
        out.stderr.contains("capture_set_hash"),
        "stderr: {}",
        out.stderr
    );
}

#[test]
fn aa_runs_the_arm_and_its_twin() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let run_dir = root.path().join("run");
    let out = grid(&captures, &run_dir, &["--aa", "cpu-ref"]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert!(
        out.stdout
            .contains("A/A noise floor (cpu-ref vs cpu-ref#2)"),
        "stdout: {}",
        out.stdout
    );
    let pairs = run_pairs(&run_dir);
    let arms: std::collections::BTreeSet<&str> = pairs.iter().map(|(_, a)| a.as_str()).collect();
    assert_eq!(
        arms.into_iter().collect::<Vec<_>>(),
        ["cpu-ref", "cpu-ref#2"]
    );
    assert_eq!(pairs.len(), 8);
}

#[test]
fn arms_lists_backends() {
    let out = run(&["arms"]);
    assert_eq!(out.code, 0);
    assert!(
        out.stdout.contains("| cpu-ref | cpu |") && out.stdout.contains("| radix | gpu |"),
        "{}",
        out.stdout
    );
    assert!(
        !out.stdout.contains("cpu-broken"),
        "test arm must stay hidden"
    );
}

/// The checked-in sample set, when present, must run as documented.
#[test]
fn sample_capture_set_runs_if_present() {
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("captures/sample");
    if !sample.join("manifest.json").exists() {
        eprintln!(
            "SKIP sample_capture_set_runs_if_present: {} does not exist yet",
            sample.display()
        );
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let run_dir = root.path().join("run");
    let out = grid(&sample, &run_dir, &["--limit", "2"]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(run_pairs(&run_dir).len(), 4);
}

#[test]
fn grid_file_selects_cells_of_the_capture_set() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    // A one-cell grid file naming the second cell of the set.
    let grid_file = root.path().join("one.csv");
    let c = one_cell_grid(&captures, 1, 0, &grid_file);
    let run_dir = root.path().join("run");
    let out = grid(
        &captures,
        &run_dir,
        &["--no-report", "--grid", path_str(&grid_file)],
    );
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let pairs = run_pairs(&run_dir);
    assert_eq!(pairs.len(), 4, "{pairs:?}");
    let id = c["id"].as_str().unwrap();
    assert!(
        pairs.iter().all(|(case, _)| case.starts_with(id)),
        "{pairs:?}"
    );
}

#[test]
fn version_names_the_commit_the_binary_was_built_from() {
    // Device logs print `--version` to say which binary ran (the tree copy
    // there may carry another git HEAD).
    let out = run(&["--version"]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let line = out.stdout.trim();
    assert!(
        line.starts_with(concat!("gvr-bench ", env!("CARGO_PKG_VERSION"), " (git "))
            && line.ends_with(')'),
        "{line}"
    );
}

/// A wrong arm's cases are named at the end of the run and in the report.
#[test]
fn inexact_cases_are_named_after_the_run_and_in_the_report() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let out = grid(
        &captures,
        &root.path().join("run"),
        &["--arms", "cpu-ref,cpu-broken", "--test-arms"],
    );
    let listed = out
        .stderr
        .lines()
        .skip_while(|l| !l.starts_with("inexact cases ("))
        .nth(1)
        .unwrap_or_else(|| panic!("no inexact list; stderr: {}", out.stderr));
    assert!(listed.contains(" cpu-broken "), "{listed}");
    assert!(!out.stderr.contains(" cpu-ref WRONG"), "{}", out.stderr);
    assert!(out.stdout.contains("### Inexact cases ("), "{}", out.stdout);
}

/// A capture with NaN in a row's valid prefix: the run says so on stderr.
#[test]
fn a_run_over_nan_rows_says_how_many() {
    use gvr_bench::capture::load::{write_cell, CaptureSet};
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let set = CaptureSet::open(&captures).unwrap();
    let entry = set.manifest.cells[0].clone();
    let mut cell = set.load_cell(&entry).unwrap();
    cell.logits[5] = f32::NAN;
    write_cell(&captures, &entry.file, &cell).unwrap();
    let out = grid(
        &captures,
        &root.path().join("run"),
        &["--cells", &entry.meta.id, "--no-report"],
    );
    let want = format!("cell {}: 1 NaN value(s) in 1 of", entry.meta.id);
    assert!(out.stderr.contains(&want), "stderr: {}", out.stderr);
}
