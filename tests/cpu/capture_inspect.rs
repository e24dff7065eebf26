//! `capture inspect`: the summary table over a written capture set.

use std::path::Path;

use gvr_bench::capture::format::{npad_for, Source};
use gvr_bench::capture::inspect::{inspect, PER_CELL_LIMIT};
use gvr_bench::capture::load::{manifest_entry, write_cell, write_manifest};
use gvr_bench::capture::{CellData, CellMeta, Manifest, Model, FORMAT_VERSION};

/// A Flash cell whose step s has n = base + s and logits equal to the index,
/// so the top-512 of step s is [n-512, n). Hints of step s are the top-512
/// of step s-1 shifted by `hint_shift` positions (clamped into range).
fn cell(id: &str, base_n: u32, steps: usize, hint_shift: i32) -> CellData {
    let k = 512;
    let n: Vec<u32> = (0..steps as u32).map(|s| base_n + s).collect();
    let npad = npad_for(*n.last().unwrap() as usize);
    let mut logits = vec![f32::MIN; steps * npad];
    let mut hints = Vec::with_capacity(steps * k);
    for (s, &n_s) in n.iter().enumerate() {
        for i in 0..n_s as usize {
            logits[s * npad + i] = i as f32;
        }
        let prev_n = if s == 0 { n_s } else { n[s - 1] } as i32;
        for j in 0..k as i32 {
            hints.push((prev_n - k as i32 + j - hint_shift).clamp(0, n_s as i32 - 1));
        }
    }
    CellData {
        meta: CellMeta {
            id: id.into(),
            model: Model::Flash,
            isl: "4k".into(),
            layer: 2,
            n: *n.last().unwrap(),
            k: k as u32,
            cr: 4,
            next_n: 1,
        },
        npad,
        pad_value: f32::MIN,
        logits,
        n,
        hints,
        topk: None,
        kv_lens: None,
    }
}

fn write_set(dir: &Path, cells: &[CellData]) {
    let mut entries = Vec::new();
    for c in cells {
        let file = format!("{}.safetensors", c.meta.id);
        write_cell(dir, &file, c).unwrap();
        entries.push(manifest_entry(c, &file));
    }
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        source: Source::Synthetic,
        provenance: serde_json::Value::Null,
        cells: entries,
    };
    write_manifest(dir, &manifest).unwrap();
}

fn line_of<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starting with {start:?} in\n{text}"))
}

#[test]
fn per_cell_table_reports_ranges_stats_and_overlap() {
    let dir = tempfile::tempdir().unwrap();
    // Hints shifted by 0: top-K of s-1 is [n-1-512, n-1): 511 of 512 hit.
    // Hints shifted by 512: disjoint from the top-K: overlap 0.
    write_set(
        dir.path(),
        &[
            cell("hit_cell", 1000, 3, 0),
            cell("miss_cell", 2000, 4, 512),
        ],
    );
    let text = inspect(dir.path()).unwrap();
    assert!(text.contains("source synthetic"), "{text}");
    assert!(text.contains("cells 2"), "{text}");
    assert!(text.contains("cells per model: flash 2"), "{text}");
    assert!(text.contains("N range (all steps): 1000 .. 2003"), "{text}");
    assert!(text.contains("steps per cell: 3 .. 4"), "{text}");

    let hit: Vec<&str> = line_of(&text, "hit_cell").split_whitespace().collect();
    // id K steps n_min n_max min max mean std nonfinite overlap
    assert_eq!(&hit[1..5], ["512", "3", "1000", "1002"]);
    assert_eq!(hit[5], "0.0000");
    assert_eq!(hit[6], "1001.0000");
    let expected_overlap = 511.0 / 512.0;
    let overlap: f64 = hit[10].parse().unwrap();
    assert!((overlap - expected_overlap).abs() < 1e-4, "{overlap}");

    let miss: Vec<&str> = line_of(&text, "miss_cell").split_whitespace().collect();
    assert_eq!(miss[10], "0.0000");
}

#[test]
fn large_sets_are_aggregated_per_model() {
    let dir = tempfile::tempdir().unwrap();
    let cells: Vec<CellData> = (0..=PER_CELL_LIMIT)
        .map(|i| cell(&format!("c{i:02}"), 600, 2, 0))
        .collect();
    write_set(dir.path(), &cells);
    let text = inspect(dir.path()).unwrap();
    assert!(text.contains("per model (pooled over 41 cells)"), "{text}");
    let flash: Vec<&str> = line_of(&text, "flash (41)").split_whitespace().collect();
    assert_eq!(flash[2], "512");
    assert_eq!(flash[3], "82", "total steps");
    assert!(!text.contains("c00"), "no per-cell rows when aggregated");
}

#[test]
fn inspect_reports_loader_errors() {
    let dir = tempfile::tempdir().unwrap();
    let err = inspect(dir.path()).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(err.to_string().contains("manifest.json"));
}

#[test]
fn nan_in_valid_prefixes_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = cell("nan_cell", 1000, 3, 0);
    let npad = c.npad;
    c.logits[3] = f32::NAN;
    c.logits[npad + 7] = f32::NAN;
    c.logits[npad + 9] = f32::NAN;
    write_set(dir.path(), &[c.clone()]);
    assert_eq!(c.nan_counts(), (3, 2));
    let text = inspect(dir.path()).unwrap();
    assert!(
        text.contains("NaN in valid prefixes: 3 value(s) in 2 row(s)"),
        "{text}"
    );
}
