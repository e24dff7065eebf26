//! Phase probe: where one launch of a self-sampling kernel spends its time.
//!
//! Built with `SS_PHASE_PROBE=1` (kernels/ss/common.cuh), thread 0 of every
//! CTA writes the SM clock at each mark it passes into row `cta` of the module
//! global [`STAMPS_SYMBOL`], plus its pass count and the global timer at entry
//! and exit. This module names the marks and turns one launch's stamps into
//! per-phase statistics; it is pure (the [`crate::gpu::Gpu`] methods read the
//! stamps, `run::phases` drives the launches).
//!
//! A phase is the interval that ends at a mark, measured from the previous
//! mark the CTA passed: a family without a sample has no `sample` phase and
//! its `threshold` phase starts at `length`. In a grid of one wave the CTA
//! that left last sets the launch's time, so its breakdown (the critical
//! CTA) is reported next to the median over all CTAs; in a grid of several
//! waves it is a CTA of the last wave, and the median CTA says more.

use serde::Serialize;

use crate::stats::median;

/// The `-D` name that turns the probe on in the ss sources.
pub const PROBE_DEFINE: &str = "SS_PHASE_PROBE";
/// The module global the kernels write (`extern "C"`, so unmangled).
pub const STAMPS_SYMBOL: &str = "gvr_phase_stamps";
/// CTAs with a stamp row (later CTAs of a launch go unprobed).
pub const PROBE_CTAS: usize = 8192;
/// u64 words per CTA row.
pub const PROBE_SLOTS: usize = 16;
/// Kernel sources that carry the marks.
pub const PROBED_SOURCES: [&str; 4] = ["ss/main.cu", "ss/reg.cu", "ss/reg_clus.cu", "ss/clus.cu"];

const SLOT_PASSES: usize = 12;
const SLOT_GT_ENTRY: usize = 13;
const SLOT_GT_EXIT: usize = 14;
const SLOT_GRID_CTAS: usize = 15;

/// The clock marks, in the order a CTA passes them. Their stamp slots are
/// the `SS_MARK_*` numbers of kernels/ss/common.cuh: the index in [`MARKS`],
/// except `Hist`, added later in the free slot 9.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Mark {
    Entry,
    Len,
    Sample,
    Hist,
    Threshold,
    Pass,
    Handoff,
    Verify,
    Emit,
    Exit,
}

pub const MARKS: [Mark; 10] = [
    Mark::Entry,
    Mark::Len,
    Mark::Sample,
    Mark::Hist,
    Mark::Threshold,
    Mark::Pass,
    Mark::Handoff,
    Mark::Verify,
    Mark::Emit,
    Mark::Exit,
];

impl Mark {
    fn slot(self) -> usize {
        match self {
            Mark::Entry => 0,
            Mark::Len => 1,
            Mark::Sample => 2,
            Mark::Threshold => 3,
            Mark::Pass => 4,
            Mark::Handoff => 5,
            Mark::Verify => 6,
            Mark::Emit => 7,
            Mark::Exit => 8,
            Mark::Hist => 9,
        }
    }

    /// Name of the phase that ends at this mark.
    pub fn phase(self) -> &'static str {
        match self {
            Mark::Entry => "entry",
            Mark::Len => "length",
            Mark::Sample => "sample",
            Mark::Hist => "histogram",
            Mark::Threshold => "threshold",
            Mark::Pass => "pass",
            Mark::Handoff => "hand-off",
            Mark::Verify => "verify",
            Mark::Emit => "emit",
            Mark::Exit => "finish",
        }
    }
}

/// The phases in report order (every mark after entry).
pub fn phase_names() -> impl Iterator<Item = &'static str> {
    MARKS[1..].iter().map(|m| m.phase())
}

/// One probed CTA of a launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CtaStamps {
    /// Linear CTA index ((z·gy + y)·gx + x).
    pub cta: usize,
    /// SM clock at each mark, by [`MARKS`] position (`None`: not passed).
    pub clocks: [Option<u64>; MARKS.len()],
    /// Streaming passes (or histogram passes) the CTA made.
    pub passes: u64,
    /// Global timer (ns) at entry and exit.
    pub gt_entry: u64,
    pub gt_exit: u64,
    /// The launch's CTA count (CTA 0 only; 0 elsewhere).
    pub grid_ctas: u64,
}

