//! The arm registry: every name the command line accepts, what it runs on,
//! and how to build it. An A/A twin is spelled `ARM#2`: a separate instance
//! of the same arm whose records carry the suffixed name. A knob variant is
//! spelled `ARM@NAME`: an instance that runs with the knobs of variant NAME
//! (an experiment's `[variants.NAME]`) instead of the run's.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::cpu_ref::CpuRef;
use super::{Arm, Backend, Shape};
use crate::error::{GvrError, Result};
use crate::gpu::Gpu;
use crate::grid::Batch;
use crate::topk::Tuning;

/// The knobs each arm instance of a run gets: the run's own (`--knob`,
/// `--tune`), or for an arm spelled `ARM@NAME` those of variant NAME.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tunings {
    pub base: Tuning,
    pub variants: BTreeMap<String, Tuning>,
}

impl Tunings {
    /// The tuning of arm `name`.
    pub fn for_arm(&self, name: &str) -> Result<&Tuning> {
        match split_name(name).2 {
            None => Ok(&self.base),
            Some(variant) => self.variants.get(variant).ok_or_else(|| {
                let defined = if self.variants.is_empty() {
                    " (variants come from `gvr-bench experiment FILE.toml`)".to_string()
                } else {
                    let names: Vec<&str> = self.variants.keys().map(String::as_str).collect();
                    format!(" (defined: {})", names.join(", "))
                };
                GvrError::Usage(format!(
                    "arm `{name}` names knob variant `{variant}`, which this run does not define{defined}"
                ))
            }),
        }
    }
}

