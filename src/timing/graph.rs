//! CUDA-graph replay, the second timing method (`TimingMethod::GraphReplay`).
//!
//! Per (case, arm): the arm's launch sequence (`Arm::launch`, once) is
//! captured in a CUDA graph on the run's stream and instantiated; each rep
//! replays the graph between two CUDA events recorded while the GPU is still
//! busy with the L2 flush (cold reps) or a ~30 µs spin kernel (warm reps), so
//! host and launch time stay outside the window — the same bracketing as the
//! events back-end, around one `cuGraphLaunch` instead of the arm's launches.
//! What a rep measures is what a graph user gets: the arm's kernels and the
//! gaps between them inside the graph.
//!
//! Capture safety. A graph freezes what `launch` enqueued the one time it was
//! captured, so `launch` must enqueue the same work every call, allocate
//! nothing and never wait for the host. [`audit`] is the list of arms whose
//! `launch` has been read for that (below, with what was checked); any other
//! arm is refused before the run starts, with the reason. Two guards back the
//! list at run time: capture runs in `CU_STREAM_CAPTURE_MODE_GLOBAL`, where
//! the driver fails any synchronising or allocating call made during the
//! capture (the error names the arm and case); and the checker verifies the
//! output the last replay wrote, as for every method. At least one eager
//! `launch` precedes the capture (even with `--warmup 0`), so scratch that an
//! arm allocates on first use exists before the graph records its address.

use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::CudaGraph;

use crate::arms::Arm;
use crate::error::{GvrError, Result};
use crate::gpu::Gpu;

/// Arms whose `launch` was read for capture safety, with what it enqueues.
/// Re-audit an entry whenever that arm's `launch` changes; an arm missing
/// here cannot be timed by graph replay.
pub const AUDITED: &[(&str, &str)] = &[
    (
        "radix",
        "one kernel (per-row 256/512/1024-thread or split entry), or three in stream order for the multi-pass tier (passes 0, 1, 2); split and multi-pass scratch from Workspace::ensure, allocated on the first (eager) call only; its state words are left zero by the last kernel of every call",
    ),
    (
        "radix-mcta",
        "one cooperative launch; scratch as radix (a driver that cannot capture cooperative launches fails the capture, loudly)",
    ),
    (
        "filtered",
        "one kernel, or the radix-mcta launch for the shapes it hands over",
    ),
    ("filtered-only", "one kernel; no scratch"),
    (
        "sglang-v2",
        "three kernels in stream order: the plan (rewrites the per-call row plan and resets the fallback counter in the workspace), the cluster-of-8 kernel (compile-time cluster dims, an ordinary launch) when the batch has long rows, the per-row kernel; workspace from Workspace::ensure, first call only; the fallback count is read after the call (Arm::call_note), outside any capture",
    ),
    ("gvr1", "one kernel; no scratch"),
    (
        "ss",
        "the routed family's launch (main, reg, clus or reg_clus, as ss-main, ss-reg, ss-clus, ss-regclus), planned at stage",
    ),
    (
        "ss-main",
        "one kernel (plus the waste kernel of the diagnostic knob ss.slowdown when set); SPLIT scratch from Workspace::ensure, first call only",
    ),
    ("ss-reg", "one kernel; no scratch"),
    (
        "ss-clus",
        "one cluster launch (cuLaunchKernelEx); the non-portable-cluster attribute is a host-side function attribute, set identically every call",
    ),
    ("ss-regclus", "one cluster launch, as ss-clus"),
    (
        "ss-varlen",
        "VarlenTopK::launch: one kernel, kv_lens read on the device; main's scratch from Workspace::ensure, first call only",
    ),
    ("ss-varlen-hints", "as ss-varlen"),
    (
        "floor",
        "one kernel (cluster, ring or grid entry); its two words per row are restored by the last arriver",
    ),
    ("empty-kernel", "one empty kernel (gpu info's timing floor)"),
    (
        "read-bandwidth-probe",
        "one streaming-read kernel (src/timing/bandwidth.rs)",
    ),
];

/// Why `arm` (an A/A twin `ARM#n` counts as `ARM`) may or may not be
/// captured: `Ok(what its launch enqueues)` or `Err(reason)`.
pub fn audit(arm: &str) -> std::result::Result<&'static str, String> {
    let base = arm.split_once('#').map_or(arm, |(base, _)| base);
    AUDITED
        .iter()
        .find(|(name, _)| *name == base)
        .map(|(_, what)| *what)
        .ok_or_else(|| {
            format!(
                "arm {arm}: its launch sequence has not been audited for CUDA-graph capture \
                 (src/timing/graph.rs lists the audited arms)"
            )
        })
}

/// Every arm of `arms` that graph replay must refuse, with the reason.
pub fn refused(arms: &[String]) -> Vec<String> {
    arms.iter().filter_map(|a| audit(a).err()).collect()
}

/// Capture one `launch` of `arm` on the run's stream into an instantiated
/// graph. The stream leaves capture mode whatever happens, so a failed
/// capture does not poison the next case.
pub fn capture(gpu: &Gpu, arm: &mut dyn Arm) -> Result<CudaGraph> {
    let stream = &gpu.stream;
    let name = arm.name().to_string();
    let named = |what: &str, message: String| GvrError::Kernel {
        name: name.clone(),
        message: format!("CUDA-graph capture ({what}): {message}"),
    };
    stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)
        .map_err(|e| named("begin", format!("{e:?}")))?;
    let launched = arm.launch();
    // End the capture even when the launch failed inside it.
    let ended = stream.end_capture(CUgraphInstantiate_flags(0));
    launched.map_err(|e| named("launch", e.to_string()))?;
    let graph = ended
        .map_err(|e| named("end", format!("{e:?}")))?
        .ok_or_else(|| named("end", "the launch enqueued nothing".into()))?;
    graph
        .upload()
        .map_err(|e| named("upload", format!("{e:?}")))?;
    Ok(graph)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_audited_name_is_an_arm_or_a_harness_kernel() {
        let known: Vec<&str> = crate::arms::registry::known_arms()
            .iter()
            .map(|a| a.name)
            .collect();
        for (name, what) in AUDITED {
            assert!(
                known.contains(name)
                    || ["floor", "empty-kernel", "read-bandwidth-probe"].contains(name),
                "{name} is not an arm"
            );
            assert!(!what.is_empty());
        }
    }

    #[test]
    fn every_gpu_arm_of_ours_is_audited() {
        for info in crate::arms::registry::known_arms() {
            if info.backend == crate::arms::Backend::Gpu {
                assert!(audit(info.name).is_ok(), "{} is not audited", info.name);
            }
        }
    }

    #[test]
    fn twins_share_the_audit_and_strangers_are_refused() {
        assert!(audit("radix").is_ok());
        assert_eq!(audit("radix#2"), audit("radix"));
        let why = audit("fi-radix").unwrap_err();
        assert!(why.contains("fi-radix") && why.contains("audited"), "{why}");
        assert!(audit("cpu-ref").is_err());
        let arms = ["ss".to_string(), "mystery".to_string()];
        assert_eq!(refused(&arms).len(), 1);
    }
}
