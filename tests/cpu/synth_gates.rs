//! `capture synth` + `capture validate` end to end: the shipped generator
//! passes the calibration gates, deliberately wrong generators fail them,
//! output is byte-deterministic, and the cell filters select what they say.

use std::path::Path;

use gvr_bench::capture::format::{Manifest, Model, Source};
use gvr_bench::synth::validate::{validate, GateStatus, ValidationReport};
use gvr_bench::synth::{synth, Ablation, SynthOptions};

fn gate_options(out: &Path, ablation: Ablation) -> SynthOptions {
    let mut opts = SynthOptions::new(out);
    // Rows of N ≈ 16K in all three models (V4 N ≈ ISL/4, so its 64k rung;
    // K/N ≤ 1/8, so every temporal gate is evaluated), layers ending in 0
    // or 2 (every depth class): 30 cells.
    opts.cells = Some("v32_16k_L[0-9][02],v4_*_64k_L[0-9][02]".into());
    opts.ablation = ablation;
    opts
}

fn generate(ablation: Ablation) -> (tempfile::TempDir, ValidationReport) {
    let dir = tempfile::tempdir().expect("temp dir");
    let opts = gate_options(dir.path(), ablation);
    let summary = synth(&opts).expect("synth runs");
    assert!(summary.cells > 0);
    let report = validate(dir.path()).expect("validate runs");
    (dir, report)
}

fn status(report: &ValidationReport, model: Model, gate: &str) -> GateStatus {
    report
        .models
        .iter()
        .find(|m| m.model == model)
        .and_then(|m| m.gate(gate))
        .map(|g| g.status)
        .unwrap_or_else(|| panic!("no gate {gate:?} for {model} in\n{report}"))
}

#[test]
fn calibrated_generator_passes_every_gate() {
    let (_dir, report) = generate(Ablation::None);
    assert!(report.passed(), "{report}");
    for model in Model::ALL {
        for gate in [
            "per-layer KS",
            "aggregate KS",
            "boundary mass @16K",
            "retention",
            "hit rate",
        ] {
            assert_eq!(
                status(&report, model, gate),
                GateStatus::Pass,
                "{model} {gate}\n{report}"
            );
        }
    }
}

#[test]
fn beta_body_without_tail_fails_marginal_gates() {
    let (_dir, report) = generate(Ablation::NoTail);
    assert!(!report.passed(), "{report}");
    for model in Model::ALL {
        for gate in ["per-layer KS", "boundary mass @16K"] {
            assert_eq!(
                status(&report, model, gate),
                GateStatus::Fail,
                "{model} {gate}\n{report}"
            );
        }
    }
}

#[test]
fn independent_steps_fail_temporal_gates() {
    let (_dir, report) = generate(Ablation::NoTemporal);
    assert!(!report.passed(), "{report}");
    for model in Model::ALL {
        assert_eq!(
            status(&report, model, "hit rate"),
            GateStatus::Fail,
            "{report}"
        );
        assert_eq!(
            status(&report, model, "retention"),
            GateStatus::Fail,
            "{report}"
        );
        // The marginal is still the calibrated one.
        assert_eq!(
            status(&report, model, "per-layer KS"),
            GateStatus::Pass,
            "{report}"
        );
    }
}

/// A safetensors file as (header JSON, tensor payload bytes). The header is
/// compared as JSON because the writer stores metadata from a HashMap, whose
/// key order (not content) varies between runs.
type SplitFile = (serde_json::Value, Vec<u8>);

fn split_safetensors(bytes: &[u8]) -> SplitFile {
    let header_len = u64::from_le_bytes(bytes[..8].try_into().expect("8-byte prefix")) as usize;
    let header: serde_json::Value =
        serde_json::from_slice(&bytes[8..8 + header_len]).expect("header is JSON");
    (header, bytes[8 + header_len..].to_vec())
}

/// (file name, split cell file) for every cell, plus the manifest bytes.
fn read_set(dir: &Path) -> (Vec<(String, SplitFile)>, Vec<u8>) {
    let mut cells: Vec<(String, SplitFile)> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
        .map(|p| {
            let name = p.file_name().expect("name").to_string_lossy().into_owned();
            (
                name,
                split_safetensors(&std::fs::read(&p).expect("read cell")),
            )
        })
        .collect();
    cells.sort_by(|a, b| a.0.cmp(&b.0));
    let manifest = std::fs::read(dir.join("manifest.json")).expect("manifest");
    (cells, manifest)
}