/// Set by the hidden `--test-arms` flag: exposes the test-only arms (e.g.
/// `cpu-broken`) so integration tests can exercise failure paths.
static TEST_ARMS_ON: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Make the test-only arms known to this process (the hidden `--test-arms`).
pub fn enable_test_arms() {
    TEST_ARMS_ON.store(true, std::sync::atomic::Ordering::Relaxed);
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArmInfo {
    pub name: &'static str,
    pub backend: Backend,
    pub description: &'static str,
    /// Which shapes it runs, in words (the arm's `admits` is the authority).
    pub admits: &'static str,
}

const ARMS: &[ArmInfo] = &[
    ArmInfo {
        name: "cpu-ref",
        backend: Backend::Cpu,
        description: "exact CPU reference top-K (rayon over rows)",
        admits: "every shape",
    },
    ArmInfo {
        name: "cpu-ss",
        backend: Backend::Cpu,
        description: "CPU port of self-sampling GVR V2 (same route and ladder as `ss`)",
        admits: "every shape",
    },
    ArmInfo {
        name: "radix",
        backend: Backend::Gpu,
        description: "TensorRT-LLM's production decode radix top-K: its dispatcher with every tier (one CTA per row at 256/512/1024 threads, split rows, the 3-launch multi-pass tier); the tier that ran is recorded",
        admits: "every shape",
    },
    ArmInfo {
        name: "radix-mcta",
        backend: Backend::Gpu,
        description: "FlashInfer's multi-CTA radix top-K (row split across CTAs, one launch)",
        admits: "every shape",
    },
    ArmInfo {
        name: "filtered",
        backend: Backend::Gpu,
        description: "FlashInfer's top-K dispatch: FilteredTopK (one 1024-thread CTA per row, 8-bit coarse filter) or its multi-CTA radix where FlashInfer picks it",
        admits: "every shape",
    },
    ArmInfo {
        name: "filtered-only",
        backend: Backend::Gpu,
        description: "FlashInfer's FilteredTopK kernel forced on every shape (the `filtered` arm without its multi-CTA choice)",
        admits: "every shape",
    },
    ArmInfo {
        name: "gvr1",
        backend: Backend::Gpu,
        description: "GVR V1 (guess-verify-refine with the previous step's hint)",
        admits: "every shape (degenerate hints fall back exactly)",
    },
    ArmInfo {
        name: "sglang-v2",
        backend: Backend::Gpu,
        description: "our SGLang v2 design (plan + transform: per-row register or streaming pass, cluster-of-8 DSMEM for long rows, fp16 12-bit histogram, exact ties; exact fallback on threshold-bin overflow, counted per call)",
        admits: "every shape",
    },
    ArmInfo {
        name: "ss",
        backend: Backend::Gpu,
        description: "self-sampling GVR V2, routed per shape to main, reg/regimg, clus or reg_clus",
        admits: "every shape",
    },
    ArmInfo {
        name: "ss-main",
        backend: Backend::Gpu,
        description: "self-sampling V2 forced to the main (shared-memory) family",
        admits: "shapes the main family admits",
    },
    ArmInfo {
        name: "ss-reg",
        backend: Backend::Gpu,
        description: "self-sampling V2 forced to the register family (reg, or regimg where the route picks it)",
        admits: "rows of at most 4096 float4 plus a 1024-value tail (n <= 17408)",
    },
    ArmInfo {
        name: "ss-clus",
        backend: Backend::Gpu,
        description: "self-sampling V2 forced to the clustered streaming family (clus: CS 2/4/8 CTAs per row over DSMEM)",
        admits: "rows of at least 8192 values (the route's CS where it picks clus, else the largest co-resident CS)",
    },
    ArmInfo {
        name: "ss-varlen",
        backend: Backend::Gpu,
        description: "self-sampling V2 through the production varlen entry (kv_lens on the device, next_n, compress ratio; hint-free), planned for the max_seq_len = npad envelope",
        admits: "every shape ss admits; varlen batches keep their kv_lens",
    },
    ArmInfo {
        name: "ss-varlen-hints",
        backend: Backend::Gpu,
        description: "ss-varlen with request-level hints (each request's first row's hints)",
        admits: "as ss-varlen",
    },
    ArmInfo {
        name: "ss-regclus",
        backend: Backend::Gpu,
        description: "self-sampling V2 forced to the clustered-register family (reg_clus, k <= 1024)",
        admits: "shapes the clustered-register family admits",
    },
];

const TEST_ARMS: &[ArmInfo] = &[ArmInfo {
    name: "cpu-broken",
    backend: Backend::Cpu,
    description: "TEST ONLY: cpu-ref with row 0 deliberately corrupted",
    admits: "every shape",
}];

fn test_arms_enabled() -> bool {
    cfg!(test) || TEST_ARMS_ON.load(std::sync::atomic::Ordering::Relaxed)
}

/// Every arm this binary knows, in a stable order.
pub fn known_arms() -> Vec<ArmInfo> {
    let mut arms = ARMS.to_vec();
    if test_arms_enabled() {
        arms.extend_from_slice(TEST_ARMS);
    }
    arms
}

/// The arms a run without a GPU uses.
pub const CPU_ARMS: [&str; 2] = ["cpu-ref", "cpu-ss"];

/// Split `ARM#2@v` into (`ARM`, Some("2"), Some("v")).
fn split_name(name: &str) -> (&str, Option<&str>, Option<&str>) {
    let (rest, variant) = match name.split_once('@') {
        Some((rest, variant)) => (rest, Some(variant)),
        None => (name, None),
    };
    match rest.split_once('#') {
        Some((base, twin)) => (base, Some(twin), variant),
        None => (rest, None, variant),
    }
}

/// Look up an arm name (A/A suffix allowed); unknown → a usage error listing
/// the known arms.
pub fn info(name: &str) -> Result<ArmInfo> {
    let (base, suffix, variant) = split_name(name);
    if let Some(variant) = variant {
        let ok = !variant.is_empty()
            && variant
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !ok {
            return Err(GvrError::Usage(format!(
                "arm `{name}`: a knob variant is spelled ARM@NAME with NAME of letters, digits, `_` and `-`"
            )));
        }
    }
    if let Some(suffix) = suffix {
        if suffix.is_empty() || !suffix.chars().all(|c| c.is_ascii_digit()) {
            return Err(GvrError::Usage(format!(
                "arm `{name}`: an A/A twin is spelled ARM#<number>, e.g. `{base}#2`"
            )));
        }
    }
    known_arms()
        .into_iter()
        .find(|a| a.name == base)
        .ok_or_else(|| {
            let names: Vec<&str> = known_arms().iter().map(|a| a.name).collect();
            GvrError::Usage(format!(
                "unknown arm `{name}`; known arms: {}",
                names.join(", ")
            ))
        })
}

/// Parse a comma-separated `--arms` list: trims, drops empties, rejects
/// unknown and duplicate names.
pub fn parse_arm_list(list: &str) -> Result<Vec<String>> {
    let mut names: Vec<String> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        info(name)?;
        if names.iter().any(|n| n == name) {
            return Err(GvrError::Usage(format!(
                "arm `{name}` is listed twice in --arms"
            )));
        }
        names.push(name.to_string());
    }
    if names.is_empty() {
        return Err(GvrError::Usage("--arms is empty".into()));
    }
    Ok(names)
}

/// Build an arm by name with production knobs. GPU arms need `gpu`; an A/A
/// twin `ARM#n` is a fresh instance of `ARM` whose `name()` reports the
/// suffixed name.
pub fn create(name: &str, gpu: Option<Arc<Gpu>>) -> Result<Box<dyn Arm>> {
    create_tuned(name, gpu, &Tunings::default())
}

/// [`create`] with the knobs `tunings` gives the arm.
pub fn create_tuned(name: &str, gpu: Option<Arc<Gpu>>, tunings: &Tunings) -> Result<Box<dyn Arm>> {
    try_create(name, gpu, tunings)?
        .ok_or_else(|| GvrError::Usage(format!("arm `{name}` is not built into this binary yet")))
}

