//! Capture format round-trip and one test per loader rejection rule
//! (docs/captures.md). Every rejection must be `GvrError::Input` (exit 2)
//! naming the offending file and field.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use gvr_bench::capture::format::{npad_for, Source};
use gvr_bench::capture::load::{
    load_all, manifest_entry, read_cell_file, write_cell, write_manifest,
};
use gvr_bench::capture::{CaptureSet, CellData, CellMeta, Manifest, Model, FORMAT_VERSION};
use gvr_bench::GvrError;
use safetensors::tensor::{Dtype, TensorView};

const FILE: &str = "cell.safetensors";

/// A small valid cell: 3 steps, deterministic values, hints = previous
/// step's indices, optional streams present.
fn valid_cell(model: Model) -> CellData {
    let k = model.k();
    let steps = 3;
    let n: Vec<u32> = (0..steps)
        .map(|s| (k as u32) * 2 + 10 * s as u32 + 3)
        .collect();
    let npad = npad_for(*n.iter().max().unwrap() as usize);
    let pad_value = f32::MIN;
    let mut logits = vec![pad_value; steps * npad];
    for s in 0..steps {
        for i in 0..n[s] as usize {
            // Spread of values with a few exact ties, like real logits.
            logits[s * npad + i] = ((i * 37 + s * 11) % 997) as f32 * 0.25 - 100.0;
        }
    }
    let mut hints = Vec::with_capacity(steps * k);
    let mut topk = Vec::with_capacity(steps * k);
    for (s, &n_s) in n.iter().enumerate() {
        let n_s = n_s as usize;
        for j in 0..k {
            hints.push(if j == k - 1 {
                -1
            } else {
                ((j * 3 + s) % n_s) as i32
            });
            topk.push(((j * 2 + s) % n_s) as i32);
        }
    }
    let kv_lens = n
        .iter()
        .map(|&n| n * model.compress_ratio()) // next_n = 1
        .collect();
    CellData {
        meta: CellMeta {
            id: format!("test_{}_L02", model.name()),
            model,
            isl: "8k".into(),
            layer: 2,
            n: n[steps - 1],
            k: k as u32,
            cr: model.compress_ratio(),
            next_n: 1,
        },
        npad,
        pad_value,
        logits,
        n,
        hints,
        topk: Some(topk),
        kv_lens: Some(kv_lens),
    }
}

fn manifest_for(cells: &[(&CellData, &str)]) -> Manifest {
    Manifest {
        format_version: FORMAT_VERSION,
        source: Source::Synthetic,
        provenance: serde_json::json!({"test": true}),
        cells: cells.iter().map(|(c, f)| manifest_entry(c, f)).collect(),
    }
}

/// Write `cell` as the only cell of a capture set in a fresh temp dir.
fn write_set(cell: &CellData) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_cell(dir.path(), FILE, cell).unwrap();
    write_manifest(dir.path(), &manifest_for(&[(cell, FILE)])).unwrap();
    dir
}

fn open_and_load(dir: &Path) -> Result<CellData, GvrError> {
    let set = CaptureSet::open(dir)?;
    let entry = set.manifest.cells[0].clone();
    set.load_cell(&entry)
}

/// The error must be Input (exit 2), name the file and the field, and carry
/// `message_part` in its message.
#[track_caller]
fn assert_input_error(err: GvrError, file_name: &str, field_part: &str, message_part: &str) {
    assert_eq!(err.exit_code(), 2, "exit code for {err}");
    let text = err.to_string();
    match &err {
        GvrError::Input {
            path,
            field,
            message,
        } => {
            assert!(
                path.to_string_lossy().ends_with(file_name),
                "path {path:?} should name {file_name}"
            );
            assert!(
                field.contains(field_part),
                "field {field:?} should contain {field_part:?}"
            );
            assert!(
                message.contains(message_part),
                "message {message:?} should contain {message_part:?}"
            );
            assert!(text.contains(file_name), "display {text:?} names the file");
            assert!(
                text.contains(field.as_str()),
                "display {text:?} names the field"
            );
        }
        other => panic!("expected GvrError::Input, got {other:?}"),
    }
}

