//! GPU timer: the cold-L2 protocol of METHOD.md §3 on one stream.
//!
//! Per case: `warmup` untimed calls, `warm_reps` reps without eviction, then
//! `cold_reps` reps each preceded by a write of `flush_bytes` (default
//! 512 MiB, ~8× the H200's 60 MiB L2) that is never part of the timed value.
//!
//! Kernel time per rep, two back-ends:
//! - **CUPTI** (primary, `TimingMethod::Cupti`): GPU start/end timestamps of
//!   every kernel and memset the arm enqueued in that rep, summed — the same
//!   "summed kernel ns" nsys reports upstream. The timer's own kernels
//!   (`flush_l2`, `flush_spin`) are excluded by name; gaps between an arm's
//!   kernels are not counted.
//! - **CUDA events** (fallback, `TimingMethod::CudaEvents`): a start event is
//!   recorded right after the flush (cold) or a ~30 µs spin kernel (warm) is
//!   enqueued, then the arm's launches, then the end event. Because the GPU
//!   is still busy with the flush/spin when the host enqueues the arm, the
//!   start event fires when that work ends and the arm's kernels follow back
//!   to back: host launch overhead is hidden (unless enqueuing the arm takes
//!   longer than the flush/spin). Gaps between an arm's kernels *are*
//!   counted, so events read slightly higher than CUPTI for multi-kernel arms.
//!
//! `GVR_TIMING=cupti|events` forces a back-end; unset means CUPTI when it
//! initialises, else events with one warning.
//!
//! Not done: a `--graph` mode (capture the arm's launches in a CUDA graph and
//! time replays, `TimingMethod::GraphReplay`) would be a third back-end here.

use std::sync::{Arc, Once};

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::CudaEvent;

use crate::arms::{Arm, Backend};
use crate::error::{GvrError, Result};
use crate::gpu::{cupti, driver_err, Gpu, L2Flusher};
use crate::timing::{Protocol, Timer, TimingMethod, Timings};

/// Environment switch forcing a back-end.
pub const TIMING_ENV: &str = "GVR_TIMING";

/// Length of the spin kernel that keeps the GPU busy ahead of a warm rep in
/// events mode; longer than a typical multi-launch enqueue on the host.
const WARM_SPIN_US: u64 = 30;

/// Extra 1 ms waits for CUPTI records of a finished rep before giving up.
const CUPTI_RETRIES: usize = 50;

/// Kernels the timer itself enqueues; never part of an arm's time.
const TIMER_KERNELS: [&str; 2] = ["flush_l2", "flush_spin"];

/// Which back-end the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimingChoice {
    /// CUPTI when available, else events (warned once).
    Auto,
    Cupti,
    Events,
}

impl TimingChoice {
    /// Parse `GVR_TIMING` (`cupti`, `events`, empty/unset = auto).
    pub fn parse(value: Option<&str>) -> Result<TimingChoice> {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("") | Some("auto") => Ok(TimingChoice::Auto),
            Some("cupti") => Ok(TimingChoice::Cupti),
            Some("events") | Some("cuda-events") => Ok(TimingChoice::Events),
            Some(other) => Err(GvrError::Usage(format!(
                "{TIMING_ENV}={other}: expected `cupti`, `events` or `auto`"
            ))),
        }
    }

    pub fn from_env() -> Result<TimingChoice> {
        Self::parse(std::env::var(TIMING_ENV).ok().as_deref())
    }
}

/// Sum of the durations of the arm's spans, in µs, excluding the timer's
/// own kernels. `None` when the arm ran nothing the profiler saw.
pub fn arm_kernel_us(spans: &[cupti::ActivitySpan]) -> Option<f64> {
    let arm: Vec<_> = spans
        .iter()
        .filter(|s| !TIMER_KERNELS.contains(&s.name.as_str()))
        .collect();
    if arm.is_empty() {
        None
    } else {
        Some(arm.iter().map(|s| s.duration_ns()).sum::<u64>() as f64 / 1e3)
    }
}

static EVENTS_FALLBACK_WARNING: Once = Once::new();

enum Clock {
    Cupti { context_id: u32 },
    Events { start: CudaEvent, end: CudaEvent },
}

pub struct GpuTimer {
    gpu: Arc<Gpu>,
    flusher: L2Flusher,
    backend: Clock,
    spin_cycles: u64,
    /// Arm spans per launch seen in the warm-up (CUPTI mode).
    spans_per_launch: Option<usize>,
}

