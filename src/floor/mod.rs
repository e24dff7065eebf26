//! `grid --floor`: the latency floor of every case, measured in the same run
//! on the same staged inputs as the arms.
//!
//! The floor kernels (`kernels/harness/floor.cu`) read each row once, meet once and
//! write k indices that wait on the whole row: the least any exact top-K
//! launch must do. They select nothing, so their output is not a top-K; the
//! host checks only that every slot holds the short-row identity pattern
//! (proof that the kernel ran to its stores). Each case is timed under every
//! launch shape of [`shapes`] and its floor is the fastest shape's mean cold
//! time. Floors go to `floor.jsonl` in the run directory, never into
//! `results.jsonl`: they are no arm, are never checked for exactness and
//! never enter an arm's speed statistics. `report` compares every arm with
//! them (its "Latency floor" section): arm / floor says how far an arm is
//! from the floor, and radix / floor bounds the ratio any kernel of these
//! launch shapes could reach against radix.

pub mod arm;

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::capture::Model;
use crate::error::Result;
use crate::grid::Batch;
use crate::record::jsonl::{read_lines, JsonlWriter};
use crate::record::CaseRecord;
use crate::stats::ratios::{compare, roofline_by_arm, Comparison, RooflineStats};
use crate::stats::{quantile_sorted, CaseTime, ColdStats, ExactClass};
use crate::timing::TimingMethod;

/// The floor records of a run directory.
pub const FLOOR_FILE: &str = "floor.jsonl";
/// The name floor records carry where statistics need an arm name.
pub const FLOOR_ARM: &str = "floor";
/// Largest cluster the floor uses (portable on every sm_90 part).
pub const MAX_CLUSTER_PARTS: u32 = 8;
/// Multi-CTA shapes stop at this many CTAs per SM over the whole batch.
const MAX_CTAS_PER_SM: usize = 8;
/// Block sizes tried: those of the ss entries (one float4 per thread of a
/// 1,027-value row at 256).
pub const BLOCKS: [u32; 3] = [256, 512, 1024];

/// One launch shape of the floor kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FloorShape {
    /// Threads per CTA.
    pub block: u32,
    /// CTAs per row.
    pub parts: u32,
    /// The parts of a row form a thread-block cluster (else they hand off
    /// through global atomics).
    pub cluster: bool,
    /// One CTA per row streaming through a shared-memory ring of bulk copies
    /// (`floor_ring`) instead of register loads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ring: Option<FloorRing>,
    /// A wave trick of the ss kernels' many-rows launches (one CTA per row,
    /// register loads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wave: Option<FloorWave>,
}

/// The wave tricks of the ss kernels' one-CTA-per-row launches at many rows,
/// which the floor must have too, or an ss launch using one could beat it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FloorWave {
    /// The CTA of row r sends row r + (resident CTAs), the row a CTA of the
    /// next wave takes, toward L2 once its own row has arrived
    /// (kernels/ss/reg.cu's next-wave prefetch).
    NextWave,
    /// The CTAs of the first wave start staggered, each by its place on its
    /// SM (kernels/ss/main.cu's wave stagger, with its production knobs).
    Stagger,
}

/// The wave scalars of a floor launch (`FloorParams` ahead, sms, per_sm,
/// stagger); all zero for a launch without a wave trick.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WaveArgs {
    pub ahead: u32,
    pub sms: u32,
    pub per_sm: u32,
    pub stagger: u32,
}

/// A production default of the ss kernel knob `name` (kernels/ss/knobs.cuh,
/// mirrored by the tuning table).
fn ss_knob_default(name: &str) -> u64 {
    crate::topk::tuning::knob(name)
        .and_then(|k| k.default.parse().ok())
        .unwrap_or(0)
}