fn cell_bytes(cell: &CellData) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    write_cell(dir.path(), FILE, cell).unwrap();
    std::fs::read(dir.path().join(FILE)).unwrap()
}

/// Metadata exactly as the writer produces it, for hand-built files.
fn metadata_of(cell: &CellData) -> HashMap<String, String> {
    let m = &cell.meta;
    [
        ("format_version", FORMAT_VERSION.to_string()),
        ("id", m.id.clone()),
        ("model", m.model.name().to_string()),
        ("isl", m.isl.clone()),
        ("layer", m.layer.to_string()),
        ("k", m.k.to_string()),
        ("cr", m.cr.to_string()),
        ("next_n", m.next_n.to_string()),
        ("pad_value", format!("{:?}", cell.pad_value)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

struct RawTensor {
    name: &'static str,
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

fn raw(name: &'static str, dtype: Dtype, shape: Vec<usize>, bytes: Vec<u8>) -> RawTensor {
    RawTensor {
        name,
        dtype,
        shape,
        bytes,
    }
}

fn le_f32(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn le_i32(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn le_u32_as_i32(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| (*x as i32).to_le_bytes()).collect()
}

/// The three required tensors of `cell` in raw form, to be altered by a test.
fn raw_tensors(cell: &CellData) -> Vec<RawTensor> {
    vec![
        raw(
            "logits",
            Dtype::F32,
            vec![cell.steps(), cell.npad],
            le_f32(&cell.logits),
        ),
        raw("n", Dtype::I32, vec![cell.steps()], le_u32_as_i32(&cell.n)),
        raw(
            "hints",
            Dtype::I32,
            vec![cell.steps(), cell.k()],
            le_i32(&cell.hints),
        ),
    ]
}

/// Write a hand-built cell file plus a manifest entry pointing at it.
fn write_raw_set(
    entry_cell: &CellData,
    tensors: &[RawTensor],
    metadata: HashMap<String, String>,
) -> tempfile::TempDir {
    let views: Vec<(&str, TensorView<'_>)> = tensors
        .iter()
        .map(|t| {
            (
                t.name,
                TensorView::new(t.dtype, t.shape.clone(), &t.bytes).unwrap(),
            )
        })
        .collect();
    let bytes = safetensors::serialize(views, Some(metadata)).unwrap();
    write_bytes_set(entry_cell, &bytes)
}

fn write_bytes_set(entry_cell: &CellData, bytes: &[u8]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(FILE), bytes).unwrap();
    write_manifest(dir.path(), &manifest_for(&[(entry_cell, FILE)])).unwrap();
    dir
}

// ---------------------------------------------------------------------------
// Round trip

#[test]
fn round_trip_every_model_preserves_all_fields() {
    for model in Model::ALL {
        let cell = valid_cell(model);
        let dir = write_set(&cell);
        let loaded = open_and_load(dir.path()).unwrap();
        assert_eq!(loaded, cell, "model {model}");
        assert_eq!(loaded.row(1).len(), cell.n[1] as usize);
        assert_eq!(loaded.padded_row(1).len(), cell.npad);
    }
}

#[test]
fn round_trip_without_optional_streams_and_with_special_values() {
    let mut cell = valid_cell(Model::Flash);
    cell.topk = None;
    cell.kv_lens = None;
    cell.pad_value = f32::NEG_INFINITY;
    cell.logits[0] = f32::INFINITY;
    cell.logits[1] = -0.0;
    cell.logits[2] = f32::MIN_POSITIVE / 2.0; // subnormal
    let dir = write_set(&cell);
    let loaded = open_and_load(dir.path()).unwrap();
    assert_eq!(loaded, cell);
    assert!(loaded.logits[1].is_sign_negative());
}

#[test]
fn nan_in_valid_prefix_survives_bitwise() {
    let mut cell = valid_cell(Model::Pro);
    cell.logits[5] = f32::NAN;
    let dir = write_set(&cell);
    let loaded = open_and_load(dir.path()).unwrap();
    assert!(loaded.logits[5].is_nan());
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&loaded.logits), bits(&cell.logits));
}

#[test]
fn load_all_and_lookup_by_id_with_several_cells() {
    let a = valid_cell(Model::Flash);
    let mut b = valid_cell(Model::V32);
    b.meta.id = "v32_8k_L05".into();
    let dir = tempfile::tempdir().unwrap();
    write_cell(dir.path(), "a.safetensors", &a).unwrap();
    write_cell(dir.path(), "sub/b.safetensors", &b).unwrap();
    write_manifest(
        dir.path(),
        &manifest_for(&[(&a, "a.safetensors"), (&b, "sub/b.safetensors")]),
    )
    .unwrap();
    let (set, cells) = load_all(dir.path()).unwrap();
    assert_eq!(cells, vec![a.clone(), b.clone()]);
    assert_eq!(set.load_cell_by_id("v32_8k_L05").unwrap(), b);
    assert!(set.cell("nope").is_none());
    assert_input_error(
        set.load_cell_by_id("nope").unwrap_err(),
        "manifest.json",
        "cells",
        "nope",
    );
}

#[test]
fn manifest_json_round_trips_with_source_and_provenance() {
    let cell = valid_cell(Model::Flash);
    let dir = write_set(&cell);
    let set = CaptureSet::open(dir.path()).unwrap();
    assert_eq!(set.manifest, manifest_for(&[(&cell, FILE)]));
    let text = std::fs::read_to_string(dir.path().join("manifest.json")).unwrap();
    assert!(text.contains("\"source\": \"synthetic\""), "{text}");
    assert!(text.contains("\"model\": \"flash\""), "{text}");
}

#[test]
fn read_cell_file_without_nominal_n_uses_max_step_n() {
    let cell = valid_cell(Model::Flash);
    let dir = write_raw_set(&cell, &raw_tensors(&cell), metadata_of(&cell));
    let loaded = read_cell_file(&dir.path().join(FILE)).unwrap();
    assert_eq!(loaded.meta.n, *cell.n.iter().max().unwrap());
    // Through the manifest, the manifest's nominal N wins.
    let mut entry_cell = cell.clone();
    entry_cell.meta.n = 4099;
    let dir = write_raw_set(&entry_cell, &raw_tensors(&cell), metadata_of(&cell));
    assert_eq!(open_and_load(dir.path()).unwrap().meta.n, 4099);
}

#[test]
fn writer_refuses_a_cell_the_loader_would_refuse() {
    let mut cell = valid_cell(Model::Flash);
    cell.n[1] = 0;
    let dir = tempfile::tempdir().unwrap();
    let err = write_cell(dir.path(), FILE, &cell).unwrap_err();
    assert_input_error(err, FILE, "n", "step 1");
    assert!(!dir.path().join(FILE).exists());
}

// ---------------------------------------------------------------------------
// Directory and manifest errors

#[test]
fn missing_directory() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere");
    let err = CaptureSet::open(&missing).unwrap_err();
    assert_input_error(err, "nowhere", "directory", "does not exist");
}

#[test]
fn missing_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let err = CaptureSet::open(dir.path()).unwrap_err();
    assert_input_error(err, "manifest.json", "manifest.json", "missing");
}

#[test]
fn unparsable_manifest() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("manifest.json"), "{ not json").unwrap();
    let err = CaptureSet::open(dir.path()).unwrap_err();
    assert_input_error(err, "manifest.json", "json", "not valid JSON");
}

