//! Shared by the NVRTC compile tests: the libnvrtc gate and the resource
//! check every hot kernel entry must pass.

// Each test file uses a subset of these helpers.

use gvr_bench::gpu::nvrtc::{nvrtc_available, CompileReport, EntryInfo, NVRTC_INSTALL_HINT};

/// True when libnvrtc can be used. Without it: a failure under CI (which
/// installs it), a visible SKIPPED line elsewhere.
pub fn nvrtc_or_skip() -> bool {
    if nvrtc_available() {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("libnvrtc not found but CI is set: {NVRTC_INSTALL_HINT}");
    }
    println!("SKIPPED: libnvrtc not found ({NVRTC_INSTALL_HINT})");
    false
}

/// Assert that `entry` compiled with no local stack frame (a dynamically
/// indexed local array would put hot data in local memory without counting as
/// a spill), no spills, registers such that one CTA of `block` threads fits the
/// 64K-register file, and static shared memory within `static_reserve`.
pub fn assert_entry_fits<'r>(
    report: &'r CompileReport,
    entry: &str,
    block: u32,
    static_reserve: usize,
) -> &'r EntryInfo {
    let info = report
        .entries
        .iter()
        .find(|e| e.name == entry)
        .unwrap_or_else(|| panic!("{entry} missing from the ptxas log:\n{}", report.log));
    assert_eq!(
        info.stack_frame, 0,
        "{entry} uses a local stack frame:\n{}",
        report.log
    );
    assert_eq!(
        (info.spill_stores, info.spill_loads),
        (0, 0),
        "{entry} spills"
    );
    assert!(
        info.registers as u64 * block as u64 <= 65_536,
        "{entry}: {} registers",
        info.registers
    );
    assert!(
        info.smem as usize <= static_reserve,
        "{entry}: static smem {} > reserve {static_reserve}",
        info.smem
    );
    info
}

/// Assert that each of `entries` is in `report` with at most `max` registers
/// per thread (`label` names the build in the message).
pub fn assert_registers_at_most(report: &CompileReport, entries: &[String], max: u32, label: &str) {
    for name in entries {
        let entry = report
            .entries
            .iter()
            .find(|e| &e.name == name)
            .unwrap_or_else(|| panic!("{name} missing from the ptxas log of {label}"));
        assert!(
            entry.registers <= max,
            "{name} ({label}): {} registers",
            entry.registers
        );
    }
}

/// Assert that nothing in a ptxas log spills. Device functions kept out of
/// line (`__noinline__`) report their own spills under "Function properties
/// for ...", which [`assert_entry_fits`] does not see.
pub fn assert_no_spill_in_log(log: &str, label: &str) {
    for line in log.lines() {
        if line.contains("spill stores") {
            assert!(
                line.contains(" 0 bytes spill stores") && line.contains(" 0 bytes spill loads"),
                "spill in {label}: {line}\n{log}"
            );
        }
    }
}