#[test]
fn same_seed_gives_identical_bytes_other_seed_differs() {
    let make = |seed: u64, threads: usize| {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut opts = SynthOptions::new(dir.path());
        opts.cells = Some("v4_flash_4k_L0[246]".into());
        opts.steps = 2;
        opts.seed = seed;
        opts.threads = Some(threads);
        synth(&opts).expect("synth runs");
        let set = read_set(&opts.out);
        (dir, set)
    };
    let (_a, (first, first_manifest)) = make(5, 1);
    let (_b, (again, again_manifest)) = make(5, 2);
    let (_c, (other, _)) = make(6, 1);
    assert_eq!(first.len(), 3);
    assert!(first_manifest == again_manifest, "manifest bytes differ");
    for ((name, x), (_, y)) in first.iter().zip(&again) {
        assert!(x.1 == y.1, "{name}: tensor bytes differ for the same seed");
        assert_eq!(x.0, y.0, "{name}: header differs for the same seed");
    }
    for ((name, x), (_, y)) in first.iter().zip(&other) {
        assert!(x.1 != y.1, "{name}: a different seed must change the data");
    }
}

#[test]
fn manifest_records_filters_and_provenance() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut opts = SynthOptions::new(dir.path());
    opts.segment = vec![Model::Pro, Model::V32];
    opts.cells = Some("*_4k_L1*".into());
    opts.limit = Some(3);
    opts.steps = 1;
    let summary = synth(&opts).expect("synth runs");
    assert_eq!(summary.cells, 3);
    let text = std::fs::read_to_string(dir.path().join("manifest.json")).expect("manifest");
    let manifest: Manifest = serde_json::from_str(&text).expect("manifest parses");
    assert_eq!(manifest.source, Source::Synthetic);
    let ids: Vec<&str> = manifest.cells.iter().map(|c| c.meta.id.as_str()).collect();
    assert_eq!(ids, ["v32_4k_L10", "v32_4k_L11", "v32_4k_L12"]);
    assert!(manifest.cells.iter().all(|c| c.steps == 1));
    let prov = &manifest.provenance;
    assert_eq!(prov["seed"], 0);
    assert_eq!(prov["limit"], 3);
    assert_eq!(prov["segments"], serde_json::json!(["pro", "v32"]));
    assert!(
        prov["marginals"]["v32_shallow"]["tail"]["anchor_x"].is_array(),
        "{prov}"
    );
}

#[test]
fn empty_selection_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut opts = SynthOptions::new(dir.path());
    opts.cells = Some("no_such_cell_*".into());
    let err = synth(&opts).expect_err("nothing selected");
    assert_eq!(err.exit_code(), 2, "{err}");
}

#[test]
fn validate_reports_missing_directory_as_input_error() {
    let err = validate(Path::new("/nonexistent/capture/set")).expect_err("no such set");
    assert_eq!(err.exit_code(), 2, "{err}");
}

#[test]
fn imported_set_gets_temporal_gates_but_no_marginal_gates() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut opts = SynthOptions::new(dir.path());
    opts.cells = Some("v4_flash_64k_L0[2468]".into());
    synth(&opts).expect("synth runs");
    // Relabel the set as imported: the validator then has no target
    // marginal, but hit rate and retention are still measured.
    let manifest_path = dir.path().join("manifest.json");
    let mut manifest: Manifest =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).expect("read manifest"))
            .expect("manifest parses");
    manifest.source = Source::Imported;
    std::fs::write(
        &manifest_path,
        serde_json::to_string_pretty(&manifest).expect("serialize"),
    )
    .expect("write manifest");

    let report = validate(dir.path()).expect("validate runs");
    assert_eq!(report.source, Source::Imported);
    assert_eq!(report.models.len(), 1);
    assert_eq!(
        status(&report, Model::Flash, "per-layer KS"),
        GateStatus::NotApplicable
    );
    assert_eq!(
        status(&report, Model::Flash, "aggregate KS"),
        GateStatus::NotApplicable
    );
    assert_eq!(
        status(&report, Model::Flash, "boundary mass @16K"),
        GateStatus::Info
    );
    assert_eq!(
        status(&report, Model::Flash, "hit rate"),
        GateStatus::Pass,
        "{report}"
    );
    assert!(report.to_string().contains("(imported)"), "{report}");
}