/// The wave scalars of `wave` for `rows` rows of at most `n` values on `sms`
/// SMs holding `per_sm` floor CTAs each; `None` when the trick would do
/// nothing there: the next-wave prefetch needs a later wave; the stagger
/// needs two CTAs per SM and as many waves as the ss kernels stagger at
/// (`SS_WAVE_MIN_TENTHS`), and waits `SS_WAVE_STAGGER` cycles scaled by
/// n / `SS_WAVE_FULL_N` below that length, as they do.
pub fn wave_args(
    wave: FloorWave,
    rows: usize,
    n: usize,
    sms: usize,
    per_sm: u32,
) -> Option<WaveArgs> {
    let resident = (per_sm as usize).checked_mul(sms)?;
    let base = WaveArgs {
        ahead: 0,
        sms: u32::try_from(sms).ok()?,
        per_sm,
        stagger: 0,
    };
    match wave {
        FloorWave::NextWave => (resident > 0 && rows > resident).then(|| WaveArgs {
            ahead: u32::try_from(resident).unwrap_or(0),
            ..base
        }),
        FloorWave::Stagger => {
            let min_tenths = ss_knob_default("SS_WAVE_MIN_TENTHS") as usize;
            if per_sm < 2 || rows.saturating_mul(10) < resident.saturating_mul(min_tenths) {
                return None;
            }
            let full = ss_knob_default("SS_WAVE_STAGGER");
            let full_n = ss_knob_default("SS_WAVE_FULL_N");
            let span = if full_n > 0 && (n as u64) < full_n {
                full * n as u64 / full_n
            } else {
                full
            };
            let stagger = u32::try_from(span).ok().filter(|&s| s > 0)?;
            Some(WaveArgs { stagger, ..base })
        }
    }
}

/// The ring of a `floor_ring` launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FloorRing {
    pub stages: u32,
    /// Bytes per bulk copy, a positive multiple of 16.
    pub chunk: u32,
}

impl FloorRing {
    /// Dynamic shared memory of the ring.
    pub fn bytes(&self) -> u32 {
        self.stages * self.chunk
    }
}

impl FloorShape {
    /// One CTA per row of `block` threads, register loads, no trick.
    pub fn rows(block: u32) -> FloorShape {
        FloorShape {
            block,
            parts: 1,
            cluster: false,
            ring: None,
            wave: None,
        }
    }

    /// `b256`, `b1024 x8 grid`, `b256 x4 cluster`, `b512 ring 4x16384`,
    /// `b512 next-wave`, `b256 stagger`.
    pub fn label(&self) -> String {
        if let Some(r) = self.ring {
            return format!("b{} ring {}x{}", self.block, r.stages, r.chunk);
        }
        match self.wave {
            Some(FloorWave::NextWave) => return format!("b{} next-wave", self.block),
            Some(FloorWave::Stagger) => return format!("b{} stagger", self.block),
            None => {}
        }
        match (self.parts, self.cluster) {
            (1, _) => format!("b{}", self.block),
            (p, true) => format!("b{} x{p} cluster", self.block),
            (p, false) => format!("b{} x{p} grid", self.block),
        }
    }

    /// Values per part: the longest row split evenly, rounded up to whole
    /// float4s so every part but the last starts and ends on one.
    pub fn slice(&self, n_max: usize) -> usize {
        n_max.div_ceil(self.parts as usize).div_ceil(4) * 4
    }
}

/// The shapes tried for `rows` rows of at most `n` values on `sms` SMs, of
/// which each holds `per_sm(block)` one-CTA-per-row floor CTAs: one CTA per
/// row at each block size of [`BLOCKS`], with each wave trick of
/// [`FloorWave`] where [`wave_args`] says it acts, and rows split over 2, 4,
/// … CTAs (as a cluster up to [`MAX_CLUSTER_PARTS`], through global atomics
/// beyond) while every CTA keeps at least one float4 per thread and the
/// batch stays within [`MAX_CTAS_PER_SM`] CTAs per SM. Pure; the order is
/// the timing order.
pub fn shapes(rows: usize, n: usize, sms: usize, per_sm: &dyn Fn(u32) -> u32) -> Vec<FloorShape> {
    let mut out = Vec::new();
    for block in BLOCKS {
        out.push(FloorShape::rows(block));
        for wave in [FloorWave::NextWave, FloorWave::Stagger] {
            if wave_args(wave, rows, n, sms, per_sm(block)).is_some() {
                out.push(FloorShape {
                    wave: Some(wave),
                    ..FloorShape::rows(block)
                });
            }
        }
        let mut parts = 2u32;
        while n.div_ceil(parts as usize) >= 4 * block as usize
            && rows.saturating_mul(parts as usize) <= MAX_CTAS_PER_SM * sms
        {
            if parts <= MAX_CLUSTER_PARTS {
                out.push(FloorShape {
                    parts,
                    cluster: true,
                    ..FloorShape::rows(block)
                });
            }
            out.push(FloorShape {
                parts,
                ..FloorShape::rows(block)
            });
            parts *= 2;
        }
    }
    out
}

