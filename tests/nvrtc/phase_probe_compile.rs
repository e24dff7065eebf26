//! The phase-probe builds (`gvr-bench phases`, `SS_PHASE_PROBE=1`) of the
//! four self-sampling sources compile for sm_90a and export the stamp array
//! under the name the host reads, with at most one spilled register in any entry
//! (the probe adds a global store per mark from thread 0; the timed builds
//! are untouched, which `scripts/ptx_dump.py` shows). Skips
//! (passes with a note) without libnvrtc unless `CI` is set.

use gvr_bench::gpu::nvrtc::{compile_cubin, compile_options, parse_ptxas_log, DEFAULT_ARCH};
use gvr_bench::gpu::probe::{PROBED_SOURCES, PROBE_DEFINE, STAMPS_SYMBOL};
use gvr_bench::gpu::sources::{declared_entries, SS_CLUS, SS_CLUS_STREAM, SS_MAIN, SS_REG};

/// Bytes of spill stores (and loads) a probe entry may have: one register.
const MAX_PROBE_SPILL: u64 = 4;

#[test]
#[cfg_attr(
    no_nvrtc,
    ignore = "needs libnvrtc (pip install nvidia-cuda-nvrtc==13.0.88; its lib dir on LD_LIBRARY_PATH)"
)]
fn probe_builds_compile_and_export_the_stamp_array() {
    let sources = [SS_MAIN, SS_REG, SS_CLUS, SS_CLUS_STREAM];
    let names: Vec<&str> = sources.iter().map(|s| s.name).collect();
    assert_eq!(
        names, PROBED_SOURCES,
        "the probed sources are the ss family sources"
    );
    for source in &sources {
        let marks = source.code.matches("SS_PROBE(SS_MARK_").count();
        assert!(
            source.code.contains("SS_PROBE_SCOPE();"),
            "{}: no probe scope",
            source.name
        );
        assert!(marks >= 5, "{}: {marks} marks", source.name);
    }
    if !crate::support::nvrtc::nvrtc_or_skip() {
        return;
    }
    for source in &sources {
        let options = compile_options(DEFAULT_ARCH, &[(PROBE_DEFINE, "1".to_string())]);
        let built = compile_cubin(source, &options)
            .unwrap_or_else(|e| panic!("{} with the probe compiles: {e}", source.name));
        assert!(
            built
                .cubin
                .windows(STAMPS_SYMBOL.len())
                .any(|w| w == STAMPS_SYMBOL.as_bytes()),
            "{}: no {STAMPS_SYMBOL} symbol in the probe cubin",
            source.name
        );
        // The stamps must not reshape the code they time: no probe entry
        // spills more than one register. ss_clus_u4 spills one (4 B, 8 B
        // frame) since its counted scan and trimmed threshold phase became
        // the default (docs/decisions.md); its timed build spills
        // nothing (tests/nvrtc/ss_kernel_compile.rs).
        let entries = parse_ptxas_log(&built.log);
        assert_eq!(
            entries.len(),
            declared_entries(source.code).len(),
            "{}: every declared entry in the ptxas log",
            source.name
        );
        for e in entries {
            println!("{} {}: {} registers", source.name, e.name, e.registers);
            assert!(
                e.spill_stores <= MAX_PROBE_SPILL
                    && e.spill_loads <= MAX_PROBE_SPILL
                    && e.stack_frame <= 2 * MAX_PROBE_SPILL,
                "{} {}: the probe build spills {:?}",
                source.name,
                e.name,
                (e.spill_stores, e.spill_loads, e.stack_frame)
            );
        }
        // The default build has no such symbol: the timed kernels carry no probe.
        let plain = compile_cubin(source, &compile_options(DEFAULT_ARCH, &[]))
            .unwrap_or_else(|e| panic!("{} compiles: {e}", source.name));
        assert!(
            !plain
                .cubin
                .windows(STAMPS_SYMBOL.len())
                .any(|w| w == STAMPS_SYMBOL.as_bytes()),
            "{}: the default build exports {STAMPS_SYMBOL}",
            source.name
        );
    }
}
