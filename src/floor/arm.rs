//! The floor kernels on the GPU, and the measurement of one case's floor
//! under every shape of [`super::shapes`].
//!
//! [`FloorKernel`] implements [`Arm`] only so that the run's timer measures
//! it exactly as it measures the arms (same flushes, same CUPTI records);
//! it is never in the arm registry and its output is checked by
//! [`super::check_output`], not as a top-K.

use std::sync::Arc;

use cudarc::driver::{DeviceRepr, LaunchConfig};

use super::{
    check_output, fastest, wave_args, FloorRecord, FloorShape, FloorTry, WaveArgs, FLOOR_ARM,
};
use crate::arms::{Arm, Backend, Shape};
use crate::error::{GvrError, Result};
use crate::gpu::sources::KernelSource;
use crate::gpu::{DeviceBatch, Gpu, KernelBuild, Workspace};
use crate::grid::Batch;
use crate::timing::{Protocol, Timer};
use crate::topk::launcher::Launcher;
use crate::topk::to_u32;

pub const SOURCE: KernelSource = crate::gpu::sources::FLOOR;
const GRID_ENTRY: &str = "floor_grid";
const CLUSTER_ENTRY: &str = "floor_cluster";
const RING_ENTRY: &str = "floor_ring";
/// Warm-up calls per shape: the timer's first call also loads the module.
const FLOOR_WARMUP: usize = 2;

/// `FloorParams` of kernels/harness/floor.cu, same field order, all u32.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloorParams {
    pub npad: u32,
    pub k: u32,
    pub slice: u32,
    pub ahead: u32,
    pub sms: u32,
    pub per_sm: u32,
    pub stagger: u32,
}

impl FloorParams {
    fn set_wave(&mut self, w: WaveArgs) {
        (self.ahead, self.sms, self.per_sm, self.stagger) = (w.ahead, w.sms, w.per_sm, w.stagger);
    }
}

// SAFETY: plain old data, laid out as the kernel's `FloorParams` (seven u32).
unsafe impl DeviceRepr for FloorParams {}

/// The floor kernels over one staged batch, one shape at a time.
pub struct FloorKernel {
    launch: Launcher,
    batch: Option<DeviceBatch>,
    workspace: Workspace,
    shape: FloorShape,
    params: FloorParams,
    rows: u32,
    /// The staged batch's longest row (each shape's slice is cut from it).
    n_max: usize,
    /// Shapes tried after [`super::shapes`] (the `floor.extra` knob).
    extra: Vec<FloorShape>,
    /// Cold reps of the screen every shape gets before the finalists get
    /// the full protocol (the `floor.screen` knob; 0: no screen).
    screen: usize,
}

impl FloorKernel {
    pub fn new(gpu: Arc<Gpu>) -> FloorKernel {
        FloorKernel {
            workspace: Workspace::new(&gpu),
            launch: Launcher::new(gpu, FLOOR_ARM),
            batch: None,
            shape: FloorShape {
                block: 256,
                parts: 1,
                cluster: false,
                ring: None,
                wave: None,
            },
            params: FloorParams {
                npad: 0,
                k: 0,
                slice: 0,
                ahead: 0,
                sms: 0,
                per_sm: 0,
                stagger: 0,
            },
            rows: 0,
            n_max: 0,
            extra: Vec::new(),
            screen: super::DEFAULT_SCREEN_REPS,
        }
    }

    /// Screen every shape with `cold_reps` cold reps first (0: no screen).
    pub fn with_screen(mut self, cold_reps: usize) -> FloorKernel {
        self.screen = cold_reps;
        self
    }

    /// Also try `extra` on every case (one CTA per row each).
    pub fn with_extra_shapes(mut self, extra: Vec<FloorShape>) -> FloorKernel {
        self.extra = extra;
        self
    }

    /// SMs of the device (the shape planner's input).
    pub fn sms(&self) -> usize {
        self.launch.gpu().facts.sms as usize
    }

    /// One-CTA-per-row `floor_grid` CTAs of `block` threads one SM holds
    /// (0 when the occupancy query fails: no wave trick is planned then).
    pub fn per_sm(&mut self, block: u32) -> u32 {
        let build = KernelBuild {
            source: SOURCE,
            defines: Vec::new(),
        };
        self.launch
            .load(&build, GRID_ENTRY, 0)
            .and_then(|_| self.launch.resident_ctas_per_sm(block, 0))
            .map_or(0, |n| u32::try_from(n).unwrap_or(0))
    }

