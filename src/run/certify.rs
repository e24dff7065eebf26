//! `gvr-bench certify`: exactness only, no timing. Every selected case, the
//! adversarial suite and the `--soak` randomized batches for each K are run
//! once per arm and checked.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use super::campaign::{
    build_arms, group_by_cell, is_inexact, open_device, resolve_arms, select_cases,
};
use crate::arms::{Arm, Shape};
use crate::error::Result;
use crate::exact::ExactStatus;
use crate::grid::Batch;
use crate::grid::Selection;
use crate::progress::Progress;

#[derive(Debug, Clone)]
pub struct CertifyConfig {
    pub captures: PathBuf,
    /// Grid file restricting the cells (default: every cell of the capture set).
    pub grid: Option<PathBuf>,
    pub selection: Selection,
    pub arms: Option<Vec<String>>,
    /// Also run `exact::adversarial::suite(k)` for each selected K.
    pub adversarial: bool,
    /// Also run this many randomized batches (`exact::soak`) for each
    /// selected K, seeded `soak_seed`, `soak_seed + 1`, ...
    pub soak_rounds: usize,
    pub soak_seed: u64,
    /// Fill each row's pad `[n, npad)` with +3e38 so any read past n shows.
    pub poison_pad: bool,
    pub device: usize,
    pub cpu_only: bool,
    /// The knobs of every arm instance (`--knob`, `--tune`).
    pub tunings: crate::arms::registry::Tunings,
}

/// Per-arm tally.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArmTally {
    pub arm: String,
    pub exact: usize,
    pub inexact: usize,
    pub unsupported: usize,
    /// The first inexact check, described for the user.
    pub first_failure: Option<String>,
    /// The first inexact soak batch (its seed replays it), kept even when a
    /// captured case or the suite failed first.
    pub first_soak_failure: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertifyOutcome {
    pub tallies: Vec<ArmTally>,
}

impl CertifyOutcome {
    pub fn any_inexact(&self) -> bool {
        self.tallies.iter().any(|t| t.inexact > 0)
    }

    /// Markdown table of the tallies plus the first failure of each arm.
    pub fn table(&self) -> String {
        let mut out =
            String::from("| arm | exact | inexact | unsupported |\n|---|---:|---:|---:|\n");
        for t in &self.tallies {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                t.arm, t.exact, t.inexact, t.unsupported
            );
        }
        for t in &self.tallies {
            if let Some(f) = &t.first_failure {
                let _ = writeln!(out, "\n{}: first failure: {f}", t.arm);
            }
            match &t.first_soak_failure {
                Some(f) if t.first_failure.as_ref() != Some(f) => {
                    let _ = writeln!(out, "\n{}: first soak failure: {f}", t.arm);
                }
                _ => {}
            }
        }
        out
    }
}

/// Value written into the pad by `--poison-pad` (the TRT-LLM unit-test
/// sentinel): larger than any real logit, so a kernel that reads past n puts
/// it among the winners and the value check fails.
pub const PAD_POISON: f32 = 3e38;

/// Run one arm once on a batch and check it.
pub fn check_arm(arm: &mut dyn Arm, batch: &Batch) -> ExactStatus {
    let shape = Shape::of(batch);
    if let Err(reason) = arm.admits(&shape) {
        return ExactStatus::Unsupported { reason };
    }
    let output = arm
        .stage(batch)
        .and_then(|_| arm.poison_output())
        .and_then(|_| arm.launch())
        .and_then(|_| arm.read_output());
    match output {
        Ok(output) => crate::exact::check_batch(batch, &output),
        Err(e) => ExactStatus::Failed {
            message: e.to_string(),
        },
    }
}

/// Check `batch` (its pad poisoned first when `poison_pad`) on every arm and
/// tally each verdict under `what`; the verdicts, in arm order.
fn check_all(
    arms: &mut [Box<dyn Arm>],
    tallies: &mut [ArmTally],
    mut batch: Batch,
    poison_pad: bool,
    what: &str,
) -> Vec<ExactStatus> {
    if poison_pad {
        batch.poison_pad(PAD_POISON);
    }
    arms.iter_mut()
        .zip(tallies.iter_mut())
        .map(|(arm, t)| {
            let status = check_arm(arm.as_mut(), &batch);
            tally(t, &status, what);
            status
        })
        .collect()
}

fn tally(t: &mut ArmTally, status: &ExactStatus, what: &str) {
    match status {
        ExactStatus::Exact => t.exact += 1,
        ExactStatus::Unsupported { .. } => t.unsupported += 1,
        other => {
            debug_assert!(is_inexact(other));
            t.inexact += 1;
            if t.first_failure.is_none() {
                t.first_failure = Some(format!("{what}: {}", describe(other)));
            }
        }
    }
}

