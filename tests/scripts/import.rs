//! End-to-end test of scripts/import_trtllm_captures.py: fabricate a tiny
//! TRT-LLM dump (tests/fixtures/make_trtllm_dump.py, npz layout), import it,
//! and load the result with the Rust loader. Needs python3 with numpy and
//! safetensors; without them every test prints SKIPPED and returns.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use gvr_bench::capture::{CaptureSet, CellData, Source};

const LAYERS: [u32; 2] = [2, 4];
/// Step 0 is a warm-up (topk = -1), step 1 lacks a valid predecessor.
const USABLE_STEPS: [usize; 4] = [2, 3, 4, 5];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn python_ready() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import numpy, safetensors"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("SKIPPED: python3 with numpy+safetensors not available");
    }
    ok
}

fn fabricate(isl_dir: &Path, model: &str) {
    let out = Command::new("python3")
        .arg(repo().join("tests/fixtures/make_trtllm_dump.py"))
        .arg(isl_dir)
        .arg(model)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fixture failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn import(out_dir: &Path, extra: &[&str], isl_dirs: &[&Path]) -> Output {
    Command::new("python3")
        .arg(repo().join("scripts/import_trtllm_captures.py"))
        .arg("--out")
        .arg(out_dir)
        .args(extra)
        .args(isl_dirs)
        .output()
        .unwrap()
}

// Mirrors of the fixture's closed formulas.
fn base_n(model: &str) -> u32 {
    match model {
        "flash" => 1500,
        "pro" => 2100,
        _ => 4200,
    }
}
fn n_of(model: &str, step: usize) -> u32 {
    base_n(model) + 3 * step as u32
}
fn logit(i: usize, step: usize, layer: u32) -> f32 {
    ((i * 7 + step * 13 + layer as usize * 3) % 1000) as f32 * 0.5 - 250.0
}
fn topk_of(model: &str, step: usize, layer: u32, k: usize) -> Vec<i32> {
    let n = n_of(model, step) as i32;
    let top = if layer == 4 { n - 1 } else { n - 5 };
    (0..k as i32).map(|j| top - 2 * j).collect()
}
fn preidx_of(step: usize, k: usize) -> Vec<i32> {
    (0..k)
        .map(|j| {
            if j == 0 {
                -1
            } else {
                ((j * 5 + step) % 1000) as i32
            }
        })
        .collect()
}

/// Check one imported cell against the fixture formulas for `steps`.
fn check_cell(cell: &CellData, model: &str, layer: u32, steps: &[usize]) {
    let k = cell.k();
    assert_eq!(cell.steps(), steps.len(), "{}", cell.meta.id);
    let max_n = n_of(model, *steps.last().unwrap());
    assert_eq!(cell.npad, (max_n as usize).div_ceil(64) * 64);
    assert_eq!(cell.pad_value, f32::MIN);
    assert_eq!(cell.meta.n, max_n, "nominal N is the last usable step's N");
    for (row, &step) in steps.iter().enumerate() {
        // N is the max over layers (layer 4 reaches N-1 even for layer 2's cell).
        let n = n_of(model, step);
        assert_eq!(cell.n[row], n, "{} step {step}", cell.meta.id);
        let expected: Vec<f32> = (0..n as usize).map(|i| logit(i, step, layer)).collect();
        assert_eq!(
            cell.row(row),
            &expected[..],
            "{} step {step} logits",
            cell.meta.id
        );
        // The garbage tail (1e30) must not leak into the pad.
        assert!(cell.padded_row(row)[n as usize..]
            .iter()
            .all(|&v| v == f32::MIN));
        let expected_hints = if model == "v32" {
            topk_of(model, step - 1, layer, k)
        } else {
            preidx_of(step, k)
        };
        assert_eq!(
            cell.hints(row),
            &expected_hints[..],
            "{} step {step} hints",
            cell.meta.id
        );
        let topk = cell.topk.as_ref().expect("topk stored");
        assert_eq!(
            &topk[row * k..(row + 1) * k],
            &topk_of(model, step, layer, k)[..]
        );
        let kv = cell.kv_lens.as_ref().expect("kv_lens stored")[row];
        assert_eq!(kv, n * cell.meta.cr + cell.meta.next_n - 1);
    }
}

#[test]
fn imports_v4_and_v32_dumps_and_loader_accepts_them() {
    if !python_ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let flash = tmp.path().join("flash/ISL_8k");
    let v32 = tmp.path().join("v32/ISL_16k");
    fabricate(&flash, "flash");
    fabricate(&v32, "v32");
    let out_dir = tmp.path().join("out");
    let out = import(&out_dir, &[], &[&flash, &v32]);
    assert!(
        out.status.success(),
        "import failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let set = CaptureSet::open(&out_dir).unwrap();
    assert_eq!(set.manifest.source, Source::Imported);
    let ids: Vec<&str> = set
        .manifest
        .cells
        .iter()
        .map(|c| c.meta.id.as_str())
        .collect();
    assert_eq!(
        ids,
        [
            "v4_flash_8k_L02",
            "v4_flash_8k_L04",
            "v32_16k_L02",
            "v32_16k_L04"
        ]
    );
    let sources = &set.manifest.provenance["sources"];
    assert_eq!(
        sources[0]["source_manifest"]["model_variant"],
        "deepseek-v4-flash"
    );
    for (model, isl, prefix) in [("flash", "8k", "v4_flash"), ("v32", "16k", "v32")] {
        for layer in LAYERS {
            let id = format!("{prefix}_{isl}_L{layer:02}");
            let cell = set.load_cell_by_id(&id).unwrap();
            assert_eq!(cell.meta.isl, isl);
            assert_eq!(cell.meta.layer, layer);
            check_cell(&cell, model, layer, &USABLE_STEPS);
        }
    }
}

#[test]
fn max_steps_keeps_the_last_usable_steps_and_overrides_apply() {
    if !python_ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // A directory name that does not carry the ISL: --isl must supply it.
    let dump = tmp.path().join("pro_dump");
    fabricate(&dump, "pro");
    let out_dir = tmp.path().join("out");
    let args = [
        "--max-steps",
        "2",
        "--isl",
        "32k",
        "--model",
        "pro",
        "--layers",
        "2",
    ];
    let out = import(&out_dir, &args, &[&dump]);
    assert!(
        out.status.success(),
        "import failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let set = CaptureSet::open(&out_dir).unwrap();
    assert_eq!(set.manifest.cells.len(), 1);
    let cell = set.load_cell_by_id("v4_pro_32k_L02").unwrap();
    // Layer 4 was not imported but its topk still sets N (max over layers).
    check_cell(&cell, "pro", 2, &[4, 5]);
}

#[test]
fn refuses_incomplete_capture_dirs() {
    if !python_ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("ISL_8k");
    fabricate(&dump, "flash");
    std::fs::remove_file(dump.join("_COMPLETE")).unwrap();
    let out = import(&tmp.path().join("out"), &[], &[&dump]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("missing _COMPLETE"), "{stderr}");
    assert!(!tmp.path().join("out/manifest.json").exists());

    fabricate(&dump, "flash");
    std::fs::remove_file(dump.join("manifest.json")).unwrap();
    let out = import(&tmp.path().join("out"), &[], &[&dump]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing manifest.json"));
}

#[test]
fn refuses_a_model_override_that_contradicts_index_topk() {
    if !python_ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("ISL_8k");
    fabricate(&dump, "flash");
    let out = import(&tmp.path().join("out"), &["--model", "v32"], &[&dump]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("index_topk=512"));
}

#[test]
fn drops_steps_with_short_logits_or_out_of_range_hints() {
    if !python_ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("ISL_8k");
    fabricate(&dump, "flash");
    // Layer 2: step 3's logits narrower than N, step 4 has a hint beyond N.
    let edit = r#"
import sys, numpy as np
d = sys.argv[1] + "/layer_02/"
lg = dict(np.load(d + "decode.logits.in.npz"))
lg["L2_S3"] = lg["L2_S3"][:, :100]
np.savez(d + "decode.logits.in.npz", **lg)
pi = dict(np.load(d + "decode.preidx.in.npz"))
pi["L2_S4"][1] = 99999
np.savez(d + "decode.preidx.in.npz", **pi)
"#;
    let out = Command::new("python3")
        .args(["-c", edit])
        .arg(&dump)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out_dir = tmp.path().join("out");
    let out = import(&out_dir, &[], &[&dump]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("layer 2: dropped step 3"), "{stderr}");
    assert!(stderr.contains("layer 2: dropped step 4"), "{stderr}");

    let set = CaptureSet::open(&out_dir).unwrap();
    check_cell(
        &set.load_cell_by_id("v4_flash_8k_L02").unwrap(),
        "flash",
        2,
        &[2, 5],
    );
    check_cell(
        &set.load_cell_by_id("v4_flash_8k_L04").unwrap(),
        "flash",
        4,
        &USABLE_STEPS,
    );
    let dropped = &set.manifest.provenance["sources"][0]["layers"][0]["dropped_steps"];
    assert!(
        dropped["3"].as_str().unwrap().contains("logits width 100"),
        "{dropped}"
    );
    assert!(
        dropped["4"].as_str().unwrap().contains("hints outside"),
        "{dropped}"
    );
}