impl GpuTimer {
    /// Timer for `gpu`, back-end chosen by `GVR_TIMING` (see module docs).
    pub fn new(gpu: Arc<Gpu>, protocol: Protocol) -> Result<GpuTimer> {
        Self::with_choice(gpu, protocol, TimingChoice::from_env()?)
    }

    pub fn with_choice(
        gpu: Arc<Gpu>,
        protocol: Protocol,
        choice: TimingChoice,
    ) -> Result<GpuTimer> {
        let flusher = L2Flusher::new(&gpu, protocol.flush_bytes)?;
        let backend = match choice {
            TimingChoice::Events => Self::events_backend(&gpu)?,
            TimingChoice::Cupti => Clock::Cupti {
                context_id: cupti::context_id(&gpu.ctx)?,
            },
            TimingChoice::Auto => match cupti::context_id(&gpu.ctx) {
                Ok(context_id) => Clock::Cupti { context_id },
                Err(e) => {
                    EVENTS_FALLBACK_WARNING.call_once(|| {
                        tracing::warn!("CUPTI unavailable ({e}); timing with CUDA events");
                    });
                    Self::events_backend(&gpu)?
                }
            },
        };
        // SM clock in kHz → cycles per µs = kHz / 1000. Assume 2 GHz if unknown.
        let khz = gpu.facts.sm_clock_khz.unwrap_or(2_000_000) as u64;
        let spin_cycles = WARM_SPIN_US * khz / 1000;
        Ok(GpuTimer {
            gpu,
            flusher,
            backend,
            spin_cycles,
            spans_per_launch: None,
        })
    }

    fn events_backend(gpu: &Arc<Gpu>) -> Result<Clock> {
        let event = || {
            gpu.ctx
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(driver_err("cuEventCreate"))
        };
        Ok(Clock::Events {
            start: event()?,
            end: event()?,
        })
    }

    /// The back-end this timer uses.
    pub fn method(&self) -> TimingMethod {
        match self.backend {
            Clock::Cupti { .. } => TimingMethod::Cupti,
            Clock::Events { .. } => TimingMethod::CudaEvents,
        }
    }

    /// The flush kernel and buffer (the self-check exercises them directly).
    pub fn flusher(&mut self) -> &mut L2Flusher {
        &mut self.flusher
    }

    /// Reallocate the flush buffer if the protocol asks for another size.
    fn fit_flush(&mut self, protocol: &Protocol) -> Result<()> {
        if self.flusher.bytes() != protocol.flush_bytes / 16 * 16 {
            self.flusher = L2Flusher::new(&self.gpu, protocol.flush_bytes)?;
        }
        Ok(())
    }

    /// One timed call of the arm, in µs of kernel time.
    fn rep(&mut self, arm: &mut dyn Arm, cold: bool) -> Result<f64> {
        match &self.backend {
            Clock::Cupti { context_id } => {
                let context_id = *context_id;
                if cold {
                    self.flusher.flush()?;
                }
                arm.launch()?;
                self.gpu.synchronize()?;
                let spans = self.collect_rep_spans(context_id)?;
                arm_kernel_us(&spans).ok_or_else(|| GvrError::Kernel {
                    name: arm.name().to_string(),
                    message: "CUPTI recorded no kernel for this launch".into(),
                })
            }
            Clock::Events { start, end } => {
                if cold {
                    self.flusher.flush()?;
                } else {
                    self.flusher.spin(self.spin_cycles)?;
                }
                start
                    .record(&self.gpu.stream)
                    .map_err(driver_err("cuEventRecord"))?;
                arm.launch()?;
                end.record(&self.gpu.stream)
                    .map_err(driver_err("cuEventRecord"))?;
                end.synchronize()
                    .map_err(driver_err("cuEventSynchronize"))?;
                let ms = start
                    .elapsed_ms(end)
                    .map_err(driver_err("cuEventElapsedTime"))?;
                Ok(ms as f64 * 1e3)
            }
        }
    }

