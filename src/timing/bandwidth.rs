//! The device's own read bandwidth: the denominator of every roofline and
//! bandwidth fraction in a report.
//!
//! `flush_read_bw` (kernels/harness/flush.cu) streams a buffer far larger
//! than the L2 (2 GiB, or a quarter of the device memory if smaller), four
//! independent 16-byte loads in flight per thread. It runs as an arm under
//! the run's own timer (CUPTI kernel time where the run uses it, else events),
//! so every rep starts from a flushed L2, and it is tried under a few launch
//! shapes; the figure is the best shape's bytes over its mean cold time.
//! `gpu info` prints it and every GPU `grid` run records it in its manifest
//! (`notes.device_read_bandwidth`), where `report` finds it.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
use serde::{Deserialize, Serialize};

use crate::arms::{Arm, Backend, Shape};
use crate::error::{GvrError, Result};
use crate::gpu::{sources, Gpu};
use crate::grid::Batch;
use crate::timing::{Protocol, Timer, TimingMethod};

/// Manifest key (under `notes`) of the probe's result.
pub const MANIFEST_NOTE: &str = "device_read_bandwidth";

/// Largest probe buffer.
const MAX_BYTES: u64 = 2 << 30;

/// Launch shapes tried: (CTAs per SM, threads per CTA).
const SHAPES: [(u32, u32); 4] = [(2, 1024), (4, 512), (8, 256), (4, 1024)];

/// What the probe measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadBandwidth {
    /// Bytes read per second by the best launch shape (mean of its cold reps).
    pub bytes_per_s: f64,
    /// Bytes one launch reads.
    pub buffer_bytes: u64,
    /// The best shape, e.g. `528 CTAs x 512 threads`.
    pub shape: String,
    pub method: TimingMethod,
    pub cold_reps: usize,
    /// Every shape tried with its bytes/s.
    pub shapes: Vec<(String, f64)>,
}

impl ReadBandwidth {
    /// One line for logs and `gpu info`.
    pub fn describe(&self) -> String {
        format!(
            "{:.3} TB/s read ({} MiB streamed once per launch, {}, mean of {} cold reps, {})",
            self.bytes_per_s / 1e12,
            self.buffer_bytes >> 20,
            self.shape,
            self.cold_reps,
            self.method.label()
        )
    }
}

/// Probe buffer size for a device with `total` bytes of memory: 2 GiB, or a
/// quarter of the memory, rounded down to 16 bytes.
pub fn buffer_bytes(total: u64) -> u64 {
    MAX_BYTES.min(total / 4) / 16 * 16
}

/// The read-bandwidth kernel as an arm, so the run's timer measures it.
struct ReadProbe {
    gpu: Arc<Gpu>,
    function: CudaFunction,
    data: CudaSlice<u8>,
    sink: CudaSlice<u8>,
    words16: u64,
    config: LaunchConfig,
}

impl Arm for ReadProbe {
    fn name(&self) -> &str {
        "read-bandwidth-probe"
    }
    fn backend(&self) -> Backend {
        Backend::Gpu
    }
    fn admits(&self, _shape: &Shape) -> std::result::Result<(), String> {
        Ok(())
    }
    fn stage(&mut self, _batch: &Batch) -> Result<()> {
        Ok(())
    }
    fn poison_output(&mut self) -> Result<()> {
        Ok(())
    }
    fn launch(&mut self) -> Result<()> {
        let stream = self.gpu.stream.clone();
        let mut launch = stream.launch_builder(&self.function);
        launch
            .arg(&self.data)
            .arg(&self.words16)
            .arg(&mut self.sink);
        // SAFETY: flush_read_bw(const uint4*, u64 words16, uint4* sink): the
        // buffer holds words16 16-byte words and the sink 16 bytes.
        unsafe { launch.launch(self.config) }.map_err(|e| GvrError::Kernel {
            name: "flush_read_bw".into(),
            message: format!("launch failed: {e:?}"),
        })?;
        Ok(())
    }
    fn read_output(&mut self) -> Result<Vec<i32>> {
        Ok(Vec::new())
    }
}