impl CtaStamps {
    /// (phase, cycles) of every mark passed after entry, each from the
    /// previous mark passed; an error when the clocks run backwards (a
    /// broken probe, not a slow phase).
    pub fn intervals(&self) -> Result<Vec<(&'static str, u64)>, String> {
        let mut prev = self.clocks[0].ok_or_else(|| format!("CTA {}: no entry stamp", self.cta))?;
        let mut out = Vec::new();
        for (mark, clock) in MARKS.iter().zip(self.clocks.iter()).skip(1) {
            let Some(clock) = *clock else { continue };
            let cycles = clock.checked_sub(prev).ok_or_else(|| {
                format!(
                    "CTA {}: the {} stamp is before the previous one (clock {clock} < {prev})",
                    self.cta,
                    mark.phase()
                )
            })?;
            out.push((mark.phase(), cycles));
            prev = clock;
        }
        Ok(out)
    }

    /// The clock at `mark` (`None`: not passed).
    fn clock(&self, mark: Mark) -> Option<u64> {
        MARKS
            .iter()
            .position(|&m| m == mark)
            .and_then(|i| self.clocks[i])
    }

    /// Entry to exit in cycles (0 without an exit stamp).
    pub fn span_cycles(&self) -> u64 {
        match (self.clocks[0], self.clock(Mark::Exit)) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => 0,
        }
    }
}

/// The CTAs of a stamp array (`PROBE_SLOTS` words per CTA) that entered.
pub fn parse_stamps(raw: &[u64]) -> Vec<CtaStamps> {
    raw.chunks_exact(PROBE_SLOTS)
        .enumerate()
        .filter(|(_, row)| row[0] != 0)
        .map(|(cta, row)| {
            let mut clocks = [None; MARKS.len()];
            for (mark, clock) in MARKS.iter().zip(clocks.iter_mut()) {
                let stamp = row[mark.slot()];
                *clock = (stamp != 0).then_some(stamp);
            }
            CtaStamps {
                cta,
                clocks,
                passes: row[SLOT_PASSES],
                gt_entry: row[SLOT_GT_ENTRY],
                gt_exit: row[SLOT_GT_EXIT],
                grid_ctas: row[SLOT_GRID_CTAS],
            }
        })
        .collect()
}

/// One phase over the CTAs that passed its mark.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseStat {
    pub phase: &'static str,
    pub ctas: usize,
    pub median_cycles: f64,
    pub max_cycles: u64,
}

/// One probed launch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaunchPhases {
    /// CTAs with stamps.
    pub ctas: usize,
    /// CTAs the launch had (from CTA 0; `None` when CTA 0 left no stamps).
    /// More than `ctas`: CTAs past [`PROBE_CTAS`] went unprobed.
    pub grid_ctas: Option<u64>,
    /// Every phase some CTA passed, in mark order.
    pub phases: Vec<PhaseStat>,
    /// The CTA that left last (global timer) and its phases: the chain
    /// that set the launch's time.
    pub critical_cta: usize,
    pub critical: Vec<(&'static str, u64)>,
    pub span_median_cycles: f64,
    pub span_max_cycles: u64,
    /// First entry to last exit, global timer (ns).
    pub launch_ns: u64,
    /// Last entry minus first entry (ns): how long the grid took to start.
    pub entry_skew_ns: u64,
    /// Most passes of any CTA, and how many CTAs made more than one.
    pub passes_max: u64,
    pub retried_ctas: usize,
    /// SM clock: the cycles over the global-timer ns of the CTAs that ran
    /// at least 2 µs, summed (a coarse timer's rounding averages out);
    /// `None` when none did.
    pub clock_ghz: Option<f64>,
}