#[test]
fn manifest_schema_violation() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("manifest.json"),
        r#"{"format_version": 1, "source": "synthetic", "cells": [{"id": "x"}]}"#,
    )
    .unwrap();
    let err = CaptureSet::open(dir.path()).unwrap_err();
    // The error names the field path of the first missing field.
    assert_input_error(err, "manifest.json", "cells[0].model", "missing field");
}

#[test]
fn unsupported_manifest_format_version() {
    let cell = valid_cell(Model::Flash);
    let dir = write_set(&cell);
    let mut manifest = manifest_for(&[(&cell, FILE)]);
    manifest.format_version = 99;
    write_manifest(dir.path(), &manifest).unwrap();
    let err = CaptureSet::open(dir.path()).unwrap_err();
    assert_input_error(
        err,
        "manifest.json",
        "format_version",
        "unsupported format_version 99",
    );
}

#[test]
fn unsupported_file_format_version() {
    let cell = valid_cell(Model::Flash);
    let mut meta = metadata_of(&cell);
    meta.insert("format_version".into(), "7".into());
    let dir = write_raw_set(&cell, &raw_tensors(&cell), meta);
    let err = open_and_load(dir.path()).unwrap_err();
    assert_input_error(err, FILE, "format_version", "unsupported format_version 7");
}

