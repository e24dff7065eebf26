//! scripts/device_lib.sh, the sourced prologue of the device call scripts: the flush size by
//! card, `step` (exit status and time to the call log, never aborting the call), `ab` (an
//! experiment as a step, its table kept) and `pack`
//! (missing paths skipped), `finish_out` (no more than eight files under $OUT, none lost).
//! Sourcing must run nothing. Needs bash; without it the test prints
//! SKIPPED and returns.

use std::path::Path;
use std::process::Command;

fn bash(script: &str, out: &Path) -> Option<std::process::Output> {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/device_lib.sh");
    match Command::new("bash")
        .arg("-c")
        .arg(format!("source {} && {script}", lib.display()))
        .env("OUT", out)
        .output()
    {
        Ok(o) => Some(o),
        Err(e) => {
            println!("SKIPPED: bash not runnable ({e})");
            None
        }
    }
}

#[test]
fn the_lib_picks_the_flush_logs_each_step_and_packs_what_exists() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path();
    // Sourcing alone writes nothing.
    let Some(o) = bash("true", out) else { return };
    assert!(o.status.success(), "{o:?}");
    assert_eq!(std::fs::read_dir(out).unwrap().count(), 0);
    let Some(o) = bash(
        "gvr_flush_mib 'NVIDIA H200, GPU-1, 580'; gvr_flush_mib 'NVIDIA H100 80GB HBM3, GPU-2, 580'",
        out,
    ) else {
        return;
    };
    assert_eq!(String::from_utf8_lossy(&o.stdout), "512\n128\n");
    // A failing step is logged with its status and the call goes on.
    let script = format!(
        "L=$OUT/call.log; step failing 5 false; step passing 5 true; mkdir -p /tmp/gvr-device-lib-test-{pid}; \
         echo x > /tmp/gvr-device-lib-test-{pid}/a; pack bundle gvr-device-lib-test-{pid} gvr-device-lib-test-missing-{pid}; \
         tar tzf $OUT/bundle.tgz; rm -rf /tmp/gvr-device-lib-test-{pid}",
        pid = std::process::id()
    );
    let Some(o) = bash(&script, out) else { return };
    assert!(o.status.success(), "{o:?}");
    let log = std::fs::read_to_string(out.join("call.log")).expect("call log");
    assert!(log.contains("failing rc=1 at "), "{log}");
    assert!(log.contains("passing rc=0 at "), "{log}");
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(
        listed.contains(&format!("gvr-device-lib-test-{}/a", std::process::id())),
        "{listed}"
    );
    assert!(!listed.contains("missing"), "{listed}");
}

#[test]
fn ab_runs_the_experiment_as_a_step_and_keeps_its_table() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    // A stand-in binary: writes the table where `--out` says and shows its arguments.
    let fake = dir.path().join("fake-bench");
    std::fs::write(
        &fake,
        "#!/usr/bin/env bash\necho \"$@\"\nwhile [ $# -gt 0 ]; do [ \"$1\" = --out ] && d=$2; shift; done\n\
         mkdir -p $d; printf '| ss | packed | 600 | 1.009 | 0.948 | 1.072 |\\n| ss | packed (b=1) | 7 | 1.0 | 1.0 | 1.0 |\\n' > $d/experiment.md\n",
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&fake)
        .status()
        .unwrap();
    let name = format!("gvr-ab-test-{}", std::process::id());
    let script = format!(
        "L=$OUT/call.log; B={}; FLUSH=128; ab {name} experiments/x.toml 5; rm -rf /tmp/x/{name}",
        fake.display()
    );
    let Some(o) = bash(&script, &out) else { return };
    assert!(o.status.success(), "{o:?}");
    let log = std::fs::read_to_string(out.join("call.log")).expect("call log");
    assert!(log.contains(&format!("{name} rc=0 at ")), "{log}");
    assert!(log.contains("| ss | packed | 600 | 1.009 |"), "{log}");
    assert!(!log.contains("(b=1)"), "only the whole-set rows: {log}");
    let table = std::fs::read_to_string(out.join(format!("{name}-experiment.md"))).expect("table");
    assert!(table.contains("(b=1)"), "{table}");
    let args = std::fs::read_to_string(format!("/tmp/logs/{name}.log")).expect("step log");
    assert!(
        args.contains(&format!(
            "experiment experiments/x.toml --flush-mib 128 --out /tmp/x/{name}"
        )),
        "{args}"
    );
    let _ = std::fs::remove_file(format!("/tmp/logs/{name}.log"));
}

#[test]
fn finish_out_keeps_at_most_eight_files_and_loses_none() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path();
    // Eight files: left as they are.
    let Some(o) = bash(
        "L=$OUT/call.log; echo log > $L; for i in 1 2 3 4 5 6 7; do echo $i > $OUT/f$i.md; done; finish_out",
        out,
    ) else {
        return;
    };
    assert!(o.status.success(), "{o:?}");
    assert_eq!(std::fs::read_dir(out).unwrap().count(), 8);
    assert!(!out.join("rest.tgz").exists());
    // Eleven (one in a folder): the call log and rest.tgz with the ten others.
    let Some(o) = bash(
        "L=$OUT/call.log; echo 8 > $OUT/f8.md; mkdir -p $OUT/sub; echo 9 > $OUT/sub/f9.md; echo 10 > $OUT/f10.md; \
         finish_out; tar tzf $OUT/rest.tgz | sort",
        out,
    ) else {
        return;
    };
    assert!(o.status.success(), "{o:?}");
    let listed = String::from_utf8_lossy(&o.stdout);
    for name in ["./f1.md", "./f7.md", "./f8.md", "./f10.md", "./sub/f9.md"] {
        assert!(listed.lines().any(|l| l == name), "{name} not in {listed}");
    }
    assert!(!listed.lines().any(|l| l == "./call.log"), "{listed}");
    let mut files: Vec<String> = walk(out);
    files.sort();
    assert_eq!(files, ["call.log", "rest.tgz"]);
    let log = std::fs::read_to_string(out.join("call.log")).expect("call log");
    assert!(log.contains("finish_out: 11 files"), "{log}");
}

/// Plain files under `dir`, relative paths.
fn walk(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        if path.is_dir() {
            for f in walk(&path) {
                files.push(format!("{}/{f}", entry.file_name().to_string_lossy()));
            }
        } else {
            files.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    files
}
