//! `gvr-bench merge`: combine shard runs into one run directory. Shards must
//! have been measured by the same binary, kernels and capture set under the
//! same protocol and rows mode, and may not overlap.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::env_manifest::EnvManifest;
use crate::error::{GvrError, Result};
use crate::floor::{read_floor_records, FloorWriter};
use crate::record::results::{run_records, ResultsWriter, RESULTS_FILE};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeOutcome {
    pub records: usize,
    pub cases: usize,
    /// Latency-floor records (`grid --floor` shards).
    pub floors: usize,
}

pub fn merge(runs: &[PathBuf], out: &Path) -> Result<MergeOutcome> {
    if runs.is_empty() {
        return Err(GvrError::Usage(
            "merge needs at least one run directory".into(),
        ));
    }
    let manifests = runs
        .iter()
        .map(|run| {
            if !run.is_dir() {
                return Err(GvrError::input(run, "run", "no such run directory"));
            }
            EnvManifest::read(run)
        })
        .collect::<Result<Vec<_>>>()?;
    let first = &manifests[0];
    for (run, manifest) in runs.iter().zip(&manifests).skip(1) {
        let conflict = first.merge_conflict(manifest).err().or_else(|| {
            if first.rows_mode != manifest.rows_mode {
                Some(format!(
                    "rows mode differs ({:?} vs {:?})",
                    first.rows_mode, manifest.rows_mode
                ))
            } else if first.protocol != manifest.protocol {
                Some("measurement protocol differs".to_string())
            } else if arms_differ(first, manifest) {
                Some(format!(
                    "arm lists differ ({} vs {})",
                    first.notes["arms"], manifest.notes["arms"]
                ))
            } else if let Some(why) = shard_conflict(first, manifest) {
                Some(why)
            } else if first.notes.get("floor") != manifest.notes.get("floor") {
                Some(
                    "one shard measured the latency floor (--floor), the other did not".to_string(),
                )
            } else {
                None
            }
        });
        if let Some(why) = conflict {
            return Err(GvrError::Usage(format!(
                "cannot merge {} with {}: {why}",
                runs[0].display(),
                run.display()
            )));
        }
    }

    // Read everything before creating the output so a refusal leaves no debris.
    let mut owner: HashMap<(String, String), &Path> = HashMap::new();
    let mut records = Vec::new();
    for run in runs {
        for record in run_records(run)? {
            let key = (record.case.clone(), record.arm.clone());
            if let Some(previous) = owner.insert(key, run) {
                return Err(GvrError::Usage(format!(
                    "case {} arm {} appears in both {} and {}; shards must not overlap",
                    record.case,
                    record.arm,
                    previous.display(),
                    run.display()
                )));
            }
            records.push(record);
        }
    }

    let mut floor_owner: HashMap<String, &Path> = HashMap::new();
    let mut floors = Vec::new();
    for run in runs {
        for floor in read_floor_records(run)? {
            if let Some(previous) = floor_owner.insert(floor.case.clone(), run) {
                return Err(GvrError::Usage(format!(
                    "the floor of case {} appears in both {} and {}; shards must not overlap",
                    floor.case,
                    previous.display(),
                    run.display()
                )));
            }
            floors.push(floor);
        }
    }

    if out.join(RESULTS_FILE).exists() {
        return Err(GvrError::input(
            out,
            RESULTS_FILE,
            "output run directory already has results",
        ));
    }
    super::create_out_dir(out)?;
    let mut writer = ResultsWriter::open(out)?;
    for record in &records {
        writer.append(record)?;
    }
    if !floors.is_empty() {
        let mut writer = FloorWriter::open(out)?;
        for floor in &floors {
            writer.append(floor)?;
        }
    }

    let mut merged = first.clone();
    merged.started_utc = manifests
        .iter()
        .map(|m| m.started_utc.clone())
        .min()
        .unwrap_or_default();
    merged.finished_utc = manifests
        .iter()
        .filter_map(|m| m.finished_utc.clone())
        .max();
    let mut hosts: Vec<&str> = manifests.iter().map(|m| m.host.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    merged.host = hosts.join(",");
    for m in &manifests[1..] {
        merged.timing_methods.extend(m.timing_methods.clone());
    }
    // The merged run is every shard, not the first one.
    let shard_specs: Vec<serde_json::Value> = manifests
        .iter()
        .filter_map(|m| m.notes.get("shard").cloned())
        .collect();
    merged.notes.remove("shard");
    if !shard_specs.is_empty() {
        merged
            .notes
            .insert("shards".into(), serde_json::json!(shard_specs));
    }
    merged.notes.insert(
        "merged_from".into(),
        serde_json::json!(runs
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()),
    );
    merged.write(out)?;

    let mut cases: Vec<&str> = records.iter().map(|r| r.case.as_str()).collect();
    cases.sort_unstable();
    cases.dedup();
    Ok(MergeOutcome {
        records: records.len(),
        cases: cases.len(),
        floors: floors.len(),
    })
}

/// Shards must be shards of one selection: all sharded with one shard count
/// (or none sharded), over the same selection (when both recorded it).
fn shard_conflict(a: &EnvManifest, b: &EnvManifest) -> Option<String> {
    let count = |m: &EnvManifest| {
        m.notes
            .get("shard")
            .and_then(|v| v.as_str())
            .map(|s| s.split('/').nth(1).unwrap_or("").to_string())
    };
    match (a.notes.get("shard"), b.notes.get("shard")) {
        (Some(x), None) | (None, Some(x)) => {
            return Some(format!("one run is shard {x} and the other is not sharded"))
        }
        (Some(x), Some(y)) if count(a) != count(b) => {
            return Some(format!("shard counts differ ({x} vs {y})"))
        }
        _ => {}
    }
    match (a.notes.get("selection"), b.notes.get("selection")) {
        (Some(x), Some(y)) if x != y => Some(format!("selections differ ({x} vs {y})")),
        _ => None,
    }
}

/// Shards that ran different arm lists would merge into a run with holes.
fn arms_differ(a: &EnvManifest, b: &EnvManifest) -> bool {
    match (a.notes.get("arms"), b.notes.get("arms")) {
        (Some(x), Some(y)) => x != y,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::RowsMode;
    use crate::record::results::tests::record;
    use crate::timing::Protocol;

    fn make_run(root: &Path, name: &str, pairs: &[(&str, &str)]) -> PathBuf {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let manifest = EnvManifest::without_hashes(
            Path::new("/nonexistent"),
            Protocol::default(),
            RowsMode::Replicate,
        );
        manifest.write(&dir).unwrap();
        let mut w = ResultsWriter::open(&dir).unwrap();
        for (case, arm) in pairs {
            w.append(&record(case, arm)).unwrap();
        }
        dir
    }

    #[test]
    fn merges_disjoint_shards() {
        let root = tempfile::tempdir().unwrap();
        let a = make_run(
            root.path(),
            "a",
            &[("x@b1", "cpu-ref"), ("x@b2", "cpu-ref")],
        );
        let b = make_run(root.path(), "b", &[("y@b1", "cpu-ref")]);
        let out = root.path().join("merged");
        let outcome = merge(&[a.clone(), b.clone()], &out).unwrap();
        assert_eq!(
            outcome,
            MergeOutcome {
                records: 3,
                cases: 3,
                floors: 0
            }
        );
        assert_eq!(run_records(&out).unwrap().len(), 3);
        let m = EnvManifest::read(&out).unwrap();
        assert_eq!(m.notes["merged_from"].as_array().unwrap().len(), 2);
        // Merging again into the same directory is refused.
        assert!(merge(&[a, b], &out).is_err());
    }

    #[test]
    fn refuses_overlap_and_mismatch() {
        let root = tempfile::tempdir().unwrap();
        let a = make_run(root.path(), "a", &[("x@b1", "cpu-ref")]);
        let b = make_run(root.path(), "b", &[("x@b1", "cpu-ref")]);
        let err = merge(&[a.clone(), b], &root.path().join("o1")).unwrap_err();
        assert!(err.to_string().contains("x@b1"), "{err}");
        assert!(!root.path().join("o1").exists());

        let c = make_run(root.path(), "c", &[("z@b1", "cpu-ref")]);
        let mut m = EnvManifest::read(&c).unwrap();
        m.capture_set_hash = "other".into();
        m.write(&c).unwrap();
        let err = merge(&[a.clone(), c], &root.path().join("o2")).unwrap_err();
        assert!(err.to_string().contains("capture_set_hash"), "{err}");
        assert_eq!(err.exit_code(), 2);
    }

    /// Each field that identifies what was measured blocks a merge on its own.
    #[test]
    fn refuses_other_binary_kernels_protocol_rows_or_arms() {
        let root = tempfile::tempdir().unwrap();
        let a = make_run(root.path(), "a", &[("x@b1", "cpu-ref")]);
        type Edit = fn(&mut EnvManifest);
        let edits: [(&str, Edit); 5] = [
            ("binary_sha256", |m| m.binary_sha256 = "other".into()),
            ("kernel_hashes", |m| {
                m.kernel_hashes.insert("ss_main.cu".into(), "other".into());
            }),
            ("protocol", |m| m.protocol.cold_reps += 1),
            ("rows mode", |m| m.rows_mode = RowsMode::Independent),
            ("arm lists", |m| {
                m.notes.insert("arms".into(), serde_json::json!(["cpu-ss"]));
            }),
        ];
        let mut with_arms = EnvManifest::read(&a).unwrap();
        with_arms
            .notes
            .insert("arms".into(), serde_json::json!(["cpu-ref"]));
        with_arms.write(&a).unwrap();
        for (i, (field, edit)) in edits.iter().enumerate() {
            let b = make_run(root.path(), &format!("b{i}"), &[("y@b1", "cpu-ref")]);
            let mut m = EnvManifest::read(&a).unwrap();
            edit(&mut m);
            m.write(&b).unwrap();
            let out = root.path().join(format!("out{i}"));
            let err = merge(&[a.clone(), b], &out).unwrap_err();
            assert!(err.to_string().contains(field), "{field}: {err}");
            assert!(!out.exists(), "{field}: a refused merge left {out:?}");
        }
    }

    /// An unsharded run beside a shard, shards of different counts and
    /// shards of different selections are refused.
    #[test]
    fn refuses_runs_that_are_not_shards_of_one_selection() {
        let root = tempfile::tempdir().unwrap();
        let with = |name: &str, shard: Option<&str>, selection: &str| {
            let dir = make_run(root.path(), name, &[(&format!("{name}@b1"), "cpu-ref")]);
            let mut m = EnvManifest::read(&dir).unwrap();
            if let Some(s) = shard {
                m.notes.insert("shard".into(), serde_json::json!(s));
            }
            m.notes
                .insert("selection".into(), serde_json::json!(selection));
            m.write(&dir).unwrap();
            dir
        };
        let s0 = with("s0", Some("0/2"), "all");
        let cases = [
            (with("plain", None, "batches 16"), "not sharded"),
            (with("s1of3", Some("1/3"), "all"), "shard counts differ"),
            (
                with("s1other", Some("1/2"), "batches 16"),
                "selections differ",
            ),
        ];
        for (i, (other, why)) in cases.into_iter().enumerate() {
            let out = root.path().join(format!("out{i}"));
            let err = merge(&[s0.clone(), other], &out).unwrap_err();
            assert!(err.to_string().contains(why), "{why}: {err}");
            assert_eq!(err.exit_code(), 2);
            assert!(!out.exists());
        }
        let s1 = with("s1", Some("1/2"), "all");
        merge(&[s0, s1], &root.path().join("ok")).unwrap();
    }

    #[test]
    fn floors_merge_with_their_shards_and_may_not_overlap() {
        use crate::floor::{FloorRecord, FLOOR_FILE};
        let root = tempfile::tempdir().unwrap();
        let floor_run = |name: &str, case: &str| {
            let dir = make_run(root.path(), name, &[(case, "cpu-ref")]);
            let mut m = EnvManifest::read(&dir).unwrap();
            m.notes.insert("floor".into(), serde_json::json!(true));
            m.write(&dir).unwrap();
            let mut w = FloorWriter::open(&dir).unwrap();
            w.append(&FloorRecord::for_case(&record(case, "floor")))
                .unwrap();
            dir
        };
        let a = floor_run("a", "x@b1");
        let b = floor_run("b", "y@b1");
        let out = root.path().join("merged");
        assert_eq!(merge(&[a.clone(), b], &out).unwrap().floors, 2);
        assert_eq!(read_floor_records(&out).unwrap().len(), 2);

        let again = floor_run("c", "z@b1");
        std::fs::copy(a.join(FLOOR_FILE), again.join(FLOOR_FILE)).unwrap();
        let err = merge(&[a.clone(), again], &root.path().join("o1")).unwrap_err();
        assert!(err.to_string().contains("floor of case x@b1"), "{err}");

        let plain = make_run(root.path(), "d", &[("w@b1", "cpu-ref")]);
        let err = merge(&[a, plain], &root.path().join("o2")).unwrap_err();
        assert!(err.to_string().contains("--floor"), "{err}");
    }

    #[test]
    fn merged_manifest_lists_every_shard() {
        let root = tempfile::tempdir().unwrap();
        let a = make_run(root.path(), "a", &[("x@b1", "cpu-ref")]);
        let b = make_run(root.path(), "b", &[("y@b1", "cpu-ref")]);
        for (dir, spec) in [(&a, "0/2"), (&b, "1/2")] {
            let mut m = EnvManifest::read(dir).unwrap();
            m.notes.insert("shard".into(), serde_json::json!(spec));
            m.write(dir).unwrap();
        }
        let out = root.path().join("merged");
        merge(&[a, b], &out).unwrap();
        let m = EnvManifest::read(&out).unwrap();
        assert!(!m.notes.contains_key("shard"));
        assert_eq!(m.notes["shards"], serde_json::json!(["0/2", "1/2"]));
    }
}
