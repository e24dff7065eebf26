//! scripts/phase_table.py reads the records `gvr-bench phases` writes: two
//! records serialised exactly as the command streams them (phases.jsonl),
//! grouped into one family × N × B row with the median critical-CTA µs per
//! phase, joined with a floor run's times. Needs python3 (standard library
//! only); without it the test prints SKIPPED and returns.

use gvr_bench::gpu::probe::{parse_stamps, summarize, PROBE_SLOTS};
use gvr_bench::run::phases::{ClockSource, PhaseRecord};

fn record(case: &str, pass_cycles: u64) -> PhaseRecord {
    let mut raw = [0u64; PROBE_SLOTS];
    raw[0] = 1_000; // entry
    raw[1] = 3_000; // length: 1 µs at 2 GHz
    raw[4] = 3_000 + pass_cycles; // pass
    raw[8] = 5_000 + pass_cycles; // exit: finish 1 µs
    raw[12] = 1;
    raw[13] = 100;
    raw[14] = 4_100 + pass_cycles / 2;
    PhaseRecord {
        case: case.into(),
        n: 65_551,
        k: 2048,
        b: 1,
        arm: "ss".into(),
        variant: Some("clus/cs8/u2".into()),
        exact: "exact".into(),
        cold_us: vec![10.0],
        clock_ghz: 2.0,
        clock_source: ClockSource::Measured,
        launches: vec![summarize(&parse_stamps(&raw)).unwrap()],
        error: None,
    }
}

#[test]
fn the_table_groups_the_commands_records() {
    if !crate::support::script::python3_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let phases = dir.path().join("phases");
    std::fs::create_dir_all(&phases).unwrap();
    let lines: Vec<String> = [record("a@b1", 4_000), record("b@b1", 8_000)]
        .iter()
        .map(|r| serde_json::to_string(r).unwrap())
        .collect();
    std::fs::write(phases.join("phases.jsonl"), lines.join("\n") + "\n").unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(
        run.join("floor.jsonl"),
        "{\"case\":\"a@b1\",\"cold_us\":[3.0]}\n{\"case\":\"b@b1\",\"cold_us\":[5.0]}\n",
    )
    .unwrap();
    std::fs::write(
        run.join("results.jsonl"),
        "{\"case\":\"a@b1\",\"arm\":\"ss\",\"cold_us\":[9.0],\"exact\":{\"status\":\"exact\"}}\n",
    )
    .unwrap();
    let text = crate::support::script::stdout_ok(
        crate::support::script::script("phase_table.py")
            .arg(&phases)
            .arg("--floor")
            .arg(&run),
    );
    // Pass: 2 and 4 µs → median 3; spans 6 and 8 µs → 7; floor 3 and 5 → 4.
    assert!(
        text.contains("| ss | clus | N<=64K | B=1 | 2 | 10.00 | 7.00 | 9.00 | 4.00 | 1.00 | – | – | – | 3.00 | – | – | – | 1.00 |"),
        "{text}"
    );
}
