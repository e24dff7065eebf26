//! Wall-time accounting of a campaign: where the run's seconds go (loading
//! captures, forming batches, staging, warm-up, timed reps, read-back,
//! waiting for checkers, the report). Printed at the end of `grid` and
//! written to `phases.json` in the run directory.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{GvrError, Result};

/// File in the run directory holding the breakdown.
pub const PHASES_FILE: &str = "phases.json";

/// One accounted phase of the main (GPU-driving) thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Before the case loop: opening captures and device, building arms and
    /// the timer, the manifest (hashes the binary and sources).
    Setup,
    /// Waiting for the loader thread to hand over the next cell.
    LoadCaptures,
    /// Forming a case's host batch from its cell.
    BuildBatch,
    /// One upload of a case's inputs shared by every GPU arm.
    StageShared,
    /// Each arm's own `stage` (device copy of the shared inputs, plans,
    /// first-time kernel compilation).
    Stage,
    /// Before the case loop: the planned kernel builds compiled in parallel
    /// (`run::prebuild`).
    Prebuild,
    /// Poisoning outputs / zeroing scratch.
    Poison,
    /// Enqueuing (GPU) or running (CPU) the untimed warm-up calls.
    Warmup,
    /// Enqueuing the timed reps and waiting for the GPU to finish them.
    TimedReps,
    /// Collecting CUPTI records / event times and splitting them into reps.
    TimingCollect,
    /// Copying outputs back to the host.
    ReadBack,
    /// `--floor`: every shape of a case's latency floor (its staging,
    /// screen, full-protocol reps and output checks).
    Floor,
    /// The main thread blocked because every checker was busy, plus the
    /// final wait for the checkers at the end of the run.
    CheckWait,
    /// Writing the report after the run.
    Report,
    /// NVRTC compilation (a part of `stage`/`warmup`, shown separately).
    CompileInside,
}

impl Phase {
    pub fn label(self) -> &'static str {
        match self {
            Phase::Setup => "setup",
            Phase::LoadCaptures => "load captures",
            Phase::BuildBatch => "build batch",
            Phase::StageShared => "stage (shared upload)",
            Phase::Stage => "stage (per arm)",
            Phase::Prebuild => "kernel prebuild (parallel)",
            Phase::Poison => "poison",
            Phase::Warmup => "warm-up",
            Phase::TimedReps => "timed reps",
            Phase::TimingCollect => "timing collect",
            Phase::ReadBack => "read-back",
            Phase::Floor => "floor (every shape)",
            Phase::CheckWait => "check wait",
            Phase::Report => "report",
            Phase::CompileInside => "  of which NVRTC compile",
        }
    }

    /// Phases that are part of another phase's time (not added to the total).
    pub fn is_nested(self) -> bool {
        matches!(self, Phase::CompileInside)
    }
}

/// Accumulated wall time per phase.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PhaseTimes {
    totals: BTreeMap<Phase, Duration>,
}

impl PhaseTimes {
    pub fn add(&mut self, phase: Phase, elapsed: Duration) {
        *self.totals.entry(phase).or_default() += elapsed;
    }

    /// Run `f`, charging its wall time to `phase`.
    pub fn time<T>(&mut self, phase: Phase, f: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let value = f();
        self.add(phase, started.elapsed());
        value
    }

    pub fn merge(&mut self, other: &PhaseTimes) {
        for (&phase, &elapsed) in &other.totals {
            self.add(phase, elapsed);
        }
    }

    pub fn get(&self, phase: Phase) -> Duration {
        self.totals.get(&phase).copied().unwrap_or_default()
    }

    /// Sum of the top-level (not nested) phases.
    pub fn accounted(&self) -> Duration {
        self.totals
            .iter()
            .filter(|(p, _)| !p.is_nested())
            .map(|(_, d)| *d)
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.totals.is_empty()
    }