#[test]
fn missing_cell_file() {
    let cell = valid_cell(Model::Flash);
    let dir = write_set(&cell);
    std::fs::remove_file(dir.path().join(FILE)).unwrap();
    let err = CaptureSet::open(dir.path()).unwrap_err();
    assert_input_error(err, FILE, "file", "missing");
}

#[test]
fn cell_file_removed_after_open() {
    let cell = valid_cell(Model::Flash);
    let dir = write_set(&cell);
    let set = CaptureSet::open(dir.path()).unwrap();
    std::fs::remove_file(dir.path().join(FILE)).unwrap();
    let err = set.load_cell(&set.manifest.cells[0]).unwrap_err();
    assert_input_error(err, FILE, "file", "missing");
}

#[test]
fn manifest_path_escaping_the_directory() {
    let cell = valid_cell(Model::Flash);
    let dir = write_set(&cell);
    let mut manifest = manifest_for(&[(&cell, FILE)]);
    manifest.cells[0].file = "../cell.safetensors".into();
    write_manifest(dir.path(), &manifest).unwrap();
    let err = CaptureSet::open(dir.path()).unwrap_err();
    assert_input_error(err, "manifest.json", "cells[0].file", "relative path");
}

#[test]
fn duplicate_cell_ids() {
    let cell = valid_cell(Model::Flash);
    let dir = write_set(&cell);
    write_manifest(dir.path(), &manifest_for(&[(&cell, FILE), (&cell, FILE)])).unwrap();
    let err = CaptureSet::open(dir.path()).unwrap_err();
    assert_input_error(err, "manifest.json", "cells[1].id", "duplicate cell id");
}

#[test]
fn manifest_npad_not_multiple_of_64() {
    let cell = valid_cell(Model::Flash);
    let dir = write_set(&cell);
    let mut manifest = manifest_for(&[(&cell, FILE)]);
    manifest.cells[0].npad = 1000;
    write_manifest(dir.path(), &manifest).unwrap();
    let err = CaptureSet::open(dir.path()).unwrap_err();
    assert_input_error(err, "manifest.json", "cells[0].npad", "multiple of 64");
}

#[test]
fn manifest_model_k_mismatch() {
    let cell = valid_cell(Model::Flash);
    let dir = write_set(&cell);
    let mut manifest = manifest_for(&[(&cell, FILE)]);
    manifest.cells[0].meta.k = 1024;
    write_manifest(dir.path(), &manifest).unwrap();
    let err = CaptureSet::open(dir.path()).unwrap_err();
    assert_input_error(
        err,
        "manifest.json",
        "cells[0].k",
        "does not match model flash",
    );
}

