//! GPU timer: the cold-L2 protocol (docs/method.md, "Timing a case") on one stream.
//!
//! Per case: `warmup` untimed calls, `warm_reps` reps without eviction, then
//! `cold_reps` reps each preceded by a write of `flush_bytes` (default
//! 512 MiB, ~8× the H200's 60 MiB L2) that is never part of the timed value.
//!
//! The whole protocol of one (case, arm) is enqueued back to back and the
//! host waits for the GPU once: no per-rep synchronisation, so the GPU never
//! idles between reps and the host cost per case-arm is a few launches.
//!
//! Kernel time per rep, two back-ends:
//! - **CUPTI** (primary, `TimingMethod::Cupti`): GPU start/end timestamps of
//!   every kernel and memset the arm enqueued in that rep, summed — the same
//!   "summed kernel ns" nsys reports upstream. The timer brackets the reps
//!   with its own kernels (a zero-length `flush_spin` marker before the
//!   warm-up, before each warm rep and after the last rep; the `flush_l2`
//!   before each cold rep), drains CUPTI once and splits the records at
//!   those kernels ([`partition_reps`]). The timer's kernels are never part
//!   of an arm's time; gaps between an arm's kernels are not counted.
//! - **CUDA events** (fallback, `TimingMethod::CudaEvents`): per rep, a start
//!   event recorded right after the flush (cold) or a ~30 µs spin kernel
//!   (warm), the arm's launches, then the end event; one pair of events per
//!   rep, one synchronisation at the end. The flush/spin keeps the GPU busy
//!   while the host enqueues the arm, so host launch overhead is hidden.
//!   Gaps between an arm's kernels *are* counted, so events read slightly
//!   higher than CUPTI for multi-kernel arms.
//!
//! - **CUDA-graph replay** (`TimingMethod::GraphReplay`, the second method):
//!   the arm's launch sequence captured once per (case, arm) and replayed
//!   between events bracketed as above; see [`super::graph`] for the capture
//!   and the audit of which arms may be captured.
//!
//! `grid --timing cupti|graph|events` picks a back-end; without it, CUPTI
//! when it initialises, else events with one warning. One run times every GPU arm,
//! and its peers, with one method.

use std::sync::{Arc, Once};
use std::time::Instant;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::CudaEvent;

use crate::arms::{Arm, Backend};
use crate::error::{GvrError, Result};
use crate::gpu::{cupti, driver_err, Gpu, L2Flusher};
use crate::timing::phases::{Phase, PhaseTimes};
use crate::timing::{Protocol, Timer, TimingMethod, Timings};

/// Length of the spin kernel that keeps the GPU busy ahead of a warm rep in
/// events mode; longer than a typical multi-launch enqueue on the host.
const WARM_SPIN_US: u64 = 30;

/// Polls for late CUPTI records before a measurement gives up.
const CUPTI_RETRIES: usize = 200;

/// Kernels the timer itself enqueues; never part of an arm's time.
const TIMER_KERNELS: [&str; 2] = ["flush_l2", "flush_spin"];

/// Which back-end the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TimingChoice {
    /// CUPTI when available, else events (warned once).
    Auto,
    /// Kernel time: CUPTI kernel records, all kernels of one call summed.
    Cupti,
    /// CUDA-graph replay between events (audited arms only).
    Graph,
    /// CUDA events around eager launches.
    Events,
}