    /// Summary of a run of `wall` seconds over `case_arms` measured pairs.
    pub fn summary(&self, wall: Duration, cases: usize, case_arms: usize) -> PhaseSummary {
        let wall_s = wall.as_secs_f64();
        let fraction = |s: f64| if wall_s > 0.0 { s / wall_s } else { 0.0 };
        let mut phases: Vec<PhaseEntry> = self
            .totals
            .iter()
            .map(|(&phase, d)| PhaseEntry {
                phase,
                label: phase.label().trim().to_string(),
                seconds: d.as_secs_f64(),
                fraction: fraction(d.as_secs_f64()),
            })
            .collect();
        let other = wall.saturating_sub(self.accounted()).as_secs_f64();
        phases.sort_by_key(|e| e.phase);
        PhaseSummary {
            wall_s,
            unaccounted_s: other,
            cases,
            case_arms,
            ms_per_case_arm: if case_arms > 0 {
                wall_s * 1e3 / case_arms as f64
            } else {
                0.0
            },
            phases,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseEntry {
    pub phase: Phase,
    pub label: String,
    pub seconds: f64,
    /// Share of the run's wall time.
    pub fraction: f64,
}

/// What `phases.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseSummary {
    pub wall_s: f64,
    /// Wall time no phase accounts for (setup, manifest, progress, loop glue).
    pub unaccounted_s: f64,
    pub cases: usize,
    /// (case, arm) pairs measured (not skipped, not unsupported).
    pub case_arms: usize,
    pub ms_per_case_arm: f64,
    pub phases: Vec<PhaseEntry>,
}

impl PhaseSummary {
    pub fn write(&self, run_dir: &Path) -> Result<()> {
        let path = run_dir.join(PHASES_FILE);
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| GvrError::Other(anyhow::anyhow!("phases.json: {e}")))?;
        std::fs::write(&path, text + "\n").map_err(|e| GvrError::io(&path, e))
    }

    pub fn read(run_dir: &Path) -> Result<PhaseSummary> {
        let path = run_dir.join(PHASES_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| GvrError::io(&path, e))?;
        serde_json::from_str(&text).map_err(|e| GvrError::input(&path, "phases", e.to_string()))
    }

    /// Add `elapsed` to `phase` (and to the wall time) of an existing
    /// `phases.json`; used for work after the campaign (the report). No file:
    /// nothing to do.
    pub fn add_to_file(run_dir: &Path, phase: Phase, elapsed: Duration) -> Result<()> {
        if !run_dir.join(PHASES_FILE).exists() {
            return Ok(());
        }
        let mut summary = Self::read(run_dir)?;
        let seconds = elapsed.as_secs_f64();
        summary.wall_s += seconds;
        match summary.phases.iter_mut().find(|e| e.phase == phase) {
            Some(entry) => entry.seconds += seconds,
            None => summary.phases.push(PhaseEntry {
                phase,
                label: phase.label().trim().to_string(),
                seconds,
                fraction: 0.0,
            }),
        }
        let wall = summary.wall_s;
        if summary.case_arms > 0 {
            summary.ms_per_case_arm = wall * 1e3 / summary.case_arms as f64;
        }
        for entry in &mut summary.phases {
            entry.fraction = if wall > 0.0 {
                entry.seconds / wall
            } else {
                0.0
            };
        }
        summary.phases.sort_by_key(|e| e.phase);
        summary.write(run_dir)
    }
}

impl std::fmt::Display for PhaseSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "wall time {:.1} s: {} cases, {} case-arms, {:.2} ms per case-arm",
            self.wall_s, self.cases, self.case_arms, self.ms_per_case_arm
        )?;
        for entry in &self.phases {
            writeln!(
                f,
                "  {:<26} {:>9.2} s  {:>5.1}%",
                entry.phase.label(),
                entry.seconds,
                entry.fraction * 100.0
            )?;
        }
        write!(
            f,
            "  {:<26} {:>9.2} s  {:>5.1}%",
            "other",
            self.unaccounted_s,
            if self.wall_s > 0.0 {
                self.unaccounted_s / self.wall_s * 100.0
            } else {
                0.0
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn accumulates_and_merges_per_phase() {
        let mut a = PhaseTimes::default();
        a.add(Phase::Stage, ms(10));
        a.add(Phase::Stage, ms(5));
        let mut b = PhaseTimes::default();
        b.add(Phase::Stage, ms(1));
        b.add(Phase::ReadBack, ms(2));
        a.merge(&b);
        assert_eq!(a.get(Phase::Stage), ms(16));
        assert_eq!(a.get(Phase::ReadBack), ms(2));
        assert_eq!(a.get(Phase::Warmup), Duration::ZERO);
        let value = a.time(Phase::Warmup, || 7);
        assert_eq!(value, 7);
        assert!(a.totals.contains_key(&Phase::Warmup));
    }

    #[test]
    fn nested_phases_are_not_double_counted() {
        let mut t = PhaseTimes::default();
        t.add(Phase::Stage, ms(100));
        t.add(Phase::CompileInside, ms(80));
        t.add(Phase::TimedReps, ms(50));
        assert_eq!(t.accounted(), ms(150));
        let s = t.summary(ms(200), 4, 8);
        assert!((s.unaccounted_s - 0.05).abs() < 1e-9, "{}", s.unaccounted_s);
        assert!((s.ms_per_case_arm - 25.0).abs() < 1e-9);
        let stage = s.phases.iter().find(|e| e.phase == Phase::Stage).unwrap();
        assert!((stage.fraction - 0.5).abs() < 1e-9);
        let text = s.to_string();
        assert!(
            text.contains("stage (per arm)") && text.contains("other"),
            "{text}"
        );
    }

    #[test]
    fn file_round_trip_and_report_added_later() {
        let dir = tempfile::tempdir().unwrap();
        // No file yet: adding is a no-op, not an error.
        PhaseSummary::add_to_file(dir.path(), Phase::Report, ms(1)).unwrap();
        assert!(!dir.path().join(PHASES_FILE).exists());
        let mut t = PhaseTimes::default();
        t.add(Phase::TimedReps, ms(300));
        t.summary(ms(400), 1, 2).write(dir.path()).unwrap();
        PhaseSummary::add_to_file(dir.path(), Phase::Report, ms(100)).unwrap();
        let back = PhaseSummary::read(dir.path()).unwrap();
        assert!((back.wall_s - 0.5).abs() < 1e-9);
        assert!((back.ms_per_case_arm - 250.0).abs() < 1e-9);
        let report = back
            .phases
            .iter()
            .find(|e| e.phase == Phase::Report)
            .unwrap();
        assert!((report.fraction - 0.2).abs() < 1e-9);
        let reps = back
            .phases
            .iter()
            .find(|e| e.phase == Phase::TimedReps)
            .unwrap();
        assert!((reps.fraction - 0.6).abs() < 1e-9);
    }
}
