//! Full-grid acceptance: all 886 cells at S = 4 (≈ 1 GB) must generate in
//! minutes on a many-core host and pass every gate. Too large for the
//! regular suite; run on purpose:
//! `GVR_SYNTH_FULL_DIR=/big/disk cargo test --release --test synth_full -- --ignored --nocapture`

use std::path::PathBuf;
use std::time::Instant;

use gvr_bench::synth::validate::validate;
use gvr_bench::synth::{synth, SynthOptions};

#[test]
#[ignore = "generates ~1 GB; run on purpose"]
fn full_grid_generates_and_passes_the_gates() {
    let out = std::env::var_os("GVR_SYNTH_FULL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("gvr-synth-full"));
    let summary = synth(&SynthOptions::new(&out)).expect("synth runs");
    println!("{summary}");
    assert_eq!(summary.cells, 886);
    let started = Instant::now();
    let report = validate(&out).expect("validate runs");
    println!("{report}");
    println!("validate took {:.1} s", started.elapsed().as_secs_f64());
    assert!(report.passed());
}