/// The knob (`--knob floor.extra=...`) naming launch shapes tried besides
/// [`shapes`], a tuning aid: comma-separated `b<BLOCK>` (one CTA per row,
/// register loads) or `b<BLOCK>:<STAGES>x<CHUNK>` (one CTA per row through a
/// ring of STAGES bulk copies of CHUNK bytes).
pub const EXTRA_SHAPES_KNOB: &str = "floor.extra";

/// Largest ring: the opt-in shared memory of one sm_90 CTA (227 KiB) less
/// a KiB for `floor_ring`'s static barriers and scratch.
const MAX_RING_BYTES: u32 = 226 * 1024;

/// The shapes of an [`EXTRA_SHAPES_KNOB`] value; `Err` says which item is
/// wrong and why.
pub fn parse_extra_shapes(spec: &str) -> std::result::Result<Vec<FloorShape>, String> {
    let mut out = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = |why: &str| {
            format!("{EXTRA_SHAPES_KNOB} item `{item}`: {why} (want b<BLOCK> or b<BLOCK>:<STAGES>x<CHUNK>)")
        };
        let (block, ring) = match item.split_once(':') {
            Some((b, r)) => (b, Some(r)),
            None => (item, None),
        };
        let block: u32 = block
            .strip_prefix('b')
            .and_then(|b| b.parse().ok())
            .ok_or_else(|| bad("no block size"))?;
        if block == 0 || !block.is_multiple_of(32) || block > 1024 {
            return Err(bad("the block must be a multiple of 32 up to 1024"));
        }
        let ring = match ring {
            None => None,
            Some(r) => {
                let (stages, chunk) = r.split_once('x').ok_or_else(|| bad("no ring"))?;
                let ring = FloorRing {
                    stages: stages.parse().map_err(|_| bad("stages not a number"))?,
                    chunk: chunk.parse().map_err(|_| bad("chunk not a number"))?,
                };
                if ring.stages == 0 || ring.stages > 16 {
                    return Err(bad("stages must be 1 to 16"));
                }
                if ring.chunk == 0 || !ring.chunk.is_multiple_of(16) {
                    return Err(bad("the chunk must be a positive multiple of 16 bytes"));
                }
                if ring
                    .stages
                    .checked_mul(ring.chunk)
                    .is_none_or(|b| b > MAX_RING_BYTES)
                {
                    return Err(bad("the ring exceeds 226 KiB of shared memory"));
                }
                Some(ring)
            }
        };
        out.push(FloorShape {
            ring,
            ..FloorShape::rows(block)
        });
    }
    Ok(out)
}

/// The extra shapes `tuning` asks for ([`EXTRA_SHAPES_KNOB`]; none unset).
pub fn extra_shapes(tuning: &crate::topk::Tuning) -> Result<Vec<FloorShape>> {
    match tuning.get(EXTRA_SHAPES_KNOB) {
        Some(spec) => parse_extra_shapes(spec).map_err(crate::error::GvrError::Usage),
        None => Ok(Vec::new()),
    }
}

/// The floor kernels' output: slot j of a row holds j while j < n, else -1.
/// `Err` names the first slot that does not.
pub fn check_output(batch: &Batch, output: &[i32]) -> std::result::Result<(), String> {
    let k = batch.k;
    if output.len() != batch.rows * k {
        return Err(format!(
            "{} output slots for {} rows × k {k}",
            output.len(),
            batch.rows
        ));
    }
    for (row, slots) in output.chunks_exact(k).enumerate() {
        let n = batch.n[row] as usize;
        for (j, &got) in slots.iter().enumerate() {
            let want = if j < n { j as i32 } else { -1 };
            if got != want {
                return Err(format!("row {row} slot {j}: {got}, expected {want}"));
            }
        }
    }
    Ok(())
}

/// One shape's outcome on a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FloorTry {
    pub shape: FloorShape,
    /// Mean of the cold reps of the full protocol (µs); absent when the
    /// shape failed, or when its screen left it out of the finalists.
    #[serde(default)]
    pub mean_cold_us: Option<f64>,
    /// Mean of the screen's cold reps (µs), when the run screened shapes
    /// (the `floor.screen` knob); records made without a screen lack it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screen_cold_us: Option<f64>,
    #[serde(default)]
    pub error: Option<String>,
}