impl TimingChoice {
    /// Parse a method name (`cupti`, `graph`, `events`, empty = auto).
    pub fn parse(value: Option<&str>) -> Result<TimingChoice> {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("") | Some("auto") => Ok(TimingChoice::Auto),
            Some("cupti") => Ok(TimingChoice::Cupti),
            Some("graph") | Some("graph-replay") => Ok(TimingChoice::Graph),
            Some("events") | Some("cuda-events") => Ok(TimingChoice::Events),
            Some(other) => Err(GvrError::Usage(format!(
                "timing method `{other}`: expected `cupti`, `graph`, `events` or `auto`"
            ))),
        }
    }

    /// The command line's choice, else auto.
    pub fn resolve(flag: Option<TimingChoice>) -> Result<TimingChoice> {
        Ok(flag.unwrap_or(TimingChoice::Auto))
    }

    /// Whether CUPTI should be attached when the device is opened (it adds
    /// launch overhead, so not for the event-bracketed methods).
    pub fn wants_cupti(self) -> bool {
        matches!(self, TimingChoice::Auto | TimingChoice::Cupti)
    }

    /// The method this choice gives where no GPU timer decides (a peer of a
    /// CPU-only run): CUPTI kernel time unless another was asked for.
    pub fn nominal_method(self) -> TimingMethod {
        match self {
            TimingChoice::Auto | TimingChoice::Cupti => TimingMethod::Cupti,
            TimingChoice::Graph => TimingMethod::GraphReplay,
            TimingChoice::Events => TimingMethod::CudaEvents,
        }
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

/// The timer's marker kernel: a zero-cycle `flush_spin` enqueued before the
/// warm-up, before every warm rep and after the last rep, so one batch of
/// CUPTI records can be split into reps (cold reps start at their flush).
const MARKER_KERNEL: &str = "flush_spin";
/// The name CUPTI spans of memsets carry.
const MEMSET_SPAN: &str = "[memset]";
/// The L2 flush that opens every cold rep.
const FLUSH_KERNEL: &str = "flush_l2";

/// Waits for late CUPTI records after the one synchronisation of a
/// measurement: `CUPTI_RETRIES` polls `CUPTI_RETRY_WAIT` apart (50 ms in all).
const CUPTI_RETRY_WAIT: std::time::Duration = std::time::Duration::from_micros(250);

/// Per-rep kernel time recovered from one measurement's CUPTI records.
#[derive(Debug, Clone, PartialEq)]
pub struct RepTimes {
    pub warm_us: Vec<f64>,
    pub cold_us: Vec<f64>,
    /// Arm kernels and memsets seen in every rep.
    pub spans_per_rep: usize,
}

/// Outcome of splitting the records collected so far.
#[derive(Debug, Clone, PartialEq)]
pub enum Partition {
    Complete(RepTimes),
    /// Records are missing (late, or lost); the reason says which.
    Incomplete(String),
}

/// Split one measurement's spans into reps by the timer's own kernels.
///
/// Layout on the stream (one stream, so kernels never overlap):
/// `marker, warm-up × warmup, (marker, arm) × warm_reps, (flush, arm) ×
/// cold_reps, marker`. The spans are sorted by start time (CUPTI delivers
/// them in buffer order, which need not be launch order); the last
/// `warm_reps + cold_reps + 2` timer kernels are this measurement's
/// boundaries (earlier ones are stale records of earlier work) and must
/// follow the layout's name pattern. Rep `i` is every arm span between
/// boundary `i + 1` and `i + 2`; the warm-up lies between the first two.
///
/// Complete only when every rep holds the same number of arm spans and
/// no fewer than a warm-up call showed: a rep whose records are late would
/// otherwise be silently short. An arm that launched nothing at all is an
/// error, not a zero time.
pub fn partition_reps(
    spans: &[cupti::ActivitySpan],
    warmup: usize,
    warm_reps: usize,
    cold_reps: usize,
) -> Result<Partition> {
    let mut sorted: Vec<&cupti::ActivitySpan> = spans.iter().collect();
    sorted.sort_by_key(|s| (s.start_ns, s.end_ns));
    let boundaries: Vec<usize> = sorted
        .iter()
        .enumerate()
        .filter(|(_, s)| TIMER_KERNELS.contains(&s.name.as_str()))
        .map(|(i, _)| i)
        .collect();
    let expected = warm_reps + cold_reps + 2;
    if boundaries.len() < expected {
        return Ok(Partition::Incomplete(format!(
            "{} of {expected} timer marker records arrived",
            boundaries.len()
        )));
    }
    let boundaries = &boundaries[boundaries.len() - expected..];
    let expected_name = |b: usize| {
        if b == 0 || b == expected - 1 || b <= warm_reps {
            MARKER_KERNEL
        } else {
            FLUSH_KERNEL
        }
    };
    if let Some(b) = (0..expected).find(|&b| sorted[boundaries[b]].name != expected_name(b)) {
        return Ok(Partition::Incomplete(format!(
            "timer record {b} of the measurement is `{}`, expected `{}`",
            sorted[boundaries[b]].name,
            expected_name(b)
        )));
    }
    // Arm spans strictly between two consecutive boundaries.
    let between = |b: usize| &sorted[boundaries[b] + 1..boundaries[b + 1]];
    // Memsets are left out of the warm-up's count: the timer's own re-poison
    // of the output sits there, after the last warm-up call.
    let warmup_spans = between(0).iter().filter(|s| s.name != MEMSET_SPAN).count();
    let rep_spans: Vec<&[&cupti::ActivitySpan]> = (1..expected - 1).map(between).collect();
    let most = rep_spans.iter().map(|r| r.len()).max().unwrap_or(0);
    let per_warmup_call = warmup_spans.checked_div(warmup).unwrap_or(0);
    let want = most.max(per_warmup_call);
    if want == 0 {
        return Err(GvrError::Kernel {
            name: "timer".into(),
            message: "CUPTI recorded no kernel for this arm's launches".into(),
        });
    }
    if let Some((rep, spans)) = rep_spans.iter().enumerate().find(|(_, r)| r.len() < want) {
        return Ok(Partition::Incomplete(format!(
            "rep {rep} has {} of {want} kernel records",
            spans.len()
        )));
    }
    let us = |spans: &[&cupti::ActivitySpan]| {
        spans.iter().map(|s| s.duration_ns()).sum::<u64>() as f64 / 1e3
    };
    Ok(Partition::Complete(RepTimes {
        warm_us: rep_spans[..warm_reps].iter().map(|r| us(r)).collect(),
        cold_us: rep_spans[warm_reps..].iter().map(|r| us(r)).collect(),
        spans_per_rep: want,
    }))
}

static EVENTS_FALLBACK_WARNING: Once = Once::new();

enum Clock {
    Cupti {
        context_id: u32,
    },
    /// One (start, end) pair per rep, grown on demand.
    Events {
        pairs: Vec<(CudaEvent, CudaEvent)>,
    },
    /// Graph replays between events; pairs as for `Events`.
    Graph {
        pairs: Vec<(CudaEvent, CudaEvent)>,
    },
}

pub struct GpuTimer {
    gpu: Arc<Gpu>,
    flusher: L2Flusher,
    backend: Clock,
    spin_cycles: u64,
    /// Wall-time split of the last `measure`.
    phases: PhaseTimes,
}

impl GpuTimer {
    /// Timer for `gpu` with the automatic back-end choice (see module docs).
    pub fn new(gpu: Arc<Gpu>, protocol: Protocol) -> Result<GpuTimer> {
        Self::with_choice(gpu, protocol, TimingChoice::Auto)
    }

    pub fn with_choice(
        gpu: Arc<Gpu>,
        protocol: Protocol,
        choice: TimingChoice,
    ) -> Result<GpuTimer> {
        let flusher = L2Flusher::new(&gpu, protocol.flush_bytes)?;
        let backend = match choice {
            TimingChoice::Events => Clock::Events { pairs: Vec::new() },
            TimingChoice::Graph => Clock::Graph { pairs: Vec::new() },
            TimingChoice::Cupti => Clock::Cupti {
                context_id: cupti::context_id(&gpu.ctx)?,
            },
            TimingChoice::Auto => match cupti::context_id(&gpu.ctx) {
                Ok(context_id) => Clock::Cupti { context_id },
                Err(e) => {
                    EVENTS_FALLBACK_WARNING.call_once(|| {
                        tracing::warn!("CUPTI unavailable ({e}); timing with CUDA events");
                    });
                    Clock::Events { pairs: Vec::new() }
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
            phases: PhaseTimes::default(),
        })
    }

    /// The back-end this timer uses.
    pub fn method(&self) -> TimingMethod {
        match self.backend {
            Clock::Cupti { .. } => TimingMethod::Cupti,
            Clock::Events { .. } => TimingMethod::CudaEvents,
            Clock::Graph { .. } => TimingMethod::GraphReplay,
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

    /// CUPTI: enqueue the whole protocol with markers, synchronise once,
    /// then split the records into reps.
    fn measure_cupti(
        &mut self,
        arm: &mut dyn Arm,
        protocol: &Protocol,
        context_id: u32,
    ) -> Result<Timings> {
        // Forget what CUPTI holds now (staging, poisoning, earlier arms);
        // records of that work still in flight start before our first
        // marker and are ignored by the partition.
        self.gpu.synchronize()?;
        drop(cupti::take_spans(context_id)?);
        let started = Instant::now();
        self.flusher.spin(0)?;
        for _ in 0..protocol.warmup {
            arm.launch()?;
        }
        // Poisoned again so the first timed launch's output stands alone
        // (its memset lands in the warm-up's records, which the partition
        // counts without memsets).
        arm.poison_output()?;
        self.phases.add(Phase::Warmup, started.elapsed());

        let started = Instant::now();
        let mut first_output = None;
        for rep in 0..protocol.warm_reps + protocol.cold_reps {
            if rep < protocol.warm_reps {
                self.flusher.spin(0)?;
            } else {
                self.flusher.flush()?;
            }
            arm.launch()?;
            if rep == 0 && arm.reads_first_output() {
                // A copy out after a synchronisation: no kernel or memset
                // record, and the next rep opens with its own marker or flush.
                first_output = Some(arm.read_output()?);
            }
        }
        self.flusher.spin(0)?;
        self.gpu.synchronize()?;
        self.phases.add(Phase::TimedReps, started.elapsed());

        let started = Instant::now();
        let mut spans = Vec::new();
        let mut last_reason = String::new();
        for attempt in 0..=CUPTI_RETRIES {
            if attempt > 0 {
                std::thread::sleep(CUPTI_RETRY_WAIT);
            }
            spans.extend(cupti::take_spans(context_id)?);
            match partition_reps(
                &spans,
                protocol.warmup,
                protocol.warm_reps,
                protocol.cold_reps,
            )
            .map_err(|e| name_arm(e, arm.name()))?
            {
                Partition::Complete(reps) => {
                    self.phases.add(Phase::TimingCollect, started.elapsed());
                    return Ok(Timings {
                        cold_us: reps.cold_us,
                        warm_us: reps.warm_us,
                        method: TimingMethod::Cupti,
                        first_output,
                    });
                }
                Partition::Incomplete(reason) => last_reason = reason,
            }
        }
        self.phases.add(Phase::TimingCollect, started.elapsed());
        Err(GvrError::Gpu(format!(
            "CUPTI records incomplete for arm {}: {last_reason} (run with --timing events to time with CUDA events)",
            arm.name()
        )))
    }

    /// Events: a (start, end) pair per rep, all enqueued, one wait at the end.
    /// Graph: the same around one replay of the arm's captured launches.
    fn measure_events(&mut self, arm: &mut dyn Arm, protocol: &Protocol) -> Result<Timings> {
        let reps = protocol.warm_reps + protocol.cold_reps;
        let (pairs, graphed) = match &mut self.backend {
            Clock::Events { pairs } => (pairs, false),
            Clock::Graph { pairs } => (pairs, true),
            Clock::Cupti { .. } => {
                return Err(GvrError::Other(anyhow::anyhow!(
                    "events timing on a CUPTI timer"
                )))
            }
        };
        while pairs.len() < reps {
            let event = || {
                self.gpu
                    .ctx
                    .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(driver_err("cuEventCreate"))
            };
            pairs.push((event()?, event()?));
        }
        let started = Instant::now();
        let graph = if graphed {
            super::graph::audit(arm.name()).map_err(GvrError::Usage)?;
            // One eager call at least, so first-use scratch exists before
            // the capture records its address.
            for _ in 0..protocol.warmup.max(1) {
                arm.launch()?;
            }
            let graph = super::graph::capture(&self.gpu, arm)?;
            for _ in 0..protocol.warmup {
                graph.launch().map_err(driver_err("cuGraphLaunch"))?;
            }
            Some(graph)
        } else {
            for _ in 0..protocol.warmup {
                arm.launch()?;
            }
            None
        };
        arm.poison_output()?;
        self.phases.add(Phase::Warmup, started.elapsed());
        let mut first_output = None;

        let started = Instant::now();
        let stream = &self.gpu.stream;
        for (rep, (start, end)) in pairs.iter().take(reps).enumerate() {
            // The flush/spin keeps the GPU busy while the host enqueues the
            // arm, so the start event fires when it ends and host launch
            // overhead stays outside the window.
            if rep < protocol.warm_reps {
                self.flusher.spin(self.spin_cycles)?;
            } else {
                self.flusher.flush()?;
            }
            start.record(stream).map_err(driver_err("cuEventRecord"))?;
            match &graph {
                Some(graph) => graph.launch().map_err(driver_err("cuGraphLaunch"))?,
                None => arm.launch()?,
            }
            end.record(stream).map_err(driver_err("cuEventRecord"))?;
            if rep == 0 && arm.reads_first_output() {
                first_output = Some(arm.read_output()?);
            }
        }
        self.gpu.synchronize()?;
        // The graph holds the arm's buffers' addresses: gone before any restage.
        drop(graph);
        self.phases.add(Phase::TimedReps, started.elapsed());

        let started = Instant::now();
        let mut times = Vec::with_capacity(reps);
        for (start, end) in pairs.iter().take(reps) {
            let ms = start
                .elapsed_ms(end)
                .map_err(driver_err("cuEventElapsedTime"))?;
            times.push(ms as f64 * 1e3);
        }
        self.phases.add(Phase::TimingCollect, started.elapsed());
        let cold_us = times.split_off(protocol.warm_reps);
        Ok(Timings {
            cold_us,
            warm_us: times,
            method: if graphed {
                TimingMethod::GraphReplay
            } else {
                TimingMethod::CudaEvents
            },
            first_output,
        })
    }
}

/// Put the arm's name on a kernel error raised by the partition.
fn name_arm(error: GvrError, arm: &str) -> GvrError {
    match error {
        GvrError::Kernel { message, .. } => GvrError::Kernel {
            name: arm.to_string(),
            message,
        },
        other => other,
    }
}

impl Timer for GpuTimer {
    fn measure(&mut self, arm: &mut dyn Arm, protocol: &Protocol) -> Result<Timings> {
        // Phases add up until `take_phases`: a caller that measures several
        // times (the floor's shapes) before taking them is charged for all.
        if arm.backend() != Backend::Gpu {
            return Err(GvrError::Usage(format!(
                "arm {} runs on the CPU; time it with the host timer",
                arm.name()
            )));
        }
        self.fit_flush(protocol)?;
        match self.backend {
            Clock::Cupti { context_id } => self.measure_cupti(arm, protocol, context_id),
            Clock::Events { .. } | Clock::Graph { .. } => self.measure_events(arm, protocol),
        }
    }

    fn take_phases(&mut self) -> PhaseTimes {
        std::mem::take(&mut self.phases)
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
        assert_eq!(
            TimingChoice::parse(Some("graph-replay")).unwrap(),
            TimingChoice::Graph
        );
        assert!(matches!(
            TimingChoice::parse(Some("nsys")),
            Err(GvrError::Usage(_))
        ));
        assert!(!TimingChoice::Graph.wants_cupti() && TimingChoice::Auto.wants_cupti());
        assert_eq!(
            TimingChoice::Graph.nominal_method(),
            TimingMethod::GraphReplay
        );
    }

    /// The spans of one measurement laid out as the timer enqueues them:
    /// begin marker, warm-up, (marker, arm) per warm rep, (flush, arm) per
    /// cold rep, end marker. Each arm call is `kernels` back-to-back spans
    /// lasting `1000 × (rep + 1)` ns each, so every rep's time is distinct.
    fn measurement(
        warmup: usize,
        warm: usize,
        cold: usize,
        kernels: &[&str],
    ) -> Vec<cupti::ActivitySpan> {
        let mut spans = Vec::new();
        let mut t = 1_000_000u64;
        let mut push = |spans: &mut Vec<cupti::ActivitySpan>, name: &str, len: u64| {
            spans.push(span(name, t, t + len));
            t += len + 50;
        };
        push(&mut spans, MARKER_KERNEL, 10);
        for _ in 0..warmup {
            for k in kernels {
                push(&mut spans, k, 500);
            }
        }
        for rep in 0..warm + cold {
            let opener = if rep < warm {
                MARKER_KERNEL
            } else {
                FLUSH_KERNEL
            };
            push(&mut spans, opener, if rep < warm { 10 } else { 90_000 });
            for k in kernels {
                push(&mut spans, k, 1000 * (rep as u64 + 1));
            }
        }
        push(&mut spans, MARKER_KERNEL, 10);
        spans
    }

    fn complete(p: Partition) -> RepTimes {
        match p {
            Partition::Complete(reps) => reps,
            Partition::Incomplete(why) => panic!("incomplete: {why}"),
        }
    }

    #[test]
    fn partition_splits_multi_kernel_reps_at_markers() {
        let kernels = ["radix_hist", "[memset]", "radix_final"];
        let spans = measurement(3, 2, 3, &kernels);
        let reps = complete(partition_reps(&spans, 3, 2, 3).unwrap());
        assert_eq!(reps.spans_per_rep, 3);
        // Rep r: 3 spans of 1000·(r+1) ns.
        assert_eq!(reps.warm_us, vec![3.0, 6.0]);
        assert_eq!(reps.cold_us, vec![9.0, 12.0, 15.0]);
    }

    #[test]
    fn partition_ignores_delivery_order_and_stale_records() {
        let mut spans = measurement(2, 2, 2, &["k1", "k2"]);
        let want = complete(partition_reps(&spans, 2, 2, 2).unwrap());
        // Stale records of earlier work (an earlier flush, a staging memset)
        // that arrive late: they started before this measurement.
        spans.push(span(FLUSH_KERNEL, 10, 20));
        spans.push(span("[memset]", 30, 40));
        spans.push(span(MARKER_KERNEL, 50, 60));
        // Reverse and interleave the delivery order.
        spans.reverse();
        let half = spans.len() / 2;
        spans.rotate_left(half);
        assert_eq!(complete(partition_reps(&spans, 2, 2, 2).unwrap()), want);
    }

    #[test]
    fn partition_waits_for_a_late_arm_record() {
        let full = measurement(2, 2, 2, &["k1", "k2"]);
        // The last rep's second kernel has not been delivered yet.
        let last_arm = full.len() - 2;
        let mut late = full.clone();
        late.remove(last_arm);
        match partition_reps(&late, 2, 2, 2).unwrap() {
            Partition::Incomplete(why) => assert!(why.contains("rep 3 has 1 of 2"), "{why}"),
            other => panic!("a short rep must not pass: {other:?}"),
        }
        // Once it arrives, the rep is whole again.
        late.push(full[last_arm].clone());
        assert_eq!(
            complete(partition_reps(&late, 2, 2, 2).unwrap()).cold_us[1],
            8.0
        );
    }

    #[test]
    fn partition_without_warmup_still_detects_a_short_rep() {
        let mut spans = measurement(0, 1, 2, &["k1", "k2"]);
        // Drop one kernel of the middle rep: the other reps show 2.
        let victim = spans
            .iter()
            .position(|s| s.name == "k1" && s.duration_ns() == 2000)
            .unwrap();
        spans.remove(victim);
        assert!(matches!(
            partition_reps(&spans, 0, 1, 2).unwrap(),
            Partition::Incomplete(_)
        ));
    }

    #[test]
    fn partition_missing_rep_marker_is_incomplete_not_short() {
        let mut spans = measurement(1, 2, 2, &["k"]);
        // The end marker is late: the last rep is unbounded.
        spans.pop();
        assert!(matches!(
            partition_reps(&spans, 1, 2, 2).unwrap(),
            Partition::Incomplete(why) if why.contains("timer marker")
        ));
        // A cold flush lost entirely: the pattern no longer fits.
        let mut spans = measurement(1, 2, 2, &["k"]);
        let flush = spans.iter().position(|s| s.name == FLUSH_KERNEL).unwrap();
        spans.remove(flush);
        spans.push(span(MARKER_KERNEL, 1, 2)); // a stale marker makes the count match
        assert!(matches!(
            partition_reps(&spans, 1, 2, 2).unwrap(),
            Partition::Incomplete(_)
        ));
    }

    #[test]
    fn partition_of_an_arm_that_launched_nothing_is_an_error() {
        let spans = measurement(2, 1, 1, &[]);
        assert!(matches!(
            partition_reps(&spans, 2, 1, 1),
            Err(GvrError::Kernel { .. })
        ));
    }
}