fn describe(status: &ExactStatus) -> String {
    match status {
        ExactStatus::Wrong { row, reason } => format!("WRONG at row {row}: {reason}"),
        ExactStatus::Unwritten { row, slot } => format!("UNWRITTEN row {row} slot {slot}"),
        ExactStatus::Failed { message } => format!("FAILED: {message}"),
        other => other.label().to_string(),
    }
}

pub fn certify(cfg: &CertifyConfig) -> Result<CertifyOutcome> {
    let captures = crate::capture::CaptureSet::open(&cfg.captures)?;
    let cases = select_cases(&captures, cfg.grid.as_deref(), &cfg.selection)?;
    let rows_mode = cfg.selection.rows;
    let (gpu, no_gpu_reason) = open_device(cfg.cpu_only, cfg.device);
    let names = resolve_arms(cfg.arms.as_deref(), None, &gpu, no_gpu_reason.as_deref())?;
    let (names, mut arms) = build_arms(names, cfg.arms.is_none(), &gpu, &cfg.tunings)?;
    let mut tallies: Vec<ArmTally> = names
        .iter()
        .map(|n| ArmTally {
            arm: n.clone(),
            ..ArmTally::default()
        })
        .collect();

    if let Some(gpu) = &gpu {
        super::prebuild::prebuild_for_cases(gpu, &arms, &cases, &captures)?;
    }
    let ks: BTreeSet<usize> = cases.iter().map(|c| c.cell.k as usize).collect();
    let mut progress = Progress::new("certify: selected cases", "cases", cases.len() as u64);
    for group in group_by_cell(cases) {
        let Some(entry) = captures.cell(&group[0].cell.id) else {
            continue; // select_cases only yields cells of this capture set
        };
        let cell = captures.load_cell(entry)?;
        for case in &group {
            let batch = Batch::form(&cell, case.b, rows_mode)?;
            progress.set_message(case.id());
            check_all(&mut arms, &mut tallies, batch, cfg.poison_pad, &case.id());
            progress.inc(1);
        }
    }
    progress.finish();

    if cfg.adversarial {
        let suites: Vec<_> = ks
            .iter()
            .map(|&k| (k, crate::exact::adversarial::suite(k)))
            .collect();
        let total = suites.iter().map(|(_, s)| s.len() as u64).sum();
        let mut progress = Progress::new("certify: adversarial suite", "cases", total);
        for (k, suite) in suites {
            for case in suite {
                let what = format!("adversarial {} (K={k})", case.name);
                check_all(&mut arms, &mut tallies, case.batch, cfg.poison_pad, &what);
                progress.inc(1);
            }
        }
        progress.finish();
    }
    let soak_total = (ks.len() * cfg.soak_rounds) as u64;
    let mut progress = Progress::new("certify: soak", "cases", soak_total);
    for &k in &ks {
        for round in 0..cfg.soak_rounds as u64 {
            let seed = cfg.soak_seed.wrapping_add(round);
            let case = crate::exact::soak_case(seed, k);
            let what = format!(
                "{} (K={k}; replay with --soak 1 --soak-seed {seed})",
                case.name
            );
            let statuses = check_all(&mut arms, &mut tallies, case.batch, cfg.poison_pad, &what);
            for (t, status) in tallies.iter_mut().zip(&statuses) {
                if is_inexact(status) && t.first_soak_failure.is_none() {
                    t.first_soak_failure = Some(format!("{what}: {}", describe(status)));
                }
            }
            progress.inc(1);
        }
    }
    if soak_total > 0 {
        progress.finish();
    }
    Ok(CertifyOutcome { tallies })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tallies_count_and_keep_first_failure() {
        let mut t = ArmTally::default();
        tally(&mut t, &ExactStatus::Exact, "a");
        tally(
            &mut t,
            &ExactStatus::Unsupported { reason: "x".into() },
            "b",
        );
        tally(
            &mut t,
            &ExactStatus::Wrong {
                row: 3,
                reason: "dup".into(),
            },
            "c",
        );
        tally(
            &mut t,
            &ExactStatus::Failed {
                message: "boom".into(),
            },
            "d",
        );
        assert_eq!((t.exact, t.inexact, t.unsupported), (1, 2, 1));
        assert_eq!(t.first_failure.as_deref(), Some("c: WRONG at row 3: dup"));
        let outcome = CertifyOutcome { tallies: vec![t] };
        assert!(outcome.any_inexact());
        assert!(outcome.table().contains("|  | 1 | 2 | 1 |"));
    }
}