/// Like `create_tuned`, but `Ok(None)` for a known GPU arm whose kernels are
/// not part of this binary yet (default arm lists skip those instead of
/// failing).
pub fn try_create(
    name: &str,
    gpu: Option<Arc<Gpu>>,
    tunings: &Tunings,
) -> Result<Option<Box<dyn Arm>>> {
    let info = info(name)?;
    let tuning = tunings.for_arm(name)?;
    let base: Box<dyn Arm> = match info.name {
        "cpu-ref" => Box::new(CpuRef::new()),
        "cpu-ss" => Box::new(super::cpu_ss::CpuSs::new()),
        "cpu-broken" => Box::new(BrokenArm {
            inner: CpuRef::new(),
        }),
        "ss" | "ss-main" | "ss-reg" | "ss-clus" | "ss-regclus" => {
            super::ss::create(info.name, gpu, tuning)?
        }
        "ss-varlen" | "ss-varlen-hints" => super::ss_varlen::create(info.name, gpu)?,
        gpu_arm => {
            let gpu = gpu.ok_or_else(|| {
                GvrError::Usage(format!(
                    "arm `{gpu_arm}` runs on the GPU, and this run has none (CPU arms: {})",
                    CPU_ARMS.join(", ")
                ))
            })?;
            match super::baselines::create(gpu_arm, gpu) {
                Some(arm) => arm?,
                None => return Ok(None),
            }
        }
    };
    if name == info.name {
        Ok(Some(base))
    } else {
        Ok(Some(Box::new(Renamed {
            inner: base,
            name: name.to_string(),
        })))
    }
}

/// An A/A twin: forwards everything, reports its own name.
struct Renamed {
    inner: Box<dyn Arm>,
    name: String,
}

impl Arm for Renamed {
    fn name(&self) -> &str {
        &self.name
    }
    fn backend(&self) -> Backend {
        self.inner.backend()
    }
    fn admits(&self, shape: &Shape) -> std::result::Result<(), String> {
        self.inner.admits(shape)
    }
    fn variant(&self, shape: &Shape) -> Option<String> {
        self.inner.variant(shape)
    }
    fn builds(&self, shape: &Shape) -> Vec<crate::gpu::KernelBuild> {
        self.inner.builds(shape)
    }
    fn stage(&mut self, batch: &Batch) -> Result<()> {
        self.inner.stage(batch)
    }
    fn poison_output(&mut self) -> Result<()> {
        self.inner.poison_output()
    }
    fn launch(&mut self) -> Result<()> {
        self.inner.launch()
    }
    fn read_output(&mut self) -> Result<Vec<i32>> {
        self.inner.read_output()
    }
    fn call_note(&mut self) -> Option<String> {
        self.inner.call_note()
    }
}

/// Test-only: the reference with row 0's first slot overwritten by a copy of
/// its second (a duplicate index), so every check of it must fail.
struct BrokenArm {
    inner: CpuRef,
}

impl Arm for BrokenArm {
    fn name(&self) -> &str {
        "cpu-broken"
    }
    fn backend(&self) -> Backend {
        Backend::Cpu
    }
    fn admits(&self, shape: &Shape) -> std::result::Result<(), String> {
        self.inner.admits(shape)
    }
    fn stage(&mut self, batch: &Batch) -> Result<()> {
        self.inner.stage(batch)
    }
    fn poison_output(&mut self) -> Result<()> {
        self.inner.poison_output()
    }
    fn launch(&mut self) -> Result<()> {
        self.inner.launch()
    }
    fn read_output(&mut self) -> Result<Vec<i32>> {
        let mut out = self.inner.read_output()?;
        match out.len() {
            0 => {}
            1 => out[0] = -7, // out of range for any row
            _ => out[0] = out[1],
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_cover_the_brief() {
        let arms = known_arms();
        for want in [
            "cpu-ref",
            "cpu-ss",
            "radix",
            "radix-mcta",
            "filtered",
            "gvr1",
            "ss",
            "ss-main",
            "ss-reg",
            "ss-clus",
            "ss-regclus",
        ] {
            assert!(arms.iter().any(|a| a.name == want), "{want} missing");
        }
        let mut names: Vec<_> = arms.iter().map(|a| a.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), arms.len());
    }

    #[test]
    fn unknown_arm_lists_known_ones() {
        let err = create("radx", None).err().unwrap();
        let msg = err.to_string();
        assert!(
            msg.contains("unknown arm `radx`") && msg.contains("cpu-ref"),
            "{msg}"
        );
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn twin_gets_suffixed_name_and_bad_suffix_is_rejected() {
        let twin = create("cpu-ref#2", None).unwrap();
        assert_eq!(twin.name(), "cpu-ref#2");
        assert_eq!(twin.backend(), Backend::Cpu);
        assert!(create("cpu-ref#", None).is_err());
        assert!(create("cpu-ref#b", None).is_err());
    }

    #[test]
    fn gpu_arm_without_gpu_is_a_usage_error() {
        let err = create("radix", None).err().unwrap();
        assert!(err.to_string().contains("GPU"), "{err}");
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn arm_list_parsing() {
        assert_eq!(
            parse_arm_list(" cpu-ref, cpu-ss ,").unwrap(),
            vec!["cpu-ref", "cpu-ss"]
        );
        assert!(parse_arm_list("cpu-ref,cpu-ref").is_err());
        assert!(parse_arm_list(",").is_err());
        assert!(parse_arm_list("cpu-ref,nope").is_err());
    }
}
