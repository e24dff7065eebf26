//! kernels/floor.cu's `floor_grid` on the host emulator (tests/ss_emu, g++;
//! skipped with a note where g++ is missing): every non-cluster shape that
//! `floor::shapes` plans writes the identity pattern into every slot of rows
//! of mixed lengths, and the grid hand-off leaves its two workspace words
//! per row at zero after each of two launches (the second with another part
//! arriving last). Two mutations of the kernel text must be caught. The
//! cluster entry runs on the H200 only (tests/floor_gpu.rs).

use crate::support::ss::{batch, gxx_available, kernel_emulator, run_emulator};
use gvr_bench::floor::{check_output, shapes, FloorShape};
use gvr_bench::grid::Batch;

const KERNEL: &str = include_str!("../../kernels/harness/floor.cu");
const DRIVER: &str = include_str!("../ss_emu/floor_main.cpp");

fn emulator(kernel: &str) -> std::path::PathBuf {
    kernel_emulator(
        "floor",
        false,
        ("floor.cu", kernel),
        ("floor_main.cpp", DRIVER),
        &[],
    )
}

fn rows(lengths: &[usize]) -> Vec<Vec<f32>> {
    lengths
        .iter()
        .enumerate()
        .map(|(r, &n)| (0..n).map(|i| ((i * 31 + r * 7) % 997) as f32).collect())
        .collect()
}

fn words(b: &Batch, shape: FloorShape) -> Vec<u32> {
    let slice = shape.slice(b.n_max()) as u32;
    vec![
        0x55EE_00F1,
        b.rows as u32,
        shape.block,
        shape.parts,
        b.npad as u32,
        b.k as u32,
        b.npad as u32,
        b.k as u32,
        slice,
    ]
}

fn run(exe: &std::path::Path, label: &str, b: &Batch, shape: FloorShape) -> Vec<i32> {
    run_emulator(exe, label, &words(b, shape), b).0
}

#[test]
fn every_grid_shape_writes_every_slot_and_restores_its_counters() {
    if !gxx_available("floor.cu") {
        return;
    }
    let exe = emulator(KERNEL);
    let batches = [
        (
            "mixed short rows",
            batch(&rows(&[0, 3, 17, 511, 512, 1027, 4111, 9000]), &[], 512),
        ),
        (
            "a long row and a short one",
            batch(&rows(&[70_001, 5]), &[], 2048),
        ),
    ];
    for (label, b) in &batches {
        let planned: Vec<FloorShape> = shapes(b.rows, b.n_max(), 132)
            .into_iter()
            .filter(|s| !s.cluster)
            .collect();
        assert!(
            planned.iter().any(|s| s.parts > 1) || b.n_max() < 8192,
            "{planned:?}"
        );
        for shape in planned {
            let what = format!("{label}, {}", shape.label());
            let out = run(&exe, &what, b, shape);
            if let Err(why) = check_output(b, &out) {
                panic!("{what}: {why}");
            }
        }
    }
}

#[test]
fn mutations_are_caught() {
    if !gxx_available("floor.cu") {
        return;
    }
    let b = batch(&rows(&[9000, 100]), &[], 512);
    let split = FloorShape {
        block: 256,
        parts: 4,
        cluster: false,
        ring: None,
    };
    // The last arriver forgets to restore the arrival counter: the driver's
    // workspace check fails (exit 5).
    let no_restore = KERNEL.replacen("                w[1] = 0u;\n", "", 1);
    assert_ne!(no_restore, KERNEL, "the counter restore moved");
    let exe = emulator(&no_restore);
    let caught = std::panic::catch_unwind(|| run(&exe, "no restore", &b, split))
        .expect_err("a counter left non-zero went unnoticed");
    let message = caught.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("left workspace word"), "{message}");

    // Slot j gets j + 1: the pattern check fails.
    let shifted = KERNEL.replacen(
        "O[j] = slot < n ? (i32)slot : -1;",
        "O[j] = slot + 1u < n ? (i32)(slot + 1u) : -1;",
        1,
    );
    assert_ne!(shifted, KERNEL, "the store moved");
    let exe = emulator(&shifted);
    let one = FloorShape {
        block: 256,
        parts: 1,
        cluster: false,
        ring: None,
    };
    let out = run(&exe, "shifted", &b, one);
    assert!(check_output(&b, &out).is_err());
}