// ---------------------------------------------------------------------------
// Cell file errors

#[test]
fn truncated_cell_file() {
    let cell = valid_cell(Model::Flash);
    let bytes = cell_bytes(&cell);
    for cut in [4, 40, bytes.len() / 2, bytes.len() - 1] {
        let dir = write_bytes_set(&cell, &bytes[..cut]);
        let err = open_and_load(dir.path()).unwrap_err();
        assert_input_error(err, FILE, "safetensors", "truncated or corrupt");
    }
}

#[test]
fn corrupt_cell_file() {
    let cell = valid_cell(Model::Flash);
    let mut bytes = cell_bytes(&cell);
    // Scribble over the JSON header, keeping its length field.
    for b in bytes[8..40].iter_mut() {
        *b = b'#';
    }
    let dir = write_bytes_set(&cell, &bytes);
    let err = open_and_load(dir.path()).unwrap_err();
    assert_input_error(err, FILE, "safetensors", "corrupt");

    let dir = write_bytes_set(&cell, b"this is not a safetensors file at all");
    let err = open_and_load(dir.path()).unwrap_err();
    assert_input_error(err, FILE, "safetensors", "corrupt");
}

#[test]
fn logits_wrong_dtype() {
    let cell = valid_cell(Model::Flash);
    for (dtype, bytes_per) in [(Dtype::F16, 2usize), (Dtype::F64, 8)] {
        let mut tensors = raw_tensors(&cell);
        tensors[0] = raw(
            "logits",
            dtype,
            vec![cell.steps(), cell.npad],
            vec![0u8; cell.logits.len() * bytes_per],
        );
        let dir = write_raw_set(&cell, &tensors, metadata_of(&cell));
        let err = open_and_load(dir.path()).unwrap_err();
        assert_input_error(err, FILE, "logits", &format!("dtype {dtype:?}"));
    }
}

#[test]
fn hints_wrong_dtype() {
    let cell = valid_cell(Model::Flash);
    let mut tensors = raw_tensors(&cell);
    let as_i64: Vec<u8> = cell
        .hints
        .iter()
        .flat_map(|&h| i64::from(h).to_le_bytes())
        .collect();
    tensors[2] = raw("hints", Dtype::I64, vec![cell.steps(), cell.k()], as_i64);
    let dir = write_raw_set(&cell, &tensors, metadata_of(&cell));
    let err = open_and_load(dir.path()).unwrap_err();
    assert_input_error(err, FILE, "hints", "dtype I64");
}

#[test]
fn logits_wrong_rank() {
    let cell = valid_cell(Model::Flash);
    let mut tensors = raw_tensors(&cell);
    tensors[0].shape = vec![cell.steps() * cell.npad];
    let dir = write_raw_set(&cell, &tensors, metadata_of(&cell));
    let err = open_and_load(dir.path()).unwrap_err();
    assert_input_error(err, FILE, "logits", "rank 2");
}

#[test]
fn steps_mismatch_between_tensors() {
    let cell = valid_cell(Model::Flash);
    let mut tensors = raw_tensors(&cell);
    tensors[1] = raw("n", Dtype::I32, vec![2], le_u32_as_i32(&cell.n[..2]));
    let dir = write_raw_set(&cell, &tensors, metadata_of(&cell));
    let err = open_and_load(dir.path()).unwrap_err();
    assert_input_error(err, FILE, "n", "does not match expected [3]");
}

#[test]
fn hints_second_dim_not_k() {
    let cell = valid_cell(Model::Flash);
    let mut tensors = raw_tensors(&cell);
    tensors[2].shape = vec![cell.steps() * 2, cell.k() / 2];
    let dir = write_raw_set(&cell, &tensors, metadata_of(&cell));
    let err = open_and_load(dir.path()).unwrap_err();
    assert_input_error(err, FILE, "hints", "does not match expected [3, 512]");
}