/// Statistics of one launch's CTAs; an error when no CTA left stamps or a
/// CTA's clocks run backwards.
pub fn summarize(ctas: &[CtaStamps]) -> Result<LaunchPhases, String> {
    if ctas.is_empty() {
        return Err("no CTA left phase stamps (was the kernel built with the probe?)".into());
    }
    let mut per_phase: Vec<(&'static str, Vec<u64>)> =
        phase_names().map(|p| (p, Vec::new())).collect();
    let mut intervals = Vec::with_capacity(ctas.len());
    for cta in ctas {
        let iv = cta.intervals()?;
        for &(phase, cycles) in &iv {
            if let Some(slot) = per_phase.iter_mut().find(|(p, _)| *p == phase) {
                slot.1.push(cycles);
            }
        }
        intervals.push(iv);
    }
    let phases = per_phase
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(phase, v)| {
            let f: Vec<f64> = v.iter().map(|&c| c as f64).collect();
            PhaseStat {
                phase,
                ctas: v.len(),
                median_cycles: median(&f).unwrap_or(0.0),
                max_cycles: v.iter().copied().max().unwrap_or(0),
            }
        })
        .collect();
    let last = (0..ctas.len())
        .max_by_key(|&i| (ctas[i].gt_exit, ctas[i].span_cycles()))
        .unwrap_or(0);
    let spans: Vec<f64> = ctas.iter().map(|c| c.span_cycles() as f64).collect();
    let gt_first = ctas.iter().map(|c| c.gt_entry).min().unwrap_or(0);
    let gt_last_entry = ctas.iter().map(|c| c.gt_entry).max().unwrap_or(0);
    let gt_last_exit = ctas.iter().map(|c| c.gt_exit).max().unwrap_or(0);
    let long: Vec<&CtaStamps> = ctas
        .iter()
        .filter(|c| c.gt_exit >= c.gt_entry + 2_000 && c.span_cycles() > 0)
        .collect();
    let long_cycles: u64 = long.iter().map(|c| c.span_cycles()).sum();
    let long_ns: u64 = long.iter().map(|c| c.gt_exit - c.gt_entry).sum();
    Ok(LaunchPhases {
        ctas: ctas.len(),
        grid_ctas: ctas.iter().find(|c| c.cta == 0).map(|c| c.grid_ctas),
        phases,
        critical_cta: ctas[last].cta,
        critical: intervals[last].clone(),
        span_median_cycles: median(&spans).unwrap_or(0.0),
        span_max_cycles: ctas.iter().map(|c| c.span_cycles()).max().unwrap_or(0),
        launch_ns: gt_last_exit.saturating_sub(gt_first),
        entry_skew_ns: gt_last_entry.saturating_sub(gt_first),
        passes_max: ctas.iter().map(|c| c.passes).max().unwrap_or(0),
        retried_ctas: ctas.iter().filter(|c| c.passes > 1).count(),
        clock_ghz: (long_ns > 0).then(|| long_cycles as f64 / long_ns as f64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stamp row: clocks at the given marks, passes, global timer.
    fn row(marks: &[(Mark, u64)], passes: u64, gt: (u64, u64)) -> [u64; PROBE_SLOTS] {
        let mut r = [0u64; PROBE_SLOTS];
        for &(m, c) in marks {
            r[m.slot()] = c;
        }
        r[SLOT_PASSES] = passes;
        r[SLOT_GT_ENTRY] = gt.0;
        r[SLOT_GT_EXIT] = gt.1;
        r
    }

    #[test]
    fn marks_follow_the_kernel_slot_numbers() {
        let header = include_str!("../../kernels/ss/common.cuh");
        for mark in MARKS {
            let name = format!("{mark:?}").to_uppercase();
            let define = format!("#define SS_MARK_{name} {}u", mark.slot());
            assert!(header.contains(&define), "ss_common.cuh lacks `{define}`");
        }
        for (name, slot) in [
            ("PASSES", SLOT_PASSES),
            ("GT_ENTRY", SLOT_GT_ENTRY),
            ("GT_EXIT", SLOT_GT_EXIT),
            ("GRID_CTAS", SLOT_GRID_CTAS),
        ] {
            let define = format!("#define SS_SLOT_{name} {slot}u");
            assert!(header.contains(&define), "ss_common.cuh lacks `{define}`");
        }
        let mut slots: Vec<usize> = MARKS.iter().map(|m| m.slot()).collect();
        slots.sort_unstable();
        slots.dedup();
        assert_eq!(slots.len(), MARKS.len(), "two marks share a slot");
        assert!(
            slots.iter().all(|&s| s < SLOT_PASSES),
            "a mark overlaps the counters"
        );
        assert!(header.contains(&format!("#define SS_PROBE_CTAS {PROBE_CTAS}u")));
        assert!(header.contains(&format!("#define SS_PROBE_SLOTS {PROBE_SLOTS}u")));
        assert!(header.contains("gvr_phase_stamps[SS_PROBE_CTAS * SS_PROBE_SLOTS]"));
        assert!(crate::gpu::sources::SS_KNOBS.contains(&format!("#ifndef {PROBE_DEFINE}")));
    }

    #[test]
    fn the_histogram_stamp_in_slot_9_is_read_between_sample_and_threshold() {
        let r = row(
            &[
                (Mark::Entry, 1000),
                (Mark::Len, 1100),
                (Mark::Sample, 1300),
                (Mark::Hist, 1600),
                (Mark::Threshold, 2000),
                (Mark::Exit, 2500),
            ],
            1,
            (10, 20),
        );
        assert_eq!(r[9], 1600, "the histogram stamp's slot");
        let ctas = parse_stamps(&r);
        assert_eq!(
            ctas[0].intervals().unwrap(),
            vec![
                ("length", 100),
                ("sample", 200),
                ("histogram", 300),
                ("threshold", 400),
                ("finish", 500)
            ]
        );
        assert_eq!(ctas[0].span_cycles(), 1500);
    }

    #[test]
    fn skipped_marks_fold_into_the_next_phase() {
        // A reg-like CTA: no sample, no hand-off.
        let r = row(
            &[
                (Mark::Entry, 1000),
                (Mark::Len, 1400),
                (Mark::Threshold, 3000),
                (Mark::Pass, 3500),
                (Mark::Verify, 3600),
                (Mark::Emit, 4000),
                (Mark::Exit, 4100),
            ],
            1,
            (10, 20),
        );
        let ctas = parse_stamps(&r);
        assert_eq!(ctas.len(), 1);
        assert_eq!(
            ctas[0].intervals().unwrap(),
            vec![
                ("length", 400),
                ("threshold", 1600),
                ("pass", 500),
                ("verify", 100),
                ("emit", 400),
                ("finish", 100)
            ]
        );
        assert_eq!(ctas[0].span_cycles(), 3100);
    }

    #[test]
    fn backwards_clocks_are_an_error_not_a_phase() {
        let r = row(&[(Mark::Entry, 1000), (Mark::Len, 900)], 0, (1, 2));
        let err = summarize(&parse_stamps(&r)).unwrap_err();
        assert!(err.contains("length stamp is before"), "{err}");
        assert!(summarize(&[])
            .unwrap_err()
            .contains("no CTA left phase stamps"));
    }

    #[test]
    fn the_last_cta_to_leave_is_the_critical_one() {
        // Two SPLIT parts that leave after their pass, and the finisher.
        let part = |entry: u64, gt: u64| {
            row(
                &[
                    (Mark::Entry, entry),
                    (Mark::Len, entry + 100),
                    (Mark::Sample, entry + 900),
                    (Mark::Threshold, entry + 1200),
                    (Mark::Pass, entry + 3000),
                    (Mark::Exit, entry + 3100),
                ],
                1,
                (gt, gt + 1600),
            )
        };
        let finisher = row(
            &[
                (Mark::Entry, 50),
                (Mark::Len, 150),
                (Mark::Sample, 950),
                (Mark::Threshold, 1250),
                (Mark::Pass, 3050),
                (Mark::Handoff, 3300),
                (Mark::Verify, 3700),
                (Mark::Emit, 4200),
                (Mark::Exit, 5050),
            ],
            2,
            (1000, 3500),
        );
        let mut raw = Vec::new();
        let mut first = part(10, 1000);
        first[SLOT_GRID_CTAS] = 4;
        raw.extend_from_slice(&first);
        raw.extend_from_slice(&[0u64; PROBE_SLOTS]); // a CTA past the grid: no stamps
        raw.extend_from_slice(&finisher);
        raw.extend_from_slice(&part(20, 1200));
        let s = summarize(&parse_stamps(&raw)).unwrap();
        assert_eq!(s.ctas, 3);
        assert_eq!(s.grid_ctas, Some(4));
        assert_eq!(s.critical_cta, 2);
        assert_eq!(s.critical.last(), Some(&("finish", 850)));
        assert_eq!(s.launch_ns, 2500);
        assert_eq!(s.entry_skew_ns, 200);
        assert_eq!((s.passes_max, s.retried_ctas), (2, 1));
        let pass = s.phases.iter().find(|p| p.phase == "pass").unwrap();
        assert_eq!(
            (pass.ctas, pass.median_cycles, pass.max_cycles),
            (3, 1800.0, 1800)
        );
        let handoff = s.phases.iter().find(|p| p.phase == "hand-off").unwrap();
        assert_eq!(handoff.ctas, 1);
        // The parts' exit follows their pass; the finisher's its emit.
        let finish = s.phases.iter().find(|p| p.phase == "finish").unwrap();
        assert_eq!((finish.median_cycles, finish.max_cycles), (100.0, 850));
        assert_eq!(s.span_max_cycles, 5000);
        // 2.5 µs of global timer over 5000 cycles: 2 GHz; the parts ran 1.6 µs (too short).
        assert_eq!(s.clock_ghz, Some(2.0));
    }
}
