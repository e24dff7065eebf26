//! Batch formation from a cell (replicate / independent), pad poisoning,
//! varlen row lengths, and grid-file validation errors.

use std::path::Path;

use gvr_bench::capture::{CellData, CellMeta, Model};
use gvr_bench::grid::{parse_grid, Batch, RowsMode};
use gvr_bench::GvrError;

const PAD: f32 = -7.5;

/// A 3-step Flash-shaped cell with n = [70, 65, 100], npad 128, k = 4:
/// value at (step s, column i) is s·1000 + i; hints are s·10 + slot.
fn cell() -> CellData {
    let npad = 128;
    let n = vec![70u32, 65, 100];
    let mut logits = vec![PAD; 3 * npad];
    for (s, &len) in n.iter().enumerate() {
        for i in 0..len as usize {
            logits[s * npad + i] = (s * 1000 + i) as f32;
        }
    }
    let k: usize = 4;
    CellData {
        meta: CellMeta {
            id: "test_cell".into(),
            model: Model::Flash,
            isl: "4k".into(),
            layer: 2,
            n: 100,
            k: k as u32,
            cr: 4,
            next_n: 1,
        },
        npad,
        pad_value: PAD,
        logits,
        n,
        hints: (0..3)
            .flat_map(|s| (0..k as i32).map(move |j| s * 10 + j))
            .collect(),
        topk: None,
        kv_lens: None,
    }
}

#[test]
fn replicate_repeats_the_last_step() {
    let batch = Batch::form(&cell(), 5, RowsMode::Replicate).unwrap();
    assert_eq!((batch.rows, batch.npad, batch.k), (5, 128, 4));
    assert_eq!(batch.logits.len(), 5 * 128);
    for r in 0..5 {
        assert_eq!(batch.n[r], 100);
        assert_eq!(batch.row(r)[0], 2000.0);
        assert_eq!(batch.row(r)[99], 2099.0);
        assert!(batch.logits[r * 128 + 100..(r + 1) * 128]
            .iter()
            .all(|&v| v == PAD));
        assert_eq!(batch.hints(r), &[20, 21, 22, 23]);
    }
    assert!(batch.varlen.is_none());
}

#[test]
fn independent_cycles_through_steps() {
    let batch = Batch::form(&cell(), 7, RowsMode::Independent).unwrap();
    for r in 0..7 {
        let s = r % 3;
        assert_eq!(batch.n[r], [70, 65, 100][s]);
        assert_eq!(batch.row(r)[0], (s * 1000) as f32);
        assert_eq!(batch.row(r).len(), batch.n[r] as usize);
        assert_eq!(batch.hints(r)[0], (s * 10) as i32);
        let pad_start = r * 128 + batch.n[r] as usize;
        assert!(batch.logits[pad_start..(r + 1) * 128]
            .iter()
            .all(|&v| v == PAD));
    }
}

#[test]
fn poison_pad_touches_only_the_pad() {
    let mut batch = Batch::form(&cell(), 4, RowsMode::Independent).unwrap();
    let before = batch.clone();
    batch.poison_pad(3e38);
    for r in 0..4 {
        let n = batch.n[r] as usize;
        assert_eq!(batch.row(r), before.row(r));
        assert!(batch.logits[r * 128 + n..(r + 1) * 128]
            .iter()
            .all(|&v| v == 3e38));
    }
}

#[test]
fn form_rejects_inconsistent_cells() {
    let mut bad = cell();
    bad.logits.pop();
    let err = Batch::form(&bad, 2, RowsMode::Replicate).unwrap_err();
    assert!(err.to_string().contains("logits"), "{err}");
    let mut bad = cell();
    bad.n[1] = 129;
    assert!(Batch::form(&bad, 2, RowsMode::Replicate)
        .unwrap_err()
        .to_string()
        .contains("n[1]"));
    let mut bad = cell();
    bad.hints.truncate(5);
    assert!(Batch::form(&bad, 2, RowsMode::Replicate)
        .unwrap_err()
        .to_string()
        .contains("hints"));
    assert!(Batch::form(&cell(), 0, RowsMode::Replicate).is_err());
    let mut bad = cell();
    bad.n.clear();
    bad.logits.clear();
    bad.hints.clear();
    assert!(Batch::form(&bad, 1, RowsMode::Replicate).is_err());
}

