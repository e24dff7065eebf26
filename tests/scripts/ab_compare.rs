//! scripts/ab_compare.py: two arms of one run compare directly (no radix
//! needed), across runs each case is normalised by its own run's radix.
//! Needs python3 (standard library only); without it the test prints SKIPPED.

use std::path::Path;

fn write(run: &Path, rows: &[(&str, &str, f64)]) {
    std::fs::create_dir_all(run).unwrap();
    let lines: Vec<String> = rows
        .iter()
        .map(|(case, arm, us)| {
            format!(
                "{{\"case\":\"{case}\",\"arm\":\"{arm}\",\"k\":2048,\"b\":1,\"variant\":\"m1024R8\",\
                 \"cold_us\":[{us}],\"exact\":{{\"status\":\"exact\"}}}}"
            )
        })
        .collect();
    std::fs::write(run.join("results.jsonl"), lines.join("\n") + "\n").unwrap();
}

fn compare(root: &Path, spec: &str) -> String {
    crate::support::script::stdout_ok(
        crate::support::script::script("ab_compare.py")
            .args(["--by", "k,variant"])
            .arg(root)
            .arg(spec),
    )
}

#[test]
fn arms_of_one_run_compare_directly_and_runs_through_radix() {
    if !crate::support::script::python3_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Same run, no radix: c1 10 vs 8 µs (1.25), c2 20 vs 40 µs (0.5) → geomean 0.791.
    write(
        &dir.path().join("one"),
        &[
            ("c1", "ss", 10.0),
            ("c1", "ss-regclus", 8.0),
            ("c2", "ss", 20.0),
            ("c2", "ss-regclus", 40.0),
        ],
    );
    let text = compare(dir.path(), "one:one:ss/ss-regclus");
    assert!(
        text.contains("speed vs one 0.791 (min 0.500, max 1.250)"),
        "{text}"
    );
    assert!(
        text.contains("2048 m1024R8") && text.contains("n=2"),
        "{text}"
    );
    // Two runs: ss 10 µs against radix 20 in the base, 5 against 20 in the
    // candidate → 2.000; a run without radix contributes no case.
    write(
        &dir.path().join("a"),
        &[("c1", "radix", 20.0), ("c1", "ss", 10.0)],
    );
    write(
        &dir.path().join("b"),
        &[("c1", "radix", 20.0), ("c1", "ss", 5.0)],
    );
    let text = compare(dir.path(), "a:b:ss");
    assert!(text.contains("speed vs a 2.000"), "{text}");
}