/// Measure the device's read bandwidth with `timer` (the run's timer, so
/// the figure is taken the way the arms are).
pub fn measure(gpu: &Arc<Gpu>, timer: &mut dyn Timer) -> Result<ReadBandwidth> {
    let bytes = buffer_bytes(gpu.facts.total_mem_bytes);
    if bytes < 4 * gpu.facts.l2_bytes {
        return Err(GvrError::Gpu(format!(
            "read-bandwidth probe: {} MiB of device memory is too little for a buffer four times the L2",
            gpu.facts.total_mem_bytes >> 20
        )));
    }
    let module = gpu.module(&sources::FLUSH, &[])?;
    let data = gpu.zeroed::<u8>(bytes as usize)?;
    let sink = gpu.zeroed::<u8>(16)?;
    let mut probe = ReadProbe {
        gpu: gpu.clone(),
        function: gpu.function(&module, "flush_read_bw")?,
        data,
        sink,
        words16: bytes / 16,
        config: LaunchConfig::for_num_elems(1),
    };
    gpu.synchronize()?;
    let protocol = Protocol {
        warmup: 2,
        warm_reps: 0,
        cold_reps: 5,
        ..Protocol::default()
    };
    let sms = gpu.facts.sms.max(1);
    let mut best: Option<(String, f64, TimingMethod)> = None;
    let mut shapes = Vec::new();
    for (per_sm, threads) in SHAPES {
        probe.config = LaunchConfig {
            grid_dim: (sms * per_sm, 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: 0,
        };
        let timings = timer.measure(&mut probe, &protocol)?;
        let mean_us = timings.cold_us.iter().sum::<f64>() / timings.cold_us.len().max(1) as f64;
        if !(mean_us.is_finite() && mean_us > 0.0) {
            continue;
        }
        let rate = bytes as f64 / (mean_us * 1e-6);
        let label = format!("{} CTAs x {threads} threads", sms * per_sm);
        shapes.push((label.clone(), rate));
        if best.as_ref().is_none_or(|(_, r, _)| rate > *r) {
            best = Some((label, rate, timings.method));
        }
    }
    gpu.synchronize()?;
    drop(probe);
    // The probe is not a phase of any arm: its reps leave the timer here.
    drop(timer.take_phases());
    let (shape, bytes_per_s, method) = best.ok_or_else(|| {
        GvrError::Gpu("read-bandwidth probe: no launch shape gave a positive time".into())
    })?;
    Ok(ReadBandwidth {
        bytes_per_s,
        buffer_bytes: bytes,
        shape,
        method,
        cold_reps: protocol.cold_reps,
        shapes,
    })
}

/// Read the probe's result back from a manifest's notes.
pub fn from_notes(
    notes: &std::collections::BTreeMap<String, serde_json::Value>,
) -> Option<ReadBandwidth> {
    notes
        .get(MANIFEST_NOTE)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_is_two_gib_or_a_quarter_of_memory() {
        assert_eq!(buffer_bytes(141 << 30), 2 << 30);
        assert_eq!(buffer_bytes(4 << 30), 1 << 30);
        assert_eq!(buffer_bytes(1001) % 16, 0);
    }

    #[test]
    fn round_trips_through_manifest_notes() {
        let bw = ReadBandwidth {
            bytes_per_s: 4.1e12,
            buffer_bytes: 2 << 30,
            shape: "528 CTAs x 512 threads".into(),
            method: TimingMethod::Cupti,
            cold_reps: 5,
            shapes: vec![("528 CTAs x 512 threads".into(), 4.1e12)],
        };
        let mut notes = std::collections::BTreeMap::new();
        notes.insert(
            MANIFEST_NOTE.to_string(),
            serde_json::to_value(&bw).unwrap(),
        );
        assert_eq!(from_notes(&notes), Some(bw.clone()));
        assert!(
            bw.describe().starts_with("4.100 TB/s read"),
            "{}",
            bw.describe()
        );
        assert_eq!(from_notes(&Default::default()), None);
    }
}
