//! `gvr-bench phases`: where the time of one launch goes, phase by phase,
//! for the self-sampling arms. Their kernels are built with the phase probe
//! (`gpu::probe`); each selected case is checked, timed cold as the grid
//! times it, then launched `reps` more times after an L2 flush with the
//! stamps cleared before and read after each launch.
//!
//! The probe build is not the timed build: its kernel time is reported next
//! to the phases so a reader can see what the stamps cost (a global store
//! per mark from thread 0). Compare it with `grid` on the same case.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

use serde::Serialize;

use super::campaign::{build_arms, group_by_cell, select_cases};
use crate::arms::{Arm, Shape};
use crate::env_manifest::EnvManifest;
use crate::error::{GvrError, Result};
use crate::exact::ExactStatus;
use crate::gpu::probe::{self, LaunchPhases};
use crate::gpu::Gpu;
use crate::grid::Batch;
use crate::grid::Selection;
use crate::stats::median;
use crate::timing::gpu::GpuTimer;
use crate::timing::{Protocol, Timer};

/// Everything `gvr-bench phases` was asked to do.
#[derive(Debug, Clone)]
pub struct PhasesConfig {
    pub captures: PathBuf,
    pub grid: Option<PathBuf>,
    pub selection: Selection,
    /// Self-sampling arms (default `ss`).
    pub arms: Vec<String>,
    /// Probed launches per (case, arm).
    pub reps: usize,
    /// Cold reps of the probe build's kernel time.
    pub cold_reps: usize,
    pub flush_bytes: usize,
    pub device: usize,
    /// Directory for `phases.jsonl` (one record per case and arm, appended
    /// as each finishes), `phases.md` and `manifest.json` (the environment).
    pub out: Option<PathBuf>,
    /// The knobs of every arm instance (`--knob`, `--tune`).
    pub tunings: crate::arms::registry::Tunings,
}

/// What a machine without a GPU is told (the CLI then gives no `--cpu` hint).
pub const NEEDS_GPU: &str =
    "phases reads clock stamps the kernels write on the GPU, so it has no CPU mode";

/// File names under `--out`.
pub const PHASES_JSONL: &str = "phases.jsonl";
pub const PHASES_MD: &str = "phases.md";

/// One (case, arm): the check, the probe build's cold time, every probed
/// launch's phases, and the clock used to turn cycles into µs.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseRecord {
    pub case: String,
    pub n: usize,
    pub k: usize,
    pub b: usize,
    pub arm: String,
    pub variant: Option<String>,
    /// `exact`, `WRONG`, ... of the first launch and of the last probed one.
    pub exact: String,
    pub cold_us: Vec<f64>,
    pub clock_ghz: f64,
    pub clock_source: ClockSource,
    pub launches: Vec<LaunchPhases>,
    /// Why the case has no phases (unsupported shape, a probe error).
    pub error: Option<String>,
}

/// Where a record's `clock_ghz` came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ClockSource {
    /// Cycles over global-timer ns in the probed launches (median).
    Measured,
    /// The device's maximum SM clock attribute (no CTA ran 2 µs).
    Device,
    /// 1.98 GHz, the H200's (the device reports no clock either).
    Assumed,
}

impl ClockSource {
    fn label(self) -> &'static str {
        match self {
            ClockSource::Measured => "measured",
            ClockSource::Device => "device",
            ClockSource::Assumed => "assumed",
        }
    }
}

impl PhaseRecord {
    /// Not exact, or not probed for another reason than an unsupported shape.
    fn failed(&self) -> bool {
        match self.exact.as_str() {
            "unsupported" => false,
            "exact" => self.error.is_some(),
            _ => true,
        }
    }

    /// Median over the probed launches of `value(launch, phase)` in µs, per
    /// phase of [`probe::phase_names`] (`None` where no launch has it).
    fn phase_us(&self, value: impl Fn(&LaunchPhases, &str) -> Option<f64>) -> Vec<Option<f64>> {
        probe::phase_names()
            .map(|phase| {
                let v: Vec<f64> = self
                    .launches
                    .iter()
                    .filter_map(|l| value(l, phase))
                    .collect();
                median(&v).map(|cycles| cycles / (self.clock_ghz * 1e3))
            })
            .collect()
    }

