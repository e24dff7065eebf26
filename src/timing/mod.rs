//! The measurement protocol (docs/method.md, "Timing a case"): warm-up calls, warm-L2 reps and
//! cold-L2 reps, all raw reps kept. Back-ends: host clock for CPU arms; CUPTI
//! kernel time (the headline), CUDA-graph replay or CUDA events for GPU arms
//! (`gpu` timer, `graph` capture).

pub mod bandwidth;
pub mod gpu;
pub mod graph;
pub mod phases;

use serde::{Deserialize, Serialize};

use crate::arms::Arm;
use crate::error::Result;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Protocol {
    pub warmup: usize,
    pub warm_reps: usize,
    pub cold_reps: usize,
    /// Bytes written between cold reps to evict L2 (GPU only).
    pub flush_bytes: usize,
}

impl Default for Protocol {
    fn default() -> Self {
        Protocol {
            warmup: 10,
            warm_reps: 5,
            cold_reps: 10,
            flush_bytes: 512 << 20,
        }
    }
}

pub use crate::record::TimingMethod;

impl TimingMethod {
    /// The spelling of records and reports (`cupti`, `graph-replay`, ...).
    pub fn label(self) -> &'static str {
        match self {
            TimingMethod::HostClock => "host-clock",
            TimingMethod::Cupti => "cupti",
            TimingMethod::CudaEvents => "cuda-events",
            TimingMethod::GraphReplay => "graph-replay",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    pub cold_us: Vec<f64>,
    pub warm_us: Vec<f64>,
    pub method: TimingMethod,
    /// Output of the first timed launch: the output is poisoned again after
    /// the warm-up, so this is what that one launch wrote (the checker
    /// verifies it next to the last launch's output). `None` when no rep ran.
    #[serde(skip)]
    pub first_output: Option<Vec<i32>>,
}

/// Measures one staged arm under a protocol.
pub trait Timer {
    fn measure(&mut self, arm: &mut dyn Arm, protocol: &Protocol) -> Result<Timings>;

    /// Wall time of the last `measure` split into warm-up, timed reps and
    /// collection (empty when the timer does not split it; the caller then
    /// charges the whole call to the timed reps).
    fn take_phases(&mut self) -> phases::PhaseTimes {
        phases::PhaseTimes::default()
    }
}

/// Host-clock timer for CPU engines: no L2 flush (meaningless on a CPU
/// engine); warm and cold reps are the same measurement. CPU engines are
/// exactness references whose times only show relative CPU cost, so the
/// protocol is capped at one warm-up, two warm and three cold reps.
pub struct HostTimer;

/// Rep caps of `HostTimer` (warm-up, warm, cold).
pub const HOST_TIMER_MAX_REPS: (usize, usize, usize) = (1, 2, 3);

impl Timer for HostTimer {
    fn measure(&mut self, arm: &mut dyn Arm, protocol: &Protocol) -> Result<Timings> {
        let (max_warmup, max_warm, max_cold) = HOST_TIMER_MAX_REPS;
        let protocol = Protocol {
            warmup: protocol.warmup.min(max_warmup),
            warm_reps: protocol.warm_reps.min(max_warm),
            cold_reps: protocol.cold_reps.min(max_cold),
            ..*protocol
        };
        for _ in 0..protocol.warmup {
            arm.launch()?;
        }
        arm.poison_output()?;
        let mut first_output = None;
        let mut rep = |arm: &mut dyn Arm| -> Result<f64> {
            let t0 = std::time::Instant::now();
            arm.launch()?;
            let us = t0.elapsed().as_secs_f64() * 1e6;
            if first_output.is_none() && arm.reads_first_output() {
                first_output = Some(arm.read_output()?);
            }
            Ok(us)
        };
        let warm_us = (0..protocol.warm_reps)
            .map(|_| rep(&mut *arm))
            .collect::<Result<Vec<_>>>()?;
        let cold_us = (0..protocol.cold_reps)
            .map(|_| rep(&mut *arm))
            .collect::<Result<Vec<_>>>()?;
        Ok(Timings {
            cold_us,
            warm_us,
            method: TimingMethod::HostClock,
            first_output,
        })
    }
}
