//! `gvr-bench gpu info`: open the device, print its facts, build every
//! kernel variant (reporting compile time and cache hits), round-trip a
//! batch through device memory, run the flush kernel, time an empty
//! kernel with both timing methods and measure the device's read bandwidth.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaFunction, LaunchConfig};

use crate::arms::{Arm, Backend, Shape};
use crate::error::{GvrError, Result};
use crate::exact::UNWRITTEN;
use crate::gpu::{driver_err, nvrtc, sources, DeviceBatch, Gpu, KernelBuild, L2Flusher};
use crate::grid::Batch;
use crate::timing::gpu::{GpuTimer, TimingChoice};
use crate::timing::{Protocol, Timer};

/// An arm that launches the empty probe kernel: what each timing method
/// reports for it is that method's floor.
struct EmptyKernelArm {
    gpu: Arc<Gpu>,
    probe: CudaFunction,
}

impl Arm for EmptyKernelArm {
    fn name(&self) -> &str {
        "empty-kernel"
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
        let mut launch = stream.launch_builder(&self.probe);
        // SAFETY: `flush_noop_probe()` takes no arguments.
        unsafe { launch.launch(LaunchConfig::for_num_elems(1)) }.map_err(|e| GvrError::Kernel {
            name: "flush_noop_probe".into(),
            message: format!("{e:?}"),
        })?;
        Ok(())
    }
    fn read_output(&mut self) -> Result<Vec<i32>> {
        Ok(Vec::new())
    }
}