    /// Phases of the CTA that left last (µs, median over launches).
    pub fn critical_us(&self) -> Vec<Option<f64>> {
        self.phase_us(|l, phase| {
            l.critical
                .iter()
                .find(|(p, _)| *p == phase)
                .map(|&(_, c)| c as f64)
        })
    }

    /// Per phase, the median CTA (µs, median over launches).
    pub fn median_us(&self) -> Vec<Option<f64>> {
        self.phase_us(|l, phase| {
            l.phases
                .iter()
                .find(|s| s.phase == phase)
                .map(|s| s.median_cycles)
        })
    }

    fn launch_us(&self) -> Option<f64> {
        let v: Vec<f64> = self
            .launches
            .iter()
            .map(|l| l.launch_ns as f64 / 1e3)
            .collect();
        median(&v)
    }
}

/// What `phases` produced: the records in case order (also streamed to
/// `out/phases.jsonl`, and tabled in `out/phases.md`), and the error that
/// stopped the run early, if one did (a capture cell that does not load):
/// the records before it are kept.
#[derive(Debug)]
pub struct PhasesOutcome {
    pub records: Vec<PhaseRecord>,
    pub stopped: Option<GvrError>,
}

/// Run the probe over the selection. Errors before the first case (usage,
/// captures, no GPU) are returned; a later one ends the run in
/// [`PhasesOutcome::stopped`].
pub fn phases(cfg: &PhasesConfig) -> Result<PhasesOutcome> {
    if let Some(bad) = cfg.arms.iter().find(|a| !a.starts_with("ss")) {
        return Err(GvrError::Usage(format!(
            "arm `{bad}` has no phase marks; phases probes the self-sampling arms (ss, ss-main, ss-reg, ss-clus, ss-regclus, ss-varlen, ...)"
        )));
    }
    if cfg.reps == 0 {
        return Err(GvrError::Usage("--reps must be at least 1".into()));
    }
    let captures = crate::capture::CaptureSet::open(&cfg.captures)?;
    let cases = select_cases(&captures, cfg.grid.as_deref(), &cfg.selection)?;
    let rows_mode = cfg.selection.rows;
    let gpu = crate::gpu::Gpu::open(cfg.device).map_err(|e| match e {
        GvrError::Gpu(reason) => GvrError::Gpu(format!("{reason}; {NEEDS_GPU}")),
        other => other,
    })?;
    gpu.set_phase_probe(true);
    let (names, mut arms) = build_arms(cfg.arms.clone(), false, &Some(gpu.clone()), &cfg.tunings)?;
    let protocol = probe_protocol(cfg.cold_reps, cfg.flush_bytes);
    let mut timer = GpuTimer::new(gpu.clone(), protocol)?;
    // With --out: the environment next to the records (device, binary,
    // kernels, captures), written now and again when the run ends.
    let mut manifest = cfg.out.as_ref().map(|_| {
        let mut m = EnvManifest::collect(&cfg.captures, cfg.grid.as_deref(), protocol, rows_mode);
        m.gpu = Some(gpu.facts_json());
        m.notes.insert(
            "phase_probe".into(),
            serde_json::json!(format!(
                "{}=1 builds of {}",
                probe::PROBE_DEFINE,
                probe::PROBED_SOURCES.join(", ")
            )),
        );
        m
    });
    let mut jsonl = match (&cfg.out, &manifest) {
        (Some(dir), Some(m)) => {
            super::create_out_dir(dir)?;
            m.write(dir)?;
            let path = dir.join(PHASES_JSONL);
            Some((
                std::fs::File::create(&path).map_err(|e| GvrError::io(&path, e))?,
                path,
            ))
        }
        _ => None,
    };
    let mut records = Vec::new();
    let run = || -> Result<()> {
        for group in group_by_cell(cases) {
            let Some(entry) = captures.cell(&group[0].cell.id) else {
                continue;
            };
            let cell = captures.load_cell(entry)?;
            for case in &group {
                let batch = Batch::form(&cell, case.b, rows_mode)?;
                for (name, arm) in names.iter().zip(arms.iter_mut()) {
                    let record = probe_arm(
                        &gpu,
                        &mut timer,
                        &protocol,
                        cfg.reps,
                        (name, arm.as_mut()),
                        &batch,
                        &case.id(),
                    );
                    if let Some((file, path)) = jsonl.as_mut() {
                        let line = serde_json::to_string(&record)
                            .map_err(|e| GvrError::Other(anyhow::anyhow!("phase record: {e}")))?;
                        writeln!(file, "{line}").map_err(|e| GvrError::io(path.as_path(), e))?;
                    }
                    records.push(record);
                }
            }
        }
        Ok(())
    };
    let stopped = run().err();
    if let (Some(dir), Some(m)) = (&cfg.out, manifest.as_mut()) {
        let path = dir.join(PHASES_MD);
        std::fs::write(&path, table(&records)).map_err(|e| GvrError::io(&path, e))?;
        m.finished_utc = Some(crate::env_manifest::utc_now_iso());
        m.write(dir)?;
    }
    Ok(PhasesOutcome { records, stopped })
}