#[test]
fn varlen_row_lengths_follow_the_contract() {
    // V4 (cr 4), next_n 3: kv = n·cr + next_n − 1 gives n for the last MTP row.
    let source: Vec<f32> = (0..400).map(|i| i as f32).collect();
    let kv_lens = [0u32, 2, 100 * 4 + 2, 17];
    let batch = Batch::varlen(&[source.as_slice(); 4], &kv_lens, 3, 4, 8, None).unwrap();
    assert_eq!(batch.rows, 12);
    let expected: Vec<u32> = (0..12)
        .map(|r| Batch::varlen_row_len(kv_lens[r / 3], 3, r, 4))
        .collect();
    assert_eq!(batch.n, expected);
    // Zero windows: kv < next_n.
    assert_eq!(&batch.n[0..6], &[0, 0, 0, 0, 0, 0]);
    // Rows of request 2: (402 − 3 + j + 1) / 4 = 100, 100, 100.
    assert_eq!(&batch.n[6..9], &[100, 100, 100]);
    // Request 3: (17 − 3 + j + 1) / 4 = 3, 4, 4.
    assert_eq!(&batch.n[9..12], &[3, 4, 4]);
    assert_eq!(batch.npad, 128);
    assert_eq!(batch.row(7)[99], 99.0);
    assert!(batch.hints.iter().all(|&h| h == -1));
    let v = batch.varlen.as_ref().unwrap();
    assert_eq!(
        (v.next_n, v.compress_ratio, v.kv_lens.as_slice()),
        (3, 4, &kv_lens[..])
    );

    // V3.2 (cr 1, next_n 1): n = kv.
    let batch = Batch::varlen(&[&source[..300], &source[..5]], &[300, 5], 1, 1, 8, None).unwrap();
    assert_eq!(batch.n, vec![300, 5]);
    assert_eq!(batch.npad, 320);
}

#[test]
fn varlen_rejects_bad_inputs() {
    let source = vec![0.0f32; 50];
    assert!(
        Batch::varlen(&[source.as_slice()], &[100], 1, 1, 4, None).is_err(),
        "source too short"
    );
    assert!(
        Batch::varlen(&[source.as_slice()], &[10], 0, 1, 4, None).is_err(),
        "next_n 0"
    );
    assert!(
        Batch::varlen(&[source.as_slice()], &[10], 1, 0, 4, None).is_err(),
        "cr 0"
    );
    assert!(
        Batch::varlen(&[source.as_slice(); 3], &[10, 10], 1, 1, 4, None).is_err(),
        "row count"
    );
    assert!(
        Batch::varlen(&[source.as_slice()], &[10], 1, 1, 4, Some(&[0; 3])).is_err(),
        "hint count"
    );
    let per_row = Batch::varlen(&[source.as_slice(); 2], &[10], 2, 1, 4, Some(&[1; 8])).unwrap();
    assert_eq!(per_row.n, vec![9, 10]);
}

fn grid_error(text: &str) -> String {
    let err = parse_grid(Path::new("g.csv"), text).unwrap_err();
    assert!(matches!(err, GvrError::Input { .. }), "{err}");
    assert_eq!(err.exit_code(), 2);
    err.to_string()
}

const HEADER: &str = "cell,model,isl,layer,n,k,cr,next_n\n";

#[test]
fn grid_loader_names_file_line_and_field() {
    let ok = format!("{HEADER}v4_flash_4k_L02,flash,4k,2,1027,512,4,1\n");
    assert_eq!(parse_grid(Path::new("g.csv"), &ok).unwrap().len(), 1);

    let e = grid_error(&format!("{HEADER}a,v5,4k,2,1027,512,4,1\n"));
    assert!(
        e.starts_with("g.csv: line 2: model: unknown model `v5`"),
        "{e}"
    );
    let e = grid_error(&format!("{HEADER}a,flash,4k,2,1027,256,4,1\n"));
    assert!(e.contains("line 2: k: K = 256 is not one of"), "{e}");
    let e = grid_error(&format!("{HEADER}a,flash,4k,2,1027,1024,4,1\n"));
    assert!(e.contains("k: K = 1024 does not match model flash"), "{e}");
    let e = grid_error(&format!("{HEADER}a,pro,4k,2,1027,1024,1,1\n"));
    assert!(e.contains("cr: cr = 1 does not match model pro"), "{e}");
    let e = grid_error(&format!("{HEADER}a,flash,4k,2,0,512,4,1\n"));
    assert!(e.contains("line 2: n:"), "{e}");
    let e = grid_error(&format!(
        "{HEADER}a,flash,4k,2,1027,512,4,1\nb,flash,4k,2,1027,512,4,1\na,flash,4k,2,1027,512,4,1\n"
    ));
    assert!(
        e.contains("line 4: cell: duplicate cell id `a` (first on line 2)"),
        "{e}"
    );
    let e = grid_error(&format!("{HEADER}a,flash,4k,x,1027,512,4,1\n"));
    assert!(e.contains("layer: `x` is not"), "{e}");
    let e = grid_error(&format!("{HEADER}a,flash,4k,2,1027,512,4\n"));
    assert!(e.contains("expected 8 fields"), "{e}");
    let e = grid_error("cell,model,n\n");
    assert!(e.contains("line 1: header"), "{e}");
    grid_error("");
    grid_error(HEADER);
}
