//! Knobs and experiments as a user meets them: `gvr-bench knobs` lists the
//! table, a bad `--knob` or `--tune` is a usage error (exit 2) before any
//! case runs, and `gvr-bench experiment` runs a file and prints its A/B table.

use crate::support::cli::*;

#[test]
fn knobs_lists_every_kind() {
    let out = run(&["knobs"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for word in [
        "SS_L2_DIST",
        "production",
        "tuning",
        "diagnostic",
        "reg.entry",
    ] {
        assert!(out.stdout.contains(word), "{word} missing:\n{}", out.stdout);
    }
}

#[test]
fn a_bad_knob_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    for (knob, says) in [
        ("SS_L2_DIST=99", "[0, 8]"),
        ("SS_WAVE_SMS=8", "set by the plan"),
        ("NOPE=1", "not a knob"),
        ("SS_L2_DIST", "NAME=VALUE"),
    ] {
        let out = run(&["grid", "--cpu", "--knob", knob, "--out", path_str(&run_dir)]);
        assert_eq!(out.code, 2, "{knob}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{knob}: {}", out.stderr);
        assert!(
            !run_dir.join("results.jsonl").exists(),
            "{knob}: a run started"
        );
    }
    let tune = dir.path().join("t.toml");
    std::fs::write(&tune, "SS_L2_DIST = \"far\"\n").unwrap();
    let out = run(&["certify", "--cpu", "--tune", path_str(&tune)]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("t.toml"), "{}", out.stderr);
}

#[test]
fn an_experiment_runs_its_variants_and_prints_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/cpu_smoke.toml");
    let out = run(&["experiment", file, "--cpu", "--out", path_str(&run_dir)]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("| cpu-ref | b |"), "{}", out.stdout);
    let md = std::fs::read_to_string(run_dir.join("experiment.md")).unwrap();
    assert!(md.contains("speed vs base"), "{md}");
    let results = std::fs::read_to_string(run_dir.join("results.jsonl")).unwrap();
    assert!(results.contains("\"cpu-ref@a\"") && results.contains("\"cpu-ref@b\""));

    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "arms = [\"cpu-ref\"]\n[variants.a]\nSS_L2_DIST = 99\n",
    )
    .unwrap();
    let out = run(&["experiment", path_str(&bad), "--cpu"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("bad.toml"), "{}", out.stderr);

    // The floor needs a GPU: refused before any case, no run directory left.
    let floor = dir.path().join("floor.toml");
    let smoke = std::fs::read_to_string(file).unwrap();
    std::fs::write(&floor, format!("floor = true\n{smoke}")).unwrap();
    let floor_run = dir.path().join("floor-run");
    let out = run(&[
        "experiment",
        path_str(&floor),
        "--cpu",
        "--out",
        path_str(&floor_run),
    ]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("`floor = true`"), "{}", out.stderr);
    assert!(
        !floor_run.exists(),
        "a refused experiment left its directory"
    );
}