/// The probe's timing protocol: a short warm-up and `cold_reps` cold reps.
pub fn probe_protocol(cold_reps: usize, flush_bytes: usize) -> Protocol {
    Protocol {
        warmup: 2,
        warm_reps: 0,
        cold_reps,
        flush_bytes,
    }
}

/// Check, time and probe arm `name` on `batch` (case `case`) with `reps`
/// probed launches; errors (an unsupported shape, a probe without stamps)
/// land in the record. The GPU must build with the probe
/// ([`Gpu::set_phase_probe`]) before the arm builds its kernels.
pub fn probe_arm(
    gpu: &Gpu,
    timer: &mut GpuTimer,
    protocol: &Protocol,
    reps: usize,
    (name, arm): (&str, &mut dyn Arm),
    batch: &Batch,
    case: &str,
) -> PhaseRecord {
    let mut record = PhaseRecord {
        case: case.to_string(),
        n: batch.n_max(),
        k: batch.k,
        b: batch.rows,
        arm: name.to_string(),
        variant: arm.variant(&Shape::of(batch)),
        exact: String::new(),
        cold_us: Vec::new(),
        clock_ghz: gpu
            .facts
            .sm_clock_khz
            .map(|khz| khz as f64 / 1e6)
            .unwrap_or(1.98),
        clock_source: if gpu.facts.sm_clock_khz.is_some() {
            ClockSource::Device
        } else {
            ClockSource::Assumed
        },
        launches: Vec::new(),
        error: None,
    };
    if let Err(e) = probe_case(gpu, timer, protocol, reps, arm, batch, &mut record) {
        record.error = Some(e.to_string());
        if record.exact.is_empty() {
            record.exact = "FAILED".into();
        }
    }
    record
}

fn probe_case(
    gpu: &Gpu,
    timer: &mut GpuTimer,
    protocol: &Protocol,
    reps: usize,
    arm: &mut dyn Arm,
    batch: &Batch,
    record: &mut PhaseRecord,
) -> Result<()> {
    if let Err(reason) = arm.admits(&Shape::of(batch)) {
        record.exact = ExactStatus::Unsupported {
            reason: reason.clone(),
        }
        .label()
        .to_string();
        record.error = Some(format!("unsupported: {reason}"));
        return Ok(());
    }
    arm.stage(batch)?;
    arm.poison_output()?;
    arm.launch()?;
    let first = crate::exact::check_batch(batch, &arm.read_output()?);
    record.exact = first.label().to_string();
    record.cold_us = timer.measure(arm, protocol)?.cold_us;
    let mut rates = Vec::new();
    for rep in 0..reps {
        if rep + 1 == reps {
            arm.poison_output()?; // the last probed launch's output is checked on its own
        }
        gpu.reset_phase_stamps()?;
        timer.flusher().flush()?;
        arm.launch()?;
        gpu.synchronize()?;
        let mut written = gpu.read_phase_stamps()?;
        let (build, words) = match written.len() {
            1 => written.remove(0),
            0 => {
                return Err(GvrError::Gpu(
                    "the launch left no phase stamps (its kernel carries no probe marks)".into(),
                ))
            }
            _ => {
                let builds: Vec<&str> = written.iter().map(|(b, _)| b.as_str()).collect();
                return Err(GvrError::Gpu(format!(
                    "one launch left stamps in several builds: {}",
                    builds.join("; ")
                )));
            }
        };
        let launch = probe::summarize(&probe::parse_stamps(&words))
            .map_err(|e| GvrError::Gpu(format!("{build}: {e}")))?;
        if let Some(r) = launch.clock_ghz {
            rates.push(r);
        }
        record.launches.push(launch);
    }
    let last = crate::exact::check_batch(batch, &arm.read_output()?);
    if last != ExactStatus::Exact && first == ExactStatus::Exact {
        record.exact = format!("{} (probed launch)", last.label());
    }
    if let Some(ghz) = median(&rates) {
        record.clock_ghz = ghz;
        record.clock_source = ClockSource::Measured;
    }
    Ok(())
}