    /// Launch the staged batch with `shape` from now on.
    pub fn set_shape(&mut self, shape: FloorShape) -> Result<()> {
        let wave = match shape.wave {
            None => WaveArgs::default(),
            Some(_) if shape.parts != 1 || shape.cluster || shape.ring.is_some() => {
                return Err(GvrError::Usage(format!(
                    "floor shape {}: a wave trick runs one CTA per row on register loads",
                    shape.label()
                )))
            }
            Some(trick) => {
                let per_sm = self.per_sm(shape.block);
                wave_args(trick, self.rows as usize, self.n_max, self.sms(), per_sm).ok_or_else(
                    || {
                        GvrError::Usage(format!(
                            "floor shape {}: does nothing at {} rows on this device",
                            shape.label(),
                            self.rows
                        ))
                    },
                )?
            }
        };
        match shape.ring {
            Some(ring) => {
                if shape.parts != 1 || shape.cluster {
                    return Err(GvrError::Usage(format!(
                        "floor shape {}: a ring streams one CTA per row",
                        shape.label()
                    )));
                }
                let build = KernelBuild {
                    source: SOURCE,
                    defines: vec![
                        ("FLOOR_RING_STAGES", ring.stages.to_string()),
                        ("FLOOR_RING_CHUNK", ring.chunk.to_string()),
                    ],
                };
                self.launch.load(&build, RING_ENTRY, ring.bytes())?;
            }
            None => {
                let entry = if shape.cluster {
                    CLUSTER_ENTRY
                } else {
                    GRID_ENTRY
                };
                let build = KernelBuild {
                    source: SOURCE,
                    defines: Vec::new(),
                };
                self.launch.load(&build, entry, 0)?;
            }
        }
        self.params.slice = to_u32(shape.slice(self.n_max), "slice").map_err(GvrError::Usage)?;
        self.params.set_wave(wave);
        self.shape = shape;
        Ok(())
    }

    /// Poison the output slots only, keeping the hand-off counters as the
    /// last launch left them (a test that they restore themselves).
    pub fn poison_slots(&mut self) -> Result<()> {
        self.staged()?.poison_output()
    }

    fn staged(&mut self) -> Result<&mut DeviceBatch> {
        let not_staged = self.launch.not_loaded();
        self.batch.as_mut().ok_or(not_staged)
    }
}

impl Arm for FloorKernel {
    fn name(&self) -> &str {
        FLOOR_ARM
    }

    fn backend(&self) -> Backend {
        Backend::Gpu
    }

    fn admits(&self, _shape: &Shape) -> std::result::Result<(), String> {
        Ok(())
    }

    fn stage(&mut self, batch: &Batch) -> Result<()> {
        let usage = GvrError::Usage;
        self.params.npad = to_u32(batch.npad, "npad").map_err(usage)?;
        self.params.k = to_u32(batch.k, "k").map_err(usage)?;
        self.rows = to_u32(batch.rows, "rows").map_err(usage)?;
        self.n_max = batch.n_max();
        // Two words per row, zero between launches (the last arriver restores them).
        self.workspace.ensure(8 * batch.rows)?;
        self.batch = None;
        self.batch = Some(DeviceBatch::upload(self.launch.gpu(), batch)?);
        Ok(())
    }

    fn poison_output(&mut self) -> Result<()> {
        self.workspace.zero()?;
        self.staged()?.poison_output()
    }

    fn launch(&mut self) -> Result<()> {
        let config = LaunchConfig {
            grid_dim: (self.shape.parts, self.rows, 1),
            block_dim: (self.shape.block, 1, 1),
            shared_mem_bytes: self.shape.ring.map_or(0, |r| r.bytes()),
        };
        let cluster = self.shape.cluster.then_some(self.shape.parts);
        let workspace = if self.shape.cluster || self.shape.ring.is_some() {
            None
        } else {
            Some(&*self.workspace.ensure(0)?)
        };
        // SAFETY: every entry takes (logits, n, hints, out, FloorParams) and
        // floor_grid also the workspace of two u32 per row that `stage`
        // sized; the grid is (parts, rows) and every part reads inside its
        // row's stride (slice · parts covers the longest row, loads stop at n; the
        // ring entry gets its stages · chunk bytes of dynamic shared memory).
        let batch = self
            .batch
            .as_mut()
            .ok_or_else(|| self.launch.not_loaded())?;
        unsafe {
            self.launch
                .launch_rows(batch, self.params, config, cluster, workspace)
        }
    }

    fn read_output(&mut self) -> Result<Vec<i32>> {
        let gpu = self.launch.gpu().clone();
        let batch = self.staged()?;
        gpu.synchronize()?;
        batch.download_output()
    }

    /// Its output is checked after each fully timed shape's reps
    /// (`check_output` on the last launch), not by the top-K checker: the
    /// timer skips the first launch's copy, a synchronisation and `rows · k`
    /// indices per shape.
    fn reads_first_output(&self) -> bool {
        false
    }
}

