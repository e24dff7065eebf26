//! Bad input as a new user would produce it: one `error:` line (plus at most
//! one `hint:` line) naming the problem, and exit code 2.

use std::path::Path;

use crate::support::cli::*;

/// Run `grid` on a capture set and expect a one-line input error mentioning `needle`.
fn expect_input_error(captures: &Path, extra: &[&str], needle: &str) {
    let run_dir = captures.parent().unwrap().join("run");
    let mut args = vec![
        "grid",
        "--cpu",
        "--no-report",
        "--captures",
        path_str(captures),
        "--out",
        path_str(&run_dir),
        "--batches",
        "1",
    ];
    args.extend_from_slice(&FAST);
    args.extend_from_slice(extra);
    let out = run(&args);
    assert_eq!(
        out.code, 2,
        "want exit 2 for {needle}; stderr: {}",
        out.stderr
    );
    let lines = out.error_lines();
    assert!(lines[0].starts_with("error: "), "stderr: {}", out.stderr);
    assert!(
        lines.len() <= 2 && lines.iter().skip(1).all(|l| l.starts_with("hint: ")),
        "stderr: {}",
        out.stderr
    );
    assert!(
        lines[0].contains(needle),
        "want {needle:?} in {:?}",
        lines[0]
    );
    assert!(!out.stderr.contains("panicked"), "stderr: {}", out.stderr);
}

#[test]
fn missing_capture_dir() {
    let root = tempfile::tempdir().unwrap();
    expect_input_error(&root.path().join("nope"), &[], "nope");
}

#[test]
fn truncated_cell_file() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let cell = first_cell_file(&captures);
    let bytes = std::fs::read(&cell).unwrap();
    std::fs::write(&cell, &bytes[..bytes.len() / 2]).unwrap();
    expect_input_error(&captures, &[], cell.file_name().unwrap().to_str().unwrap());
}

#[test]
fn wrong_dtype() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let cell = first_cell_file(&captures);
    let mut bytes = std::fs::read(&cell).unwrap();
    // Relabel the f32 logits as i32: same size, so only the dtype is wrong.
    let (_, data_start) = safetensors_header(&bytes);
    let header = String::from_utf8(bytes[8..data_start].to_vec()).unwrap();
    let relabelled = header.replacen("\"F32\"", "\"I32\"", 1);
    assert_ne!(header, relabelled, "logits are f32 in the fixture");
    bytes[8..data_start].copy_from_slice(relabelled.as_bytes());
    std::fs::write(&cell, bytes).unwrap();
    expect_input_error(&captures, &[], "logits");
}

#[test]
fn k_300() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    edit_manifest(&captures, |c| c["k"] = serde_json::json!(300));
    expect_input_error(&captures, &[], "300");
}

#[test]
fn npad_not_a_multiple_of_64() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    edit_manifest(&captures, |c| c["npad"] = serde_json::json!(4100));
    expect_input_error(&captures, &[], "npad");
}

#[test]
fn hints_out_of_range() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let cell = first_cell_file(&captures);
    let mut bytes = std::fs::read(&cell).unwrap();
    let (header, data_start) = safetensors_header(&bytes);
    let begin = header["hints"]["data_offsets"][0].as_u64().unwrap() as usize + data_start;
    bytes[begin..begin + 4].copy_from_slice(&999_999_999i32.to_le_bytes());
    std::fs::write(&cell, bytes).unwrap();
    expect_input_error(&captures, &[], "hints");
}

#[test]
fn unknown_arm_lists_known_arms() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    expect_input_error(&captures, &["--arms", "cpu-ref,radx"], "radx");
    let out = run(&[
        "grid",
        "--cpu",
        "--captures",
        path_str(&captures),
        "--arms",
        "radx",
    ]);
    assert!(
        out.stderr.contains("cpu-ref, cpu-ss, radix"),
        "stderr: {}",
        out.stderr
    );
}

#[test]
fn bad_shard() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    expect_input_error(&captures, &["--shard", "3/2"], "--shard");
    expect_input_error(&captures, &["--shard", "x"], "--shard");
}

#[test]
fn gpu_arm_without_gpu() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    expect_input_error(&captures, &["--arms", "radix"], "GPU");
}

#[test]
fn grid_file_with_cells_missing_from_the_captures() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let grid = Path::new(env!("CARGO_MANIFEST_DIR")).join("grids/smoke.csv");
    expect_input_error(
        &captures,
        &["--grid", path_str(&grid)],
        "not in the capture set",
    );
}

#[test]
fn out_that_names_a_file() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    // expect_input_error's --out is <captures' parent>/run: make it a file.
    std::fs::write(root.path().join("run"), b"not a run").unwrap();
    expect_input_error(&captures, &[], "--out: exists and is not a directory");
}

#[test]
fn resume_of_a_directory_that_is_not_a_run() {
    let root = tempfile::tempdir().unwrap();
    let out = run(&["grid", "--resume", path_str(root.path())]);
    assert_eq!(out.code, 2, "stderr: {}", out.stderr);
    assert_eq!(out.error_lines().len(), 1, "stderr: {}", out.stderr);
}

#[test]
fn misspelt_flag_is_one_error_line_and_a_hint() {
    let out = run(&["grid", "--arm", "cpu-ref"]);
    assert_eq!(out.code, 2, "stderr: {}", out.stderr);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "stderr: {}", out.stderr);
    assert!(
        lines[0].starts_with("error: ") && lines[1].contains("--arms"),
        "{lines:?}"
    );
}

