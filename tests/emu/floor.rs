//! kernels/harness/floor.cu's `floor_grid` on the host emulator
//! (tests/ss_emu, g++; skipped with a note where g++ is missing): every
//! non-cluster shape that `floor::shapes` plans, at every block size and with
//! each wave trick (next-wave prefetch, wave stagger), writes the identity
//! pattern into every slot of rows of mixed lengths, and the grid hand-off
//! leaves its two workspace words per row at zero after each of two launches
//! (the second with another part arriving last). The driver's trace shows
//! what the tricks did: the prefetch must send each later row's valid float4
//! prefix once (and nothing past it: the emulator's load check), the stagger
//! must wait exactly the host's plan. Mutations of the kernel text must be
//! caught. The cluster entry runs on the GPU only (tests/gpu/floor.rs).

use crate::support::ss::{batch, gxx_available, kernel_emulator, run_emulator};
use gvr_bench::floor::{check_output, shapes, wave_args, FloorShape, FloorWave, WaveArgs, BLOCKS};
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

/// SMs of the emulated device: few, so that small batches have waves.
const SMS: usize = 4;

/// Residency of the emulated device: 2,048 threads per SM.
fn per_sm(block: u32) -> u32 {
    2048 / block
}

fn wave(b: &Batch, shape: FloorShape) -> WaveArgs {
    shape.wave.map_or(WaveArgs::default(), |w| {
        wave_args(w, b.rows, b.n_max(), SMS, per_sm(shape.block)).expect("a planned trick acts")
    })
}

fn words(b: &Batch, shape: FloorShape) -> Vec<u32> {
    let slice = shape.slice(b.n_max()) as u32;
    let w = wave(b, shape);
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
        w.ahead,
        w.sms,
        w.per_sm,
        w.stagger,
    ]
}

fn run(exe: &std::path::Path, label: &str, b: &Batch, shape: FloorShape) -> Vec<i32> {
    run_traced(exe, label, b, shape).0
}

/// The output and the per-row trace (stagger wait + float4 prefetched).
fn run_traced(
    exe: &std::path::Path,
    label: &str,
    b: &Batch,
    shape: FloorShape,
) -> (Vec<i32>, Vec<i32>) {
    run_emulator(exe, label, &words(b, shape), b)
}

/// The trace a shape must leave: the stagger's planned wait of each
/// first-wave row; each row past the first `ahead` its valid float4 prefix,
/// unless the row has at most k values (never read, so never prefetched).
fn expected_trace(b: &Batch, shape: FloorShape) -> Vec<i32> {
    let w = wave(b, shape);
    (0..b.rows)
        .map(|row| {
            let mut t = 0u64;
            if w.stagger > 0 && row < (w.per_sm as usize) * (w.sms as usize) {
                t += u64::from(w.stagger) * (row / w.sms as usize) as u64 / u64::from(w.per_sm);
            }
            if w.ahead > 0 && row >= w.ahead as usize && b.n[row] as usize > b.k {
                t += u64::from(b.n[row] >> 2);
            }
            t as i32
        })
        .collect()
}

/// Many short rows of mixed lengths: more than two waves of 256-thread CTAs
/// on [`SMS`] SMs, so every trick acts at every block size.
fn many_rows() -> Batch {
    let lengths: Vec<usize> = (0..80)
        .map(|r| [4111, 17, 0, 1030, 2048, 5][r % 6])
        .collect();
    batch(&rows(&lengths), &[], 1024)
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn every_block_and_wave_trick_writes_every_slot_and_does_what_the_host_planned() {
    if !gxx_available("floor.cu") {
        return;
    }
    let exe = emulator(KERNEL);
    let b = many_rows();
    let planned = shapes(b.rows, b.n_max(), SMS, &per_sm);
    for block in BLOCKS {
        for trick in [None, Some(FloorWave::NextWave), Some(FloorWave::Stagger)] {
            assert!(
                planned
                    .iter()
                    .any(|s| s.block == block && s.parts == 1 && s.wave == trick),
                "b{block} {trick:?} not planned: {planned:?}"
            );
        }
    }
    for shape in planned {
        let what = format!("many rows, {}", shape.label());
        let (out, trace) = run_traced(&exe, &what, &b, shape);
        if let Err(why) = check_output(&b, &out) {
            panic!("{what}: {why}");
        }
        assert_eq!(trace, expected_trace(&b, shape), "{what}");
    }
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
fn wave_trick_mutations_are_caught() {
    if !gxx_available("floor.cu") {
        return;
    }
    let b = many_rows();
    let next_wave = FloorShape {
        wave: Some(FloorWave::NextWave),
        ..FloorShape::rows(512)
    };
    let stagger = FloorShape {
        wave: Some(FloorWave::Stagger),
        ..FloorShape::rows(256)
    };
    // The prefetch runs a float4 past the valid prefix: the emulator's load
    // check aborts (rows of 17 and 5 values end inside a float4).
    let past = KERNEL.replacen(
        "const u32 f1 = n >> 2, nw",
        "const u32 f1 = (n + 3u) >> 2, nw",
        1,
    );
    assert_ne!(past, KERNEL, "the prefetch bound moved");
    let exe = emulator(&past);
    assert!(
        std::panic::catch_unwind(|| run(&exe, "prefetch past the row", &b, next_wave)).is_err(),
        "a prefetch past the row went unnoticed"
    );
    // The prefetch sends the row after the next wave's: the trace differs.
    let off_by_one = KERNEL.replacen(
        "const u32 next = row + p.ahead;",
        "const u32 next = row + p.ahead + 1u;",
        1,
    );
    assert_ne!(off_by_one, KERNEL, "the next-wave row moved");
    let exe = emulator(&off_by_one);
    let (_, trace) = run_traced(&exe, "prefetch off by one", &b, next_wave);
    assert_ne!(trace, expected_trace(&b, next_wave));
    // The stagger by row instead of by place on the SM: the trace differs.
    let by_row = KERNEL.replacen("(row / p.sms) / p.per_sm", "(row % p.sms) / p.per_sm", 1);
    assert_ne!(by_row, KERNEL, "the stagger wait moved");
    let exe = emulator(&by_row);
    let (_, trace) = run_traced(&exe, "stagger by row", &b, stagger);
    assert_ne!(trace, expected_trace(&b, stagger));
}

#[test]
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
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
        let planned: Vec<FloorShape> = shapes(b.rows, b.n_max(), 132, &per_sm)
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
#[cfg_attr(no_gxx, ignore = "needs g++ (the host emulator)")]
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
        wave: None,
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
        wave: None,
    };
    let out = run(&exe, "shifted", &b, one);
    assert!(check_output(&b, &out).is_err());
}