/// The floor of one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FloorRecord {
    /// `<cell>@b<B>`, the join key with `results.jsonl`.
    pub case: String,
    pub cell: String,
    pub model: Model,
    pub isl: String,
    pub layer: u32,
    pub n: u32,
    pub k: u32,
    pub b: u32,
    /// Minimum traffic, as in the arms' records.
    pub bytes: u64,
    /// The fastest shape; absent when every shape failed.
    #[serde(default)]
    pub best: Option<FloorShape>,
    /// The fastest shape's raw reps.
    pub cold_us: Vec<f64>,
    pub warm_us: Vec<f64>,
    /// Every shape tried, in timing order.
    pub tried: Vec<FloorTry>,
    /// Why no shape was tried (the batch could not be staged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How the fastest shape was timed (the run's GPU timer). Floors written
    /// before this field took the same timer as the run's GPU arms, which
    /// `section` assumes when it is absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<TimingMethod>,
}

impl FloorRecord {
    /// An empty floor of the case `base` describes (an arm's record skeleton,
    /// so the join key and the byte count are the arms' own).
    pub fn for_case(base: &CaseRecord) -> FloorRecord {
        FloorRecord {
            case: base.case.clone(),
            cell: base.cell.clone(),
            model: base.model,
            isl: base.isl.clone(),
            layer: base.layer,
            n: base.n,
            k: base.k,
            b: base.b,
            bytes: base.bytes,
            best: None,
            cold_us: Vec::new(),
            warm_us: Vec::new(),
            tried: Vec::new(),
            error: None,
            method: None,
        }
    }

    /// The floor as statistics see it: a case of arm [`FLOOR_ARM`] whose
    /// output passed the floor's own check (never a top-K check).
    pub fn case_time(&self) -> CaseTime {
        let cold = ColdStats::of(&self.cold_us);
        CaseTime {
            case: self.case.clone(),
            cell: self.cell.clone(),
            arm: FLOOR_ARM.to_string(),
            model: self.model,
            isl: self.isl.clone(),
            layer: self.layer,
            n: self.n,
            k: self.k,
            b: self.b,
            variant: self.best.map(|s| s.label()),
            exact: if self.best.is_some() {
                ExactClass::Exact
            } else {
                ExactClass::Failed
            },
            cold,
            bytes: self.bytes,
            method: self.method,
        }
    }
}

/// What `report` says about the floors of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FloorSection {
    /// Cases with a floor; `failed`: cases where every shape failed.
    pub cases: usize,
    pub failed: usize,
    /// The floor's own roofline fraction (mean over its cases).
    pub roofline: RooflineStats,
    /// Median floor over the B = 1 cases (µs).
    pub b1_median_us: Option<f64>,
    /// How often each shape was the fastest, most often first.
    pub best_shapes: Vec<(String, usize)>,
    /// Every arm against the floor: ratio = time(arm) / floor.
    pub vs: Vec<Comparison>,
}

/// The floor section of a report over `cases` (the run's arms) and the run's
/// floors; `None` when the run has none.
pub fn section(
    cases: &[CaseTime],
    floors: &[FloorRecord],
    arms: &[String],
    bandwidth: f64,
) -> Option<FloorSection> {
    if floors.is_empty() {
        return None;
    }
    // A floor without a method (written before floors recorded theirs) was
    // timed by the run's GPU timer: it takes its case's GPU arms' method.
    let gpu_method: std::collections::HashMap<&str, TimingMethod> = cases
        .iter()
        .filter_map(|c| Some((c.case.as_str(), c.method?)))
        .filter(|(_, m)| *m != TimingMethod::HostClock)
        .collect();
    let floor_times: Vec<CaseTime> = floors
        .iter()
        .map(|f| {
            let mut t = f.case_time();
            if t.method.is_none() {
                t.method = gpu_method.get(f.case.as_str()).copied();
            }
            t
        })
        .collect();
    let mut joined = floor_times.clone();
    joined.extend(cases.iter().cloned());
    let roofline = roofline_by_arm(&floor_times, &[FLOOR_ARM.to_string()], bandwidth)
        .pop()
        .expect("one arm in, one row out");
    let mut b1: Vec<f64> = floor_times
        .iter()
        .filter(|c| c.b == 1)
        .filter_map(CaseTime::usable_mean_us)
        .collect();
    b1.sort_by(f64::total_cmp);
    let mut shapes: Vec<(String, usize)> = Vec::new();
    for label in floors.iter().filter_map(|f| f.best.map(|s| s.label())) {
        match shapes.iter_mut().find(|(l, _)| *l == label) {
            Some((_, n)) => *n += 1,
            None => shapes.push((label, 1)),
        }
    }
    shapes.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Some(FloorSection {
        cases: floors.iter().filter(|f| f.best.is_some()).count(),
        failed: floors.iter().filter(|f| f.best.is_none()).count(),
        roofline,
        b1_median_us: quantile_sorted(&b1, 0.5),
        best_shapes: shapes,
        vs: arms
            .iter()
            .map(|arm| compare(&joined, FLOOR_ARM, arm))
            .collect(),
    })
}