#[test]
fn optional_topk_wrong_shape() {
    let cell = valid_cell(Model::Flash);
    let mut tensors = raw_tensors(&cell);
    tensors.push(raw(
        "topk",
        Dtype::I32,
        vec![cell.steps(), 4],
        le_i32(&vec![0; cell.steps() * 4]),
    ));
    let dir = write_raw_set(&cell, &tensors, metadata_of(&cell));
    let err = open_and_load(dir.path()).unwrap_err();
    assert_input_error(err, FILE, "topk", "does not match");
}

#[test]
fn missing_required_tensor() {
    let cell = valid_cell(Model::Flash);
    let mut tensors = raw_tensors(&cell);
    tensors.remove(2);
    let dir = write_raw_set(&cell, &tensors, metadata_of(&cell));
    let err = open_and_load(dir.path()).unwrap_err();
    assert_input_error(err, FILE, "hints", "missing");
}

#[test]
fn missing_metadata_key() {
    let cell = valid_cell(Model::Flash);
    let mut meta = metadata_of(&cell);
    meta.remove("pad_value");
    let dir = write_raw_set(&cell, &raw_tensors(&cell), meta);
    let err = open_and_load(dir.path()).unwrap_err();
    assert_input_error(err, FILE, "pad_value", "missing");
}

#[test]
fn file_npad_not_multiple_of_64() {
    let cell = valid_cell(Model::Flash);
    let mut tensors = raw_tensors(&cell);
    let npad = cell.npad - 8;
    tensors[0] = raw(
        "logits",
        Dtype::F32,
        vec![cell.steps(), npad],
        vec![0u8; cell.steps() * npad * 4],
    );
    let dir = write_raw_set(&cell, &tensors, metadata_of(&cell));
    let err = open_and_load(dir.path()).unwrap_err();
    assert_input_error(err, FILE, "logits", "multiple of 64");
}

#[test]
fn n_exceeds_npad_names_the_step() {
    let cell = valid_cell(Model::Flash);
    let mut tensors = raw_tensors(&cell);
    let mut n = cell.n.clone();
    n[2] = cell.npad as u32 + 1;
    tensors[1] = raw("n", Dtype::I32, vec![3], le_u32_as_i32(&n));
    let dir = write_raw_set(&cell, &tensors, metadata_of(&cell));
    let err = open_and_load(dir.path()).unwrap_err();
    assert_input_error(err, FILE, "n", "step 2");
}

#[test]
fn n_zero_names_the_step() {
    let cell = valid_cell(Model::Flash);
    let mut tensors = raw_tensors(&cell);
    let mut n = cell.n.clone();
    n[1] = 0;
    tensors[1] = raw("n", Dtype::I32, vec![3], le_u32_as_i32(&n));
    let dir = write_raw_set(&cell, &tensors, metadata_of(&cell));
    let err = open_and_load(dir.path()).unwrap_err();
    assert_input_error(err, FILE, "n", "step 1: valid length n is 0");
}

#[test]
fn negative_n_names_the_step() {
    let cell = valid_cell(Model::Flash);
    let mut tensors = raw_tensors(&cell);
    tensors[1] = raw("n", Dtype::I32, vec![3], le_i32(&[1000, -5, 1000]));
    let dir = write_raw_set(&cell, &tensors, metadata_of(&cell));
    let err = open_and_load(dir.path()).unwrap_err();
    assert_input_error(err, FILE, "n", "step 1: negative");
}

#[test]
fn unsupported_k_lists_the_supported_set() {
    let cell = valid_cell(Model::Flash);
    let mut meta = metadata_of(&cell);
    meta.insert("k".into(), "256".into());
    let mut tensors = raw_tensors(&cell);
    tensors[2] = raw(
        "hints",
        Dtype::I32,
        vec![cell.steps(), 256],
        le_i32(&vec![0; cell.steps() * 256]),
    );
    let dir = write_raw_set(&cell, &tensors, meta);
    let err = open_and_load(dir.path()).unwrap_err();
    assert_input_error(err, FILE, "k", "[512, 1024, 2048]");
}

