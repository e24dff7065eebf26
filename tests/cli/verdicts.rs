//! `regress`, `aa` and `merge` refuse (exit 2, saying why) to compare runs
//! that cannot be compared, and still catch a real regression.

use std::path::{Path, PathBuf};

use crate::support::cli::*;

/// A quick CPU run of `captures` into `root/name` with extra flags.
fn cpu_run(root: &Path, captures: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let dir = root.join(name);
    let mut args = vec!["grid", "--cpu", "--no-report"];
    if !extra.contains(&"--batches") {
        args.extend(["--batches", "1"]);
    }
    args.extend([
        "--warmup",
        "1",
        "--warm-reps",
        "1",
        "--captures",
        path_str(captures),
        "--out",
        path_str(&dir),
    ]);
    if !extra.contains(&"--cold-reps") {
        args.extend(["--cold-reps", "2"]);
    }
    args.extend(extra);
    let out = run(&args);
    assert_eq!(out.code, 0, "{name}: {}", out.stderr);
    dir
}

fn regress(a: &Path, b: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "regress",
        "--baseline",
        path_str(a),
        "--current",
        path_str(b),
    ];
    args.extend(extra);
    run(&args)
}

fn refused(out: &Output, why: &str) {
    assert_eq!(
        out.code, 2,
        "stdout: {}\nstderr: {}",
        out.stdout, out.stderr
    );
    assert!(
        out.stderr.contains(why),
        "expected {why:?} in: {}",
        out.stderr
    );
    assert!(!out.stdout.contains("Verdict"), "{}", out.stdout);
}

/// Rewrite a run's results, scaling the cold reps of `arm` by `factor`.
fn slow_down(run: &Path, arm: &str, factor: f64) {
    let path = run.join("results.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            if v["arm"] == arm {
                let reps: Vec<f64> = v["cold_us"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap() * factor + 10.0)
                    .collect();
                v["cold_us"] = serde_json::json!(reps);
            }
            v.to_string()
        })
        .collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
}

fn drop_arm(run: &Path, arm: &str) {
    let path = run.join("results.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains(&format!("\"arm\":\"{arm}\"")))
        .collect();
    std::fs::write(&path, kept.join("\n") + "\n").unwrap();
}

fn copy_run(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for f in ["manifest.json", "results.jsonl"] {
        std::fs::copy(from.join(f), to.join(f)).unwrap();
    }
}

#[test]
fn regress_refuses_what_it_cannot_compare_and_catches_a_regression() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let captures = capture_set(root);
    let cells: Vec<String> = {
        let m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(captures.join("manifest.json")).unwrap())
                .unwrap();
        m["cells"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_string())
            .collect()
    };
    let base = cpu_run(root, &captures, "base", &[]);

    // Nothing in common: refused, not "Compared 0 ... OK".
    let first = cpu_run(root, &captures, "first", &["--cells", &cells[0]]);
    let second = cpu_run(root, &captures, "second", &["--cells", &cells[1]]);
    refused(&regress(&first, &second, &[]), "0 cases in common");
    // Half in common is below the default minimum, accepted at 0.5.
    refused(&regress(&base, &first, &[]), "--min-common");
    // (1 or 0: separate CPU runs' times differ by more than GPU noise.)
    assert_ne!(regress(&base, &first, &["--min-common", "0.5"]).code, 2);

    // Another protocol.
    let reps = cpu_run(root, &captures, "reps", &["--cold-reps", "3"]);
    refused(&regress(&base, &reps, &[]), "protocol");

    // Another rows mode.
    let rows = cpu_run(root, &captures, "rows", &["--rows", "independent"]);
    refused(&regress(&base, &rows, &[]), "rows mode");

    // An arm missing from the current run is named.
    let one_arm = root.join("one-arm");
    copy_run(&base, &one_arm);
    drop_arm(&one_arm, "cpu-ss");
    refused(
        &regress(&base, &one_arm, &[]),
        "missing from the current run: cpu-ss",
    );
    assert_eq!(regress(&base, &one_arm, &["--arm", "cpu-ref"]).code, 0);

    // Another capture set (a cell's content).
    let other_caps = root.join("other-caps");
    copy_run(&base, &other_caps);
    let manifest = other_caps.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    assert_eq!(m["capture_content_hash"].as_str().unwrap().len(), 64);
    m["capture_content_hash"] = serde_json::json!("0".repeat(64));
    std::fs::write(&manifest, m.to_string()).unwrap();
    refused(&regress(&base, &other_caps, &[]), "capture_content_hash");

    // A real regression: exit 1, the arm named.
    let slow = root.join("slow");
    copy_run(&base, &slow);
    slow_down(&slow, "cpu-ss", 3.0);
    let out = regress(&base, &slow, &[]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("cpu-ss"), "{}", out.stdout);
    assert_eq!(regress(&base, &base, &[]).code, 0);
}

#[test]
fn aa_refuses_what_it_cannot_compare_and_takes_one_run_alone() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let captures = capture_set(root);
    let twin = cpu_run(root, &captures, "twin", &["--aa", "cpu-ref"]);
    // `aa RUN` alone: every arm against its twin.
    let out = run(&["aa", path_str(&twin)]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("| 2 |"), "{}", out.stdout);

    let plain = cpu_run(root, &captures, "plain", &[]);
    let out = run(&["aa", path_str(&plain)]);
    refused(&out, "has none");
    // Two runs with other arm lists / protocols.
    refused(
        &run(&["aa", path_str(&plain), path_str(&twin)]),
        "arm lists differ",
    );
    let reps = cpu_run(root, &captures, "reps", &["--cold-reps", "3"]);
    refused(&run(&["aa", path_str(&plain), path_str(&reps)]), "protocol");
    // Two runs of one command pool whatever order their records list the arms
    // in (the order cases finished in: under load, runs differed, 2026-12-07).
    let a = cpu_run(root, &captures, "a", &[]);
    let results = a.join("results.jsonl");
    let text = std::fs::read_to_string(&results).unwrap();
    let first_arm = |line: &str| {
        serde_json::from_str::<serde_json::Value>(line).unwrap()["arm"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let plain_text = std::fs::read_to_string(plain.join("results.jsonl")).unwrap();
    let lead = first_arm(plain_text.lines().next().unwrap());
    let (other, same): (Vec<&str>, Vec<&str>) = text.lines().partition(|l| first_arm(l) != lead);
    assert!(!other.is_empty() && !same.is_empty(), "{text}");
    std::fs::write(&results, [other, same].concat().join("\n") + "\n").unwrap();
    let out = run(&["aa", path_str(&plain), path_str(&a)]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
}

#[test]
fn merge_refuses_an_unsharded_run_beside_a_shard() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let captures = capture_set(root);
    let s0 = cpu_run(root, &captures, "s0", &["--shard", "0/2"]);
    let plain = cpu_run(root, &captures, "plain", &["--batches", "16"]);
    let out_dir = root.join("merged");
    let out = run(&[
        "merge",
        path_str(&s0),
        path_str(&plain),
        "--out",
        path_str(&out_dir),
    ]);
    refused(&out, "not sharded");
    assert!(!out_dir.exists());
    let s1 = cpu_run(root, &captures, "s1", &["--shard", "1/2"]);
    let out = run(&[
        "merge",
        path_str(&s0),
        path_str(&s1),
        "--out",
        path_str(&out_dir),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}