/// Index of the fastest successful try (ties: the first tried).
pub fn fastest(tried: &[FloorTry]) -> Option<usize> {
    tried
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t.mean_cold_us.map(|us| (i, us)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i)
}

/// The knob (`--knob floor.screen=N`) giving the cold reps of the screen
/// every shape gets before the finalists get the full protocol (0: no
/// screen, every shape gets the full protocol).
pub const SCREEN_KNOB: &str = "floor.screen";
/// Cold reps of the screen when the knob is not set.
pub const DEFAULT_SCREEN_REPS: usize = 3;
/// Finalists: at most this many shapes ...
pub const MAX_FINALISTS: usize = 3;
/// ... whose screen mean is within this factor of the fastest screen.
pub const FINALIST_MARGIN: f64 = 1.05;

/// Cold reps of the floor's screen under `tuning` (`floor.screen`).
pub fn screen_reps(tuning: &crate::topk::Tuning) -> usize {
    tuning
        .int(SCREEN_KNOB)
        .map_or(DEFAULT_SCREEN_REPS, |n| n.max(0) as usize)
}

/// Indices of the shapes that get the full protocol after a screen: the
/// fastest screened shape and those within [`FINALIST_MARGIN`] of it, at
/// most [`MAX_FINALISTS`], fastest first. Shapes without a screen mean
/// (failed) are never finalists. Pure.
pub fn finalists(screen_means: &[Option<f64>]) -> Vec<usize> {
    let mut timed: Vec<(usize, f64)> = screen_means
        .iter()
        .enumerate()
        .filter_map(|(i, m)| m.filter(|us| us.is_finite()).map(|us| (i, us)))
        .collect();
    timed.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    let Some(&(_, best)) = timed.first() else {
        return Vec::new();
    };
    timed
        .into_iter()
        .take_while(|&(_, us)| us <= best * FINALIST_MARGIN)
        .take(MAX_FINALISTS)
        .map(|(i, _)| i)
        .collect()
}

/// Appends floor records to `<run>/floor.jsonl`, one flushed line each.
pub struct FloorWriter(JsonlWriter);

impl FloorWriter {
    /// Open `<run_dir>/floor.jsonl` for appending (a partial last line cut).
    pub fn open(run_dir: &Path) -> Result<FloorWriter> {
        JsonlWriter::open(&run_dir.join(FLOOR_FILE)).map(FloorWriter)
    }

    pub fn append(&mut self, record: &FloorRecord) -> Result<()> {
        self.0.append(record)
    }
}

/// The floor records of a run directory (none when it has no floor file).
pub fn read_floor_records(run_dir: &Path) -> Result<Vec<FloorRecord>> {
    let path = run_dir.join(FLOOR_FILE);
    if !path.exists() {
        return Ok(Vec::new());
    }
    read_lines(&path)
}