#[test]
fn hint_out_of_range_names_step_and_slot() {
    let cell = valid_cell(Model::Flash);
    let mut hints = cell.hints.clone();
    hints[cell.k() + 7] = cell.n[1] as i32; // step 1, slot 7: one past the end
    let mut tensors = raw_tensors(&cell);
    tensors[2].bytes = le_i32(&hints);
    let dir = write_raw_set(&cell, &tensors, metadata_of(&cell));
    let err = open_and_load(dir.path()).unwrap_err();
    assert_input_error(err, FILE, "hints", "step 1, slot 7");

    hints[cell.k() + 7] = -2;
    tensors[2].bytes = le_i32(&hints);
    let dir = write_raw_set(&cell, &tensors, metadata_of(&cell));
    let err = open_and_load(dir.path()).unwrap_err();
    assert_input_error(err, FILE, "hints", "index -2");
}

#[test]
fn file_model_k_mismatch() {
    let cell = valid_cell(Model::Flash);
    let mut meta = metadata_of(&cell);
    meta.insert("model".into(), "pro".into());
    let dir = write_raw_set(&cell, &raw_tensors(&cell), meta);
    let err = open_and_load(dir.path()).unwrap_err();
    assert_input_error(err, FILE, "k", "does not match model pro");
}

#[test]
fn file_model_cr_mismatch() {
    let cell = valid_cell(Model::Flash);
    let mut meta = metadata_of(&cell);
    meta.insert("cr".into(), "1".into());
    let dir = write_raw_set(&cell, &raw_tensors(&cell), meta);
    let err = open_and_load(dir.path()).unwrap_err();
    assert_input_error(err, FILE, "cr", "does not match model flash");
}

#[test]
fn unknown_model_name() {
    let cell = valid_cell(Model::Flash);
    let mut meta = metadata_of(&cell);
    meta.insert("model".into(), "llama".into());
    let dir = write_raw_set(&cell, &raw_tensors(&cell), meta);
    let err = open_and_load(dir.path()).unwrap_err();
    assert_input_error(err, FILE, "model", "unknown model");
}

#[test]
fn manifest_and_file_disagree_on_each_field() {
    let cell = valid_cell(Model::Flash);
    type Edit = fn(&mut CellData);
    let edits: [(&str, Edit); 7] = [
        ("id", |c| c.meta.id = "other".into()),
        ("model", |c| {
            // A consistent Pro entry, so only the model disagrees.
            c.meta.model = Model::Pro;
            c.meta.k = 1024;
        }),
        ("isl", |c| c.meta.isl = "16k".into()),
        ("layer", |c| c.meta.layer = 4),
        ("next_n", |c| c.meta.next_n = 2),
        ("steps", |c| c.n.push(5)),
        ("npad", |c| c.npad += 64),
    ];
    for (field, edit) in edits {
        let mut entry_cell = cell.clone();
        edit(&mut entry_cell);
        let dir = write_set(&cell);
        let mut manifest = manifest_for(&[(&cell, FILE)]);
        manifest.cells[0] = manifest_entry(&entry_cell, FILE);
        write_manifest(dir.path(), &manifest).unwrap();
        let err = open_and_load(dir.path()).unwrap_err();
        assert_input_error(err, FILE, field, "manifest says");
    }
}

#[test]
fn size_guard_refuses_huge_declared_shapes() {
    // A header claiming a [1M, 1M] f32 tensor (4 TiB) in a tiny file.
    let header = r#"{"logits":{"dtype":"F32","shape":[1048576,1048576],"data_offsets":[0,16]}}"#;
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(&[0u8; 16]);
    let cell = valid_cell(Model::Flash);
    let dir = write_bytes_set(&cell, &bytes);
    let err = open_and_load(dir.path()).unwrap_err();
    assert_input_error(err, FILE, "logits", "16 GiB");
}