/// Markdown: the critical CTA's phases (the chain that set the launch's
/// time) and the median CTA's, in µs, one row per case and arm.
pub fn table(records: &[PhaseRecord]) -> String {
    let phases: Vec<&str> = probe::phase_names().collect();
    let fmt = |v: Option<f64>| v.map_or("–".to_string(), |us| format!("{us:.2}"));
    let mut out = String::new();
    let header = |title: &str, out: &mut String| {
        let _ = writeln!(out, "{title}\n");
        let _ = writeln!(
            out,
            "| case | arm | variant | exact | kernel µs (probe build, cold mean) | launch µs (first entry → last exit) | {} | passes |",
            phases.join(" | ")
        );
        let _ = writeln!(
            out,
            "|---|---|---|---|---:|---:|{}---:|",
            "---:|".repeat(phases.len())
        );
    };
    for (title, critical) in [
        (
            "Critical CTA (the one that left last), µs per phase, median over the probed launches",
            true,
        ),
        (
            "Median CTA per phase, µs, median over the probed launches",
            false,
        ),
    ] {
        header(title, &mut out);
        for r in records {
            let cold = (!r.cold_us.is_empty())
                .then(|| r.cold_us.iter().sum::<f64>() / r.cold_us.len() as f64);
            let cells = if critical {
                r.critical_us()
            } else {
                r.median_us()
            };
            let passes = r.launches.iter().map(|l| l.passes_max).max().unwrap_or(0);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {passes} |",
                r.case,
                r.arm,
                r.variant.as_deref().unwrap_or("–"),
                r.exact,
                fmt(cold),
                fmt(r.launch_us()),
                cells.into_iter().map(fmt).collect::<Vec<_>>().join(" | ")
            );
        }
        out.push('\n');
    }
    let notes: Vec<String> = records
        .iter()
        .filter_map(|r| {
            r.error
                .as_ref()
                .map(|e| format!("- {} {}: {e}", r.case, r.arm))
        })
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(out, "Not probed:\n\n{}\n", notes.join("\n"));
    }
    let probed: Vec<&PhaseRecord> = records.iter().filter(|r| !r.launches.is_empty()).collect();
    let measured: Vec<f64> = probed
        .iter()
        .filter(|r| r.clock_source == ClockSource::Measured)
        .map(|r| r.clock_ghz)
        .collect();
    if let (Some(lo), Some(hi)) = (
        measured.iter().copied().reduce(f64::min),
        measured.iter().copied().reduce(f64::max),
    ) {
        let _ = writeln!(
            out,
            "Cycles → µs at the SM clock measured in each case's probed launches (cycles over global-timer ns of the CTAs that ran ≥ 2 µs, summed; median over the launches): {lo:.3}–{hi:.3} GHz."
        );
    }
    for r in probed
        .iter()
        .filter(|r| r.clock_source != ClockSource::Measured)
    {
        let _ = writeln!(
            out,
            "{} {}: no CTA ran 2 µs; cycles → µs at the {} clock, {:.3} GHz.",
            r.case,
            r.arm,
            r.clock_source.label(),
            r.clock_ghz
        );
    }
    for r in &probed {
        if let Some(grid) = r
            .launches
            .iter()
            .filter_map(|l| l.grid_ctas.filter(|&g| g > l.ctas as u64))
            .max()
        {
            let _ = writeln!(
                out,
                "{} {}: only the first {} of its {grid} CTAs carry stamps (the critical and median CTA are among those).",
                r.case,
                r.arm,
                probe::PROBE_CTAS
            );
        }
    }
    out
}