    /// The spans of one rep. CUPTI may deliver a kernel's record a moment
    /// after the stream is idle, so keep flushing (briefly) until as many
    /// arm spans arrived as the warm-up showed per launch: a partial rep
    /// would silently under-count a multi-kernel arm.
    fn collect_rep_spans(&self, context_id: u32) -> Result<Vec<cupti::ActivitySpan>> {
        let want = self.spans_per_launch.unwrap_or(1);
        let mut spans = cupti::take_spans(context_id)?;
        for _ in 0..CUPTI_RETRIES {
            if arm_span_count(&spans) >= want {
                return Ok(spans);
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
            spans.extend(cupti::take_spans(context_id)?);
        }
        if arm_span_count(&spans) >= want {
            return Ok(spans);
        }
        Err(GvrError::Gpu(format!(
            "CUPTI delivered {} of {want} kernel records for a rep (set {TIMING_ENV}=events to time with CUDA events)",
            arm_span_count(&spans)
        )))
    }

    /// Wait for the stream and forget (return) everything CUPTI recorded so
    /// far (staging, poisoning, warm-up), so only the reps' own activity is
    /// summed.
    fn discard_pending(&mut self) -> Result<Vec<cupti::ActivitySpan>> {
        self.gpu.synchronize()?;
        match self.backend {
            Clock::Cupti { context_id } => cupti::take_spans(context_id),
            Clock::Events { .. } => Ok(Vec::new()),
        }
    }
}

/// Arm spans (not the timer's own kernels) in a list.
fn arm_span_count(spans: &[cupti::ActivitySpan]) -> usize {
    spans
        .iter()
        .filter(|s| !TIMER_KERNELS.contains(&s.name.as_str()))
        .count()
}

impl Timer for GpuTimer {
    fn measure(&mut self, arm: &mut dyn Arm, protocol: &Protocol) -> Result<Timings> {
        if arm.backend() != Backend::Gpu {
            return Err(GvrError::Usage(format!(
                "arm {} runs on the CPU; time it with the host timer",
                arm.name()
            )));
        }
        self.fit_flush(protocol)?;
        self.discard_pending()?;
        for _ in 0..protocol.warmup {
            arm.launch()?;
        }
        let warmup_spans = arm_span_count(&self.discard_pending()?);
        // Kernels (and memsets) per launch, when the warm-up shows a whole number.
        self.spans_per_launch = (protocol.warmup > 0
            && warmup_spans.is_multiple_of(protocol.warmup))
        .then(|| warmup_spans / protocol.warmup)
        .filter(|&n| n > 0);
        let mut warm_us = Vec::with_capacity(protocol.warm_reps);
        for _ in 0..protocol.warm_reps {
            warm_us.push(self.rep(arm, false)?);
        }
        let mut cold_us = Vec::with_capacity(protocol.cold_reps);
        for _ in 0..protocol.cold_reps {
            cold_us.push(self.rep(arm, true)?);
        }
        Ok(Timings {
            cold_us,
            warm_us,
            method: self.method(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(name: &str, start: u64, end: u64) -> cupti::ActivitySpan {
        cupti::ActivitySpan {
            name: name.into(),
            start_ns: start,
            end_ns: end,
            device_id: 0,
            context_id: 1,
            correlation_id: 0,
        }
    }

    #[test]
    fn sums_arm_kernels_and_skips_timer_kernels() {
        let spans = [
            span("flush_l2", 0, 100_000),
            span("radix_pass", 100_000, 101_500),
            span("[memset]", 101_600, 101_700),
            span("radix_final", 102_000, 104_000),
        ];
        let us = arm_kernel_us(&spans).unwrap();
        assert_eq!(arm_span_count(&spans), 3);
        assert!((us - 3.6).abs() < 1e-9, "{us}");
    }

    #[test]
    fn no_arm_kernel_is_none() {
        assert_eq!(arm_kernel_us(&[span("flush_spin", 0, 10)]), None);
        assert_eq!(arm_kernel_us(&[]), None);
        // The empty probe is an arm kernel, not a timer kernel.
        assert!(arm_kernel_us(&[span("flush_noop_probe", 0, 2000)]).is_some());
    }

    #[test]
    fn timing_choice_parses_env_values() {
        assert_eq!(TimingChoice::parse(None).unwrap(), TimingChoice::Auto);
        assert_eq!(TimingChoice::parse(Some("")).unwrap(), TimingChoice::Auto);
        assert_eq!(
            TimingChoice::parse(Some("CUPTI")).unwrap(),
            TimingChoice::Cupti
        );
        assert_eq!(
            TimingChoice::parse(Some("events")).unwrap(),
            TimingChoice::Events
        );
        assert!(matches!(
            TimingChoice::parse(Some("nsys")),
            Err(GvrError::Usage(_))
        ));
    }
}