#[test]
fn error_paths_are_inside_the_capture_dir() {
    let cell = valid_cell(Model::Flash);
    let dir = write_bytes_set(&cell, b"garbage");
    let err = open_and_load(dir.path()).unwrap_err();
    if let GvrError::Input { path, .. } = &err {
        let expected: PathBuf = dir.path().join(FILE);
        assert_eq!(path, &expected);
    } else {
        panic!("expected Input, got {err:?}");
    }
}

#[test]
fn size_guard_counts_dtype_width() {
    // [1M, 2560] F32 = 10 GiB: under the guard, so the (tiny) file is
    // refused as truncated instead. [1M, 5000] F32 ≈ 19.5 GiB: guard.
    let cell = valid_cell(Model::Flash);
    for (cols, field, message) in [
        (2560u64, "safetensors", "truncated"),
        (5000, "logits", "16 GiB"),
    ] {
        let end = 1048576 * cols * 4;
        let header = format!(
            r#"{{"logits":{{"dtype":"F32","shape":[1048576,{cols}],"data_offsets":[0,{end}]}}}}"#
        );
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(&[0u8; 16]);
        let dir = write_bytes_set(&cell, &bytes);
        let err = open_and_load(dir.path()).unwrap_err();
        assert_input_error(err, FILE, field, message);
    }
}

#[test]
fn random_corruption_is_an_input_error_or_a_consistent_cell() {
    // Byte flips in the header and the data, and rewritten header lengths:
    // the loader never panics; it refuses with an input error (exit 2) that
    // names the file, or hands out a cell whose shapes hold together.
    use rand::{Rng, SeedableRng};
    let cell = valid_cell(Model::Flash);
    let bytes = cell_bytes(&cell);
    let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(31);
    let dir = tempfile::tempdir().unwrap();
    write_manifest(dir.path(), &manifest_for(&[(&cell, FILE)])).unwrap();
    let (mut refused, mut loaded) = (0, 0);
    for trial in 0..600 {
        let mut mutated = bytes.clone();
        match trial % 3 {
            0 => {
                let i = rng.random_range(8..8 + header_len);
                mutated[i] = rng.random();
            }
            1 => {
                for _ in 0..rng.random_range(1..=16) {
                    let i = rng.random_range(8 + header_len..mutated.len());
                    mutated[i] = rng.random();
                }
            }
            _ => {
                let length = match rng.random_range(0..3) {
                    0 => rng.random::<u64>(),
                    1 => header_len as u64 + rng.random_range(1..64),
                    _ => rng.random_range(0..header_len as u64),
                };
                mutated[..8].copy_from_slice(&length.to_le_bytes());
            }
        }
        std::fs::write(dir.path().join(FILE), &mutated).unwrap();
        match open_and_load(dir.path()) {
            Err(err) => {
                assert_eq!(err.exit_code(), 2, "trial {trial}: {err}");
                assert!(err.to_string().contains(FILE), "trial {trial}: {err}");
                refused += 1;
            }
            Ok(loaded_cell) => {
                let steps = loaded_cell.steps();
                assert_eq!(loaded_cell.logits.len(), steps * loaded_cell.npad);
                assert_eq!(loaded_cell.hints.len(), steps * loaded_cell.k());
                for s in 0..steps {
                    let n = loaded_cell.row(s).len();
                    assert!(n > 0 && n <= loaded_cell.npad, "trial {trial}: n = {n}");
                }
                loaded += 1;
            }
        }
    }
    // Both outcomes were exercised (flips in the logits load: any value is
    // data; flips in n, hints or the header are mostly refused).
    assert!(
        refused > 100 && loaded > 10,
        "{refused} refused, {loaded} loaded"
    );
}