/// Whether any record's output was not exact or its probe failed (the
/// command then exits 1).
pub fn any_failed(records: &[PhaseRecord]) -> bool {
    records.iter().any(PhaseRecord::failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::probe::{parse_stamps, summarize, PROBE_SLOTS};

    fn record(exact: &str, launches: Vec<LaunchPhases>) -> PhaseRecord {
        PhaseRecord {
            case: "v32_64k_L00@b1".into(),
            n: 65551,
            k: 2048,
            b: 1,
            arm: "ss".into(),
            variant: Some("clus/cs8/u2".into()),
            exact: exact.into(),
            cold_us: vec![10.0, 12.0],
            clock_ghz: 2.0,
            clock_source: ClockSource::Measured,
            launches,
            error: None,
        }
    }

    fn launch(pass_cycles: u64) -> LaunchPhases {
        let mut raw = [0u64; PROBE_SLOTS];
        raw[0] = 1000; // entry
        raw[1] = 3000; // length
        raw[4] = 3000 + pass_cycles; // pass
        raw[8] = 5000 + pass_cycles; // exit
        raw[12] = 1;
        raw[13] = 100;
        raw[14] = 5100;
        summarize(&parse_stamps(&raw)).unwrap()
    }

    #[test]
    fn phases_in_microseconds_are_medians_over_launches() {
        let r = record("exact", vec![launch(2000), launch(6000), launch(4000)]);
        let crit = r.critical_us();
        let names: Vec<&str> = probe::phase_names().collect();
        let at = |name: &str| crit[names.iter().position(|p| *p == name).unwrap()];
        assert_eq!(at("length"), Some(1.0)); // 2000 cycles at 2 GHz
        assert_eq!(at("pass"), Some(2.0)); // median of 2000, 6000, 4000 cycles
        assert_eq!(at("finish"), Some(1.0));
        assert_eq!(at("sample"), None);
        assert_eq!(r.launch_us(), Some(5.0));
        let md = table(&[r]);
        assert!(md.contains("| v32_64k_L00@b1 | ss | clus/cs8/u2 | exact | 11.00 | 5.00 | 1.00 | – | – | – | 2.00 |"), "{md}");
        assert!(md.contains("2.000–2.000 GHz"), "{md}");
        let mut device_clock = record("exact", vec![launch(10)]);
        device_clock.clock_source = ClockSource::Device;
        device_clock.launches[0].grid_ctas = Some(9000);
        let md = table(&[device_clock]);
        assert!(
            md.contains("ss: no CTA ran 2 µs; cycles → µs at the device clock, 2.000 GHz."),
            "{md}"
        );
        assert!(
            md.contains("only the first 8192 of its 9000 CTAs carry stamps"),
            "{md}"
        );
    }

    #[test]
    fn inexact_and_unprobed_records_show() {
        let mut wrong = record("WRONG", vec![launch(10)]);
        wrong.arm = "ss-main".into();
        let mut unsupported = record("unsupported", Vec::new());
        unsupported.error = Some("unsupported: rows of at least 8192 values".into());
        assert!(any_failed(&[wrong.clone()]));
        assert!(!any_failed(&[
            unsupported.clone(),
            record("exact", vec![launch(10)])
        ]));
        let mut no_stamps = record("exact", Vec::new());
        no_stamps.error = Some("the launch left no phase stamps".into());
        assert!(any_failed(&[no_stamps]));
        let md = table(&[wrong, unsupported]);
        assert!(md.contains("| ss-main | clus/cs8/u2 | WRONG |"), "{md}");
        assert!(
            md.contains(
                "Not probed:\n\n- v32_64k_L00@b1 ss: unsupported: rows of at least 8192 values"
            ),
            "{md}"
        );
    }
}