#[test]
fn merge_of_a_missing_run() {
    let root = tempfile::tempdir().unwrap();
    let missing = root.path().join("nope");
    let out = run(&[
        "merge",
        path_str(&missing),
        "--out",
        path_str(&root.path().join("m")),
    ]);
    assert_eq!(out.code, 2, "stderr: {}", out.stderr);
    assert_eq!(out.error_lines().len(), 1, "stderr: {}", out.stderr);
    assert!(out.stderr.contains("nope"), "stderr: {}", out.stderr);
}

#[test]
fn phases_refuses_arms_without_marks_and_runs_only_on_a_gpu() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let out = run(&[
        "phases",
        "--captures",
        path_str(&captures),
        "--arms",
        "ss,radix",
    ]);
    assert_eq!(out.code, 2, "stderr: {}", out.stderr);
    assert!(
        out.error_lines()[0].contains("`radix` has no phase marks"),
        "{}",
        out.stderr
    );
    let out = run(&["phases", "--captures", path_str(&captures), "--reps", "0"]);
    assert_eq!(out.code, 2, "stderr: {}", out.stderr);
    // No GPU here (CI): exit 3, one line, and no `--cpu` hint (there is no CPU mode).
    let out = run(&[
        "phases",
        "--captures",
        path_str(&captures),
        "--batches",
        "1",
        "--limit",
        "1",
    ]);
    if out.code == 3 {
        let lines = out.error_lines();
        assert_eq!(lines.len(), 1, "stderr: {}", out.stderr);
        assert!(
            lines[0].contains("phases reads clock stamps"),
            "{}",
            out.stderr
        );
    } else {
        assert_eq!(
            out.code, 0,
            "with a GPU the probe runs; stderr: {}",
            out.stderr
        );
    }
    assert!(!out.stderr.contains("panicked"), "stderr: {}", out.stderr);
}

/// `gpu info` has no `--cpu`, so its no-GPU error must not suggest it.
#[test]
fn gpu_info_without_a_gpu_does_not_suggest_cpu() {
    let out = run(&["gpu", "info"]);
    if out.code == 0 {
        return; // a GPU is here: nothing to check
    }
    assert!(!out.stderr.contains("--cpu"), "stderr: {}", out.stderr);
    assert!(out.stderr.contains("error: "), "stderr: {}", out.stderr);
}

#[test]
fn resume_of_a_missing_directory_says_no_run_there() {
    let root = tempfile::tempdir().unwrap();
    let missing = root.path().join("nowhere");
    let out = run(&["grid", "--resume", path_str(&missing)]);
    assert_eq!(out.code, 2, "stderr: {}", out.stderr);
    assert!(out.stderr.contains("no run at"), "stderr: {}", out.stderr);
    assert!(!missing.exists());
}

#[test]
fn resume_of_a_capture_set_points_at_captures() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let out = run(&["grid", "--resume", path_str(&captures)]);
    assert_eq!(out.code, 2, "stderr: {}", out.stderr);
    let error = out.error_lines().join("\n");
    assert!(error.contains("is not a run directory"), "{error}");
    assert!(error.contains("did you mean --captures?"), "{error}");
}

#[test]
fn resume_with_selection_flags_is_refused() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(
        root.path().join("manifest.json"),
        r#"{"tool_version": "0.1.0"}"#,
    )
    .unwrap();
    let out = run(&["grid", "--resume", path_str(root.path()), "--batches", "4"]);
    assert_eq!(out.code, 2, "stderr: {}", out.stderr);
    let error = out.error_lines().join("\n");
    assert!(
        error.contains("--resume takes the run's own selection"),
        "{error}"
    );
}

/// A start that fails before its first record (every cell file damaged)
/// leaves no run directory, so the same command can be rerun.
#[test]
fn a_failed_start_leaves_no_run_directory() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    for entry in std::fs::read_dir(&captures).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "safetensors") {
            let bytes = std::fs::read(&path).unwrap();
            std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        }
    }
    let run_dir = root.path().join("run");
    let mut args = vec![
        "grid",
        "--cpu",
        "--no-report",
        "--captures",
        path_str(&captures),
        "--out",
        path_str(&run_dir),
        "--batches",
        "1",
    ];
    args.extend_from_slice(&FAST);
    let out = run(&args);
    assert_ne!(out.code, 0, "stderr: {}", out.stderr);
    assert!(
        !run_dir.exists(),
        "a failed start left {}",
        run_dir.display()
    );
}

#[test]
fn manifest_schema_errors_name_the_field_path() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    edit_manifest(&captures, |c| {
        c.as_object_mut().unwrap().remove("npad");
    });
    expect_input_error(&captures, &[], "cells[0].npad: missing field");

    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    edit_manifest(&captures, |c| c["steps"] = serde_json::json!("many"));
    expect_input_error(&captures, &[], "cells[0].steps: invalid value");
}

#[test]
fn unknown_manifest_keys_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    edit_manifest(&captures, |c| c["npadd"] = serde_json::json!(4096));
    expect_input_error(&captures, &[], "cells[0].npadd: unknown cell key");
}

#[test]
fn grid_file_whose_n_disagrees_with_the_capture_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let grid = root.path().join("grid.csv");
    let c = one_cell_grid(&captures, 0, 64, &grid);
    let captured_n = c["n"].as_u64().unwrap();
    expect_input_error(
        &captures,
        &["--grid", path_str(&grid)],
        &format!("the grid says n = {} but the capture set", captured_n + 64),
    );
}