/// Cases whose floor a run directory already holds (`--resume` skips them).
pub fn floored_cases(run_dir: &Path) -> Result<HashSet<String>> {
    Ok(read_floor_records(run_dir)?
        .into_iter()
        .map(|r| r.case)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(rows: usize, n: &[u32], k: usize) -> Batch {
        let npad = 64;
        Batch {
            rows,
            npad,
            k,
            logits: vec![0.0; rows * npad],
            n: n.to_vec(),
            hints: vec![-1; rows * k],
            varlen: None,
        }
    }

    /// Residency of a small kernel: 2,048 threads per SM.
    fn threads(block: u32) -> u32 {
        2048 / block
    }

    fn labels(s: &[FloorShape]) -> Vec<String> {
        s.iter().map(|s| s.label()).collect()
    }

    #[test]
    fn short_rows_get_one_cta_per_row_only() {
        let s = shapes(1, 1027, 132, &threads);
        assert_eq!(labels(&s), vec!["b256", "b512", "b1024"]);
    }

    #[test]
    fn many_rows_add_the_wave_tricks_where_they_act() {
        // 8 × 132 CTAs of 256 threads fit at once: 2,100 rows have a later
        // wave and are more than the 1.9 waves the stagger wants.
        let s = shapes(2100, 8192, 132, &threads);
        assert_eq!(
            labels(&s),
            vec![
                "b256",
                "b256 next-wave",
                "b256 stagger",
                "b512",
                "b512 next-wave",
                "b512 stagger",
                "b1024",
                "b1024 next-wave",
                "b1024 stagger",
            ]
        );
        let s = shapes(2000, 8192, 132, &threads);
        assert!(!labels(&s).contains(&"b256 stagger".to_string()));
        // One CTA per SM: nothing to stagger (every first-wave CTA is first).
        assert!(wave_args(FloorWave::Stagger, 2000, 8192, 132, 1).is_none());
        // One wave: nothing to prefetch.
        assert!(wave_args(FloorWave::NextWave, 1056, 8192, 132, 8).is_none());
        assert_eq!(
            wave_args(FloorWave::NextWave, 1057, 8192, 132, 8),
            Some(WaveArgs {
                ahead: 1056,
                sms: 132,
                per_sm: 8,
                stagger: 0
            })
        );
        // The ss stagger: 36,000 cycles at 65,536 values and beyond, in
        // proportion below, from 1.9 waves on.
        let st = |rows, n| wave_args(FloorWave::Stagger, rows, n, 132, 2).map(|w| w.stagger);
        assert_eq!(st(502, 131_072), Some(36_000));
        assert_eq!(st(502, 8192), Some(4_500));
        assert_eq!(st(501, 8192), None);
        // Unknown residency plans no trick.
        let none = shapes(100_000, 8192, 132, &|_| 0);
        assert!(none.iter().all(|s| s.wave.is_none()), "{none:?}");
    }

    #[test]
    fn wave_shapes_serialize_apart_and_old_records_read_without_one() {
        let shape = FloorShape {
            wave: Some(FloorWave::NextWave),
            ..FloorShape::rows(512)
        };
        let text = serde_json::to_string(&shape).unwrap();
        assert!(text.contains("\"wave\":\"next_wave\""), "{text}");
        assert_eq!(serde_json::from_str::<FloorShape>(&text).unwrap(), shape);
        let old = r#"{"block":256,"parts":1,"cluster":false}"#;
        assert_eq!(
            serde_json::from_str::<FloorShape>(old).unwrap(),
            FloorShape::rows(256)
        );
    }

    #[test]
    fn extra_shapes_come_from_the_knob() {
        let mut t = crate::topk::Tuning::default();
        assert!(extra_shapes(&t).unwrap().is_empty());
        t.set(EXTRA_SHAPES_KNOB, "b512,b256:2x4096").unwrap();
        assert_eq!(extra_shapes(&t).unwrap().len(), 2);
        t.set(EXTRA_SHAPES_KNOB, "b500").unwrap();
        assert!(extra_shapes(&t)
            .unwrap_err()
            .to_string()
            .contains("floor.extra"));
    }

    #[test]
    fn long_rows_split_until_a_thread_has_one_float4() {
        let s = shapes(1, 262_144, 132, &threads);
        // Every split keeps at least 4·block values per CTA.
        for shape in &s {
            assert!(
                shape.slice(262_144) >= 4 * shape.block as usize,
                "{shape:?}"
            );
            assert!(!shape.cluster || shape.parts <= MAX_CLUSTER_PARTS);
        }
        let most = s.iter().filter(|s| s.block == 256).map(|s| s.parts).max();
        assert_eq!(most, Some(256));
        assert!(s.contains(&FloorShape {
            block: 1024,
            parts: 8,
            cluster: true,
            ring: None,
            wave: None,
        }));
        assert!(!s.contains(&FloorShape {
            block: 1024,
            parts: 16,
            cluster: true,
            ring: None,
            wave: None,
        }));
    }

    #[test]
    fn extra_shapes_parse_and_refuse_what_cannot_launch() {
        let s = parse_extra_shapes("b512, b512:4x16384,b256:8x8192").unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].ring, None);
        assert_eq!(
            s[1].ring,
            Some(FloorRing {
                stages: 4,
                chunk: 16384
            })
        );
        assert_eq!(s[1].label(), "b512 ring 4x16384");
        assert!(s.iter().all(|s| s.parts == 1 && !s.cluster));
        assert_eq!(parse_extra_shapes("").unwrap(), vec![]);
        for (bad, why) in [
            ("512", "no block size"),
            ("b500", "multiple of 32"),
            ("b512:4", "no ring"),
            ("b512:0x16384", "stages"),
            ("b512:4x100", "multiple of 16"),
            ("b512:16x65536", "226 KiB"),
            ("b512:1x232448", "226 KiB"),
        ] {
            let e = parse_extra_shapes(bad).unwrap_err();
            assert!(e.contains(why) && e.contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn big_batches_do_not_split() {
        // 1,024 rows × 2 CTAs exceeds 8 CTAs per SM on 132 SMs.
        let s = shapes(1024, 262_144, 132, &threads);
        assert!(s.iter().all(|s| s.parts == 1), "{s:?}");
        let s = shapes(512, 262_144, 132, &threads);
        assert!(s.iter().any(|s| s.parts == 2) && s.iter().all(|s| s.parts <= 2));
    }

    #[test]
    fn slices_cover_the_row_in_whole_float4s() {
        for (n, parts) in [(131_087usize, 8u32), (4_111, 2), (262_144, 256), (7, 2)] {
            let shape = FloorShape {
                block: 256,
                parts,
                cluster: false,
                ring: None,
                wave: None,
            };
            let slice = shape.slice(n);
            assert_eq!(slice % 4, 0);
            assert!(slice * parts as usize >= n);
            assert!(slice * (parts as usize - 1) < n.max(1) + 4 * parts as usize);
        }
    }

    #[test]
    fn output_check_wants_the_identity_pattern() {
        let b = batch(2, &[3, 9], 4);
        let good = vec![0, 1, 2, -1, 0, 1, 2, 3];
        assert_eq!(check_output(&b, &good), Ok(()));
        let mut bad = good.clone();
        bad[3] = 3;
        assert!(check_output(&b, &bad).unwrap_err().contains("row 0 slot 3"));
        let mut unwritten = good.clone();
        unwritten[6] = i32::MIN;
        assert!(check_output(&b, &unwritten)
            .unwrap_err()
            .contains("row 1 slot 2"));
        assert!(check_output(&b, &good[..7]).is_err());
    }

    #[test]
    fn finalists_are_the_fastest_few_within_the_margin() {
        // Fastest first; ties by index; failed (None) and non-finite never.
        let m = |v: &[Option<f64>]| finalists(v);
        assert_eq!(
            m(&[Some(10.0), Some(10.4), Some(9.9), None, Some(10.39)]),
            vec![2, 0, 4]
        );
        // The margin: 5 % above the fastest screen is in, more is out.
        assert_eq!(m(&[Some(10.0), Some(10.5), Some(10.51)]), vec![0, 1]);
        assert_eq!(m(&[Some(10.0), Some(20.0)]), vec![0]);
        // At most MAX_FINALISTS, even when more are within the margin.
        assert_eq!(m(&[Some(1.0); 5]).len(), MAX_FINALISTS);
        assert_eq!(m(&[Some(1.0); 5]), vec![0, 1, 2]);
        assert_eq!(
            m(&[None, Some(f64::NAN), Some(f64::INFINITY)]),
            Vec::<usize>::new()
        );
        assert_eq!(m(&[]), Vec::<usize>::new());
    }

    #[test]
    fn screen_reps_come_from_the_knob() {
        let mut t = crate::topk::Tuning::default();
        assert_eq!(screen_reps(&t), DEFAULT_SCREEN_REPS);
        t.set(SCREEN_KNOB, "0").unwrap();
        assert_eq!(screen_reps(&t), 0);
        t.set(SCREEN_KNOB, "5").unwrap();
        assert_eq!(screen_reps(&t), 5);
        assert!(t.set(SCREEN_KNOB, "-1").is_err());
        assert!(t.set(SCREEN_KNOB, "65").is_err());
    }

    #[test]
    fn a_try_without_a_screen_reads_and_writes_as_before() {
        // Records of runs made before the screen have no screen_cold_us.
        let old =
            r#"{"shape":{"block":256,"parts":1,"cluster":false},"mean_cold_us":3.5,"error":null}"#;
        let t: FloorTry = serde_json::from_str(old).unwrap();
        assert_eq!(t.screen_cold_us, None);
        assert_eq!(t.mean_cold_us, Some(3.5));
        assert!(!serde_json::to_string(&t)
            .unwrap()
            .contains("screen_cold_us"));
        let screened = FloorTry {
            screen_cold_us: Some(3.6),
            mean_cold_us: None,
            ..t
        };
        let back: FloorTry =
            serde_json::from_str(&serde_json::to_string(&screened).unwrap()).unwrap();
        assert_eq!(back, screened);
    }

    #[test]
    fn fastest_skips_failed_shapes() {
        let shape = FloorShape {
            block: 256,
            parts: 1,
            cluster: false,
            ring: None,
            wave: None,
        };
        let t = |us: Option<f64>| FloorTry {
            shape,
            mean_cold_us: us,
            screen_cold_us: None,
            error: us.is_none().then(|| "launch failed".to_string()),
        };
        assert_eq!(fastest(&[t(Some(3.0)), t(None), t(Some(2.5))]), Some(2));
        assert_eq!(fastest(&[t(None)]), None);
        assert_eq!(fastest(&[]), None);
    }

    fn floor_of(case: &str, b: u32, cold_us: Vec<f64>) -> FloorRecord {
        FloorRecord {
            case: case.into(),
            cell: case.split('@').next().unwrap().into(),
            model: Model::Pro,
            isl: "4k".into(),
            layer: 2,
            n: 1027,
            k: 1024,
            b,
            bytes: 4 * u64::from(b) * (1027 + 1024),
            best: (!cold_us.is_empty()).then_some(FloorShape {
                block: 256,
                parts: 1,
                cluster: false,
                ring: None,
                wave: None,
            }),
            cold_us,
            warm_us: Vec::new(),
            tried: Vec::new(),
            error: None,
            method: None,
        }
    }

    #[test]
    fn section_puts_every_arm_over_the_floor() {
        let floors = vec![
            floor_of("c@b1", 1, vec![2.0, 2.0]),
            floor_of("c@b8", 8, vec![4.0]),
            floor_of("d@b1", 1, Vec::new()),
        ];
        let arm = |case: &str, b: u32, us: f64| {
            let mut t = floors[0].case_time();
            t.case = case.into();
            t.b = b;
            t.arm = "ss".into();
            t.cold = ColdStats::of(&[us]);
            t
        };
        let cases = vec![
            arm("c@b1", 1, 3.0),
            arm("c@b8", 8, 6.0),
            arm("d@b1", 1, 5.0),
        ];
        let s = section(&cases, &floors, &["ss".to_string()], 4.49e12).unwrap();
        assert_eq!((s.cases, s.failed), (2, 1));
        assert_eq!(s.b1_median_us, Some(2.0));
        assert_eq!(s.best_shapes, vec![("b256".to_string(), 2)]);
        let ss = s.vs[0].summary.unwrap();
        // 3/2 and 6/4; the case without a floor is not paired.
        assert_eq!(ss.count, 2);
        assert!((ss.geomean - 1.5).abs() < 1e-12);
        assert_eq!(s.vs[0].not_comparable, 1);
        assert_eq!(s.roofline.cases, 2);
        assert!(section(&cases, &[], &["ss".to_string()], 4.49e12).is_none());
    }

    #[test]
    fn records_round_trip_and_a_torn_tail_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let record = FloorRecord {
            case: "v32_4k_L00@b1".into(),
            cell: "v32_4k_L00".into(),
            model: Model::V32,
            isl: "4k".into(),
            layer: 0,
            n: 4111,
            k: 2048,
            b: 1,
            bytes: 24_636,
            best: Some(FloorShape {
                block: 1024,
                parts: 1,
                cluster: false,
                ring: None,
                wave: None,
            }),
            cold_us: vec![2.0, 2.2],
            warm_us: vec![1.8],
            tried: Vec::new(),
            error: None,
            method: None,
        };
        let mut w = FloorWriter::open(dir.path()).unwrap();
        w.append(&record).unwrap();
        drop(w);
        let path = dir.path().join(FLOOR_FILE);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, b"{\"case\":\"tor").unwrap();
        drop(f);
        assert_eq!(
            read_floor_records(dir.path()).unwrap(),
            vec![record.clone()]
        );
        let mut w = FloorWriter::open(dir.path()).unwrap();
        w.append(&record).unwrap();
        assert_eq!(read_floor_records(dir.path()).unwrap().len(), 2);
        let ct = record.case_time();
        assert_eq!(ct.arm, FLOOR_ARM);
        assert!((ct.usable_mean_us().unwrap() - 2.1).abs() < 1e-12);
        assert_eq!(ct.variant.as_deref(), Some("b1024"));
    }
}
