//! scripts/floor_targets.py: issue 48's bands of time / floor from a run's raw records.
//! Needs python3 (standard library only); without it the test prints SKIPPED.

use std::path::Path;

fn write(run: &Path) {
    std::fs::create_dir_all(run).unwrap();
    // (case, model, n, b, arm time µs, floor time µs): ratios 2.0, 1.5 and 1.2; the
    // inexact record and the case without a floor are left out.
    let cases = [
        ("a@b1", "v32", 16_399, 1, 8.0, 4.0),
        ("b@b1", "flash", 2051, 1, 6.0, 4.0),
        ("c@b512", "v32", 4111, 512, 60.0, 50.0),
    ];
    let mut results = Vec::new();
    let mut floors = Vec::new();
    for (case, model, n, b, us, floor) in cases {
        results.push(format!(
            "{{\"case\":\"{case}\",\"model\":\"{model}\",\"n\":{n},\"b\":{b},\"arm\":\"ss@route\",\
             \"cold_us\":[{us},{us}],\"exact\":{{\"status\":\"exact\"}}}}"
        ));
        floors.push(format!("{{\"case\":\"{case}\",\"cold_us\":[{floor}]}}"));
    }
    results.push(
        "{\"case\":\"a@b1\",\"model\":\"v32\",\"n\":16399,\"b\":1,\"arm\":\"ss@bad\",\
         \"cold_us\":[1.0],\"exact\":{\"status\":\"inexact\"}}"
            .to_string(),
    );
    results.push(
        "{\"case\":\"d@b1\",\"model\":\"v32\",\"n\":16399,\"b\":1,\"arm\":\"ss@route\",\
         \"cold_us\":[1.0],\"exact\":{\"status\":\"exact\"}}"
            .to_string(),
    );
    std::fs::write(run.join("results.jsonl"), results.join("\n") + "\n").unwrap();
    std::fs::write(run.join("floor.jsonl"), floors.join("\n") + "\n").unwrap();
}

#[test]
fn the_bands_are_geometric_means_of_exact_cases_with_a_floor() {
    if !crate::support::script::python3_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write(dir.path());
    let text = crate::support::script::stdout_ok(
        crate::support::script::script("floor_targets.py").arg(dir.path()),
    );
    // all: (2.0 · 1.5 · 1.2)^(1/3) = 1.533; B 1: sqrt(3) = 1.732.
    assert!(text.contains("ss@route: 3 cases, all 1.533"), "{text}");
    assert!(text.contains("by B 1:1.732 512:1.200"), "{text}");
    assert!(
        text.contains("v32 N 8-32K 2.000 (1 cases), B >= 512 1.200 (1 cases)"),
        "{text}"
    );
    assert!(
        text.contains("B = 1 median 7.00 us, floor 4.00 us"),
        "{text}"
    );
    assert!(!text.contains("ss@bad"), "{text}");
}