/// Time `batch` under every shape of [`super::shapes`] (with the device's
/// residency of `floor_grid`) and keep the fastest.
///
/// With a screen (the kernel's [`FloorKernel::with_screen`] reps, fewer than
/// the protocol's cold reps), every shape is first timed with that many cold
/// reps and no warm ones, its output neither poisoned nor read back; the
/// [`super::finalists`] then get the full protocol, their output checked, and
/// the floor is the fastest of them. (A screened shape is only ever a
/// candidate: the floor's value always comes from a checked full run.) The
/// finalists' full reps are fresh, so the floor is not the minimum of the
/// very means that chose it (that minimum leans low by the noise). Without a
/// screen every shape gets the full protocol.
///
/// A shape that fails (launch error, bad output) is recorded with its error
/// and skipped; the record has no floor when every shape failed, or, with
/// `error` set, when the batch could not be staged.
pub fn measure_floor(
    kernel: &mut FloorKernel,
    timer: &mut dyn Timer,
    batch: &Batch,
    protocol: &Protocol,
    mut record: FloorRecord,
) -> FloorRecord {
    let full = Protocol {
        warmup: protocol.warmup.min(FLOOR_WARMUP),
        ..*protocol
    };
    if let Err(e) = kernel.stage(batch) {
        record.error = Some(format!("stage: {e}"));
        return record;
    }
    let per_sm: Vec<(u32, u32)> = super::BLOCKS
        .iter()
        .map(|&b| (b, kernel.per_sm(b)))
        .collect();
    let resident = |block: u32| {
        per_sm
            .iter()
            .find(|(b, _)| *b == block)
            .map_or(0, |&(_, n)| n)
    };
    let mut shapes = super::shapes(batch.rows, batch.n_max(), kernel.sms(), &resident);
    shapes.extend(kernel.extra.iter().copied());
    let screening = kernel.screen > 0 && kernel.screen < full.cold_reps && shapes.len() > 1;
    let mut reps: Vec<Option<ShapeReps>> = vec![None; shapes.len()];
    record.tried = shapes
        .iter()
        .map(|&shape| FloorTry {
            shape,
            mean_cold_us: None,
            screen_cold_us: None,
            error: None,
        })
        .collect();
    // The shapes that get the full protocol: the screen's finalists, or all.
    let finalists: Vec<usize> = if screening {
        let screen = Protocol {
            warm_reps: 0,
            cold_reps: kernel.screen,
            ..full
        };
        for (i, &shape) in shapes.iter().enumerate() {
            let (mean, _, error) = time_shape(kernel, timer, batch, shape, &screen, false);
            (record.tried[i].screen_cold_us, record.tried[i].error) = (mean, error);
        }
        let screened: Vec<Option<f64>> = record.tried.iter().map(|t| t.screen_cold_us).collect();
        super::finalists(&screened)
    } else {
        (0..shapes.len()).collect()
    };
    for i in finalists {
        let (mean, timed, error) = time_shape(kernel, timer, batch, shapes[i], &full, true);
        (record.tried[i].mean_cold_us, record.tried[i].error) = (mean, error);
        reps[i] = timed;
    }
    if let Some(i) = fastest(&record.tried) {
        if let Some(ShapeReps { cold, warm, method }) = reps[i].take() {
            record.best = Some(record.tried[i].shape);
            (record.cold_us, record.warm_us, record.method) = (cold, warm, Some(method));
        }
    }
    record
}

/// The reps of one shape under the full protocol.
#[derive(Debug, Clone)]
struct ShapeReps {
    cold: Vec<f64>,
    warm: Vec<f64>,
    method: crate::record::TimingMethod,
}

/// Time `shape` under `protocol` and, with `check`, check its output (poisoned
/// first): the mean of the cold reps and the reps, or why it failed. The
/// screen skips the check: reading back and checking `rows · k` indices per
/// shape cost more than its few reps.
fn time_shape(
    kernel: &mut FloorKernel,
    timer: &mut dyn Timer,
    batch: &Batch,
    shape: FloorShape,
    protocol: &Protocol,
    check: bool,
) -> (Option<f64>, Option<ShapeReps>, Option<String>) {
    let mut measure = || -> Result<crate::timing::Timings> {
        kernel.set_shape(shape)?;
        if check {
            kernel.poison_output()?;
        }
        let t = timer.measure(kernel, protocol)?;
        if check {
            check_output(batch, &kernel.read_output()?)
                .map_err(|why| GvrError::Other(anyhow::anyhow!("floor output: {why}")))?;
        }
        Ok(t)
    };
    let measured = measure();
    match measured {
        Ok(t) => {
            let mean = crate::stats::ColdStats::of(&t.cold_us).map(|c| c.mean_us);
            let reps = ShapeReps {
                cold: t.cold_us,
                warm: t.warm_us,
                method: t.method,
            };
            (mean, Some(reps), None)
        }
        Err(e) => (None, None, Some(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_match_the_kernel_struct() {
        let fields =
            crate::gpu::sources::u32_struct_fields(SOURCE.code, "FloorParams").expect("all u32");
        assert_eq!(
            fields,
            ["npad", "k", "slice", "ahead", "sms", "per_sm", "stagger"]
        );
        assert_eq!(std::mem::size_of::<FloorParams>(), 4 * fields.len());
    }
}