fn summary(values: &[f64]) -> String {
    if values.is_empty() {
        return "no reps".into();
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!(
        "mean {mean:.2} µs, min {min:.2}, max {max:.2} (n={})",
        values.len()
    )
}

/// Run the GPU self-check on device 0 and return a human-readable report.
/// Hard failures (no device, a kernel that does not compile, a broken
/// upload) are errors; an unavailable CUPTI is reported, not fatal.
pub fn gpu_selfcheck() -> Result<String> {
    gpu_selfcheck_on(0)
}

pub fn gpu_selfcheck_on(ordinal: usize) -> Result<String> {
    let mut out = String::new();
    let gpu = Gpu::open(ordinal)?;
    let facts = serde_json::to_string_pretty(&gpu.facts).map_err(|e| GvrError::Other(e.into()))?;
    let _ = writeln!(out, "device facts:\n{facts}");
    let (nv_major, nv_minor) = nvrtc::nvrtc_version()?;
    let _ = writeln!(
        out,
        "nvrtc {nv_major}.{nv_minor}; kernel cache: {}",
        gpu.cache_dir().display()
    );

    // Build every variant the arms use: compiled in parallel first, then
    // each loaded (a variant the prebuild could not compile is compiled
    // again below, where its error is reported).
    let _ = writeln!(out, "\nkernels:");
    let all_started = Instant::now();
    let threads = crate::gpu::prebuild_threads();
    let builds: Vec<KernelBuild> = sources::variants()
        .into_iter()
        .map(|(source, defines)| KernelBuild { source, defines })
        .collect();
    let compiled = gpu.prebuild(&builds, threads)?;
    let _ = writeln!(
        out,
        "  prebuilt {compiled} in parallel ({threads} threads) in {:.2} s",
        all_started.elapsed().as_secs_f64()
    );
    for (source, defines) in sources::variants() {
        let before = gpu.compile_stats();
        let started = Instant::now();
        gpu.module(&source, &defines)?;
        let after = gpu.compile_stats();
        let how = if after.compiled > before.compiled {
            "compiled"
        } else if after.disk_hits > before.disk_hits {
            "disk cache"
        } else {
            "memo (prebuilt or loaded before)"
        };
        let _ = writeln!(
            out,
            "  {:<16} {:<40} {:>8.3} s  {how}",
            source.name,
            format!("{defines:?}"),
            started.elapsed().as_secs_f64()
        );
    }
    let stats = gpu.compile_stats();
    let _ = writeln!(
        out,
        "  compiled {} kernels, {} from the disk cache, in {:.2} s",
        stats.compiled,
        stats.disk_hits,
        all_started.elapsed().as_secs_f64()
    );

    // Batch round trip: upload, poison, download.
    let batch = Batch {
        rows: 3,
        npad: 128,
        k: 8,
        logits: (0..3 * 128).map(|i| i as f32).collect(),
        n: vec![128, 100, 64],
        hints: vec![-1; 3 * 8],
        varlen: None,
    };
    let staged = DeviceBatch::upload(&gpu, &batch)?;
    let output = staged.download_output()?;
    let poisoned = output.len() == 24 && output.iter().all(|&v| v == UNWRITTEN);
    let logits_back = gpu
        .stream
        .clone_dtoh(&staged.logits)
        .map_err(driver_err("download logits"))?;
    if !poisoned || logits_back != batch.logits {
        return Err(GvrError::Gpu(
            "device batch round trip returned different data".into(),
        ));
    }
    let _ = writeln!(
        out,
        "\ndevice batch round trip: ok (output poisoned with {UNWRITTEN})"
    );

    // Flush bandwidth, timed with events around one flush.
    let protocol = Protocol::default();
    let mut flusher = L2Flusher::new(&gpu, protocol.flush_bytes)?;
    let event = || {
        gpu.ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(driver_err("cuEventCreate"))
    };
    let (start, end) = (event()?, event()?);
    let mut flush_us = Vec::new();
    for _ in 0..5 {
        start
            .record(&gpu.stream)
            .map_err(driver_err("cuEventRecord"))?;
        flusher.flush()?;
        end.record(&gpu.stream)
            .map_err(driver_err("cuEventRecord"))?;
        end.synchronize()
            .map_err(driver_err("cuEventSynchronize"))?;
        flush_us.push(
            start
                .elapsed_ms(&end)
                .map_err(driver_err("cuEventElapsedTime"))? as f64
                * 1e3,
        );
    }
    let best = flush_us.iter().copied().fold(f64::INFINITY, f64::min);
    let _ = writeln!(
        out,
        "flush {} MiB: {} → {:.0} GB/s write",
        flusher.bytes() >> 20,
        summary(&flush_us),
        flusher.bytes() as f64 / (best * 1e-6) / 1e9
    );

    // Empty kernel under both methods.
    let module = gpu.module(&sources::FLUSH, &[])?;
    let mut arm = EmptyKernelArm {
        gpu: gpu.clone(),
        probe: gpu.function(&module, "flush_noop_probe")?,
    };
    for choice in [TimingChoice::Events, TimingChoice::Cupti] {
        let result = GpuTimer::with_choice(gpu.clone(), protocol, choice).and_then(|mut timer| {
            let timings = timer.measure(&mut arm, &protocol)?;
            Ok((timer.method(), timings))
        });
        match result {
            Ok((method, timings)) => {
                let _ = writeln!(
                    out,
                    "empty kernel [{method:?}]: warm {}; cold {}",
                    summary(&timings.warm_us),
                    summary(&timings.cold_us)
                );
            }
            Err(e) => {
                let _ = writeln!(out, "empty kernel [{choice:?}]: UNAVAILABLE: {e}");
            }
        }
    }

    // The device's own read bandwidth (the denominator of report fractions).
    let probed = GpuTimer::with_choice(gpu.clone(), protocol, TimingChoice::Auto)
        .and_then(|mut timer| crate::timing::bandwidth::measure(&gpu, &mut timer));
    match probed {
        Ok(bw) => {
            let _ = writeln!(out, "device read bandwidth: {}", bw.describe());
            for (shape, rate) in &bw.shapes {
                let _ = writeln!(out, "  {shape:<28} {:.3} TB/s", rate / 1e12);
            }
        }
        Err(e) => {
            let _ = writeln!(out, "device read bandwidth: UNAVAILABLE: {e}");
        }
    }
    Ok(out)
}
