//! The self-sampling arms: one adapter that runs `topk` plans in the
//! harness. `ss` is the product as a user calls it (one routed plan per batch
//! shape); `ss-main`, `ss-reg`, `ss-clus` and `ss-regclus` force one family
//! where it admits the shape (certification and tuning). Every one stages
//! the batch, prepares the plan outside any timed window and launches it.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

use crate::arms::{Arm, Backend, Shape};
use crate::error::{GvrError, Result};
use crate::gpu::sources::FLUSH;
use crate::gpu::{DeviceBatch, Gpu, KernelBuild};
use crate::grid::Batch;
use crate::topk::plan::{Family, Plan, Runner};
use crate::topk::{profile_for, DeviceProfile, Tuning};

/// Which plan an arm makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selector {
    /// `route()` picks the family (`ss`).
    Routed,
    /// One family wherever it admits the shape.
    Forced(Family),
}

impl Selector {
    /// The selector of a registered arm name.
    pub fn of(name: &str) -> Option<Selector> {
        Some(match name {
            "ss" => Selector::Routed,
            "ss-main" => Selector::Forced(Family::Main),
            "ss-reg" => Selector::Forced(Family::Reg),
            "ss-clus" => Selector::Forced(Family::Clus),
            "ss-regclus" => Selector::Forced(Family::RegClus),
            _ => return None,
        })
    }

    /// The plan this selector makes for `shape`.
    pub fn plan(
        self,
        shape: &Shape,
        dev: &DeviceProfile,
        tuning: &Tuning,
    ) -> std::result::Result<Plan, String> {
        match self {
            Selector::Routed => Plan::routed(shape, dev, tuning),
            Selector::Forced(family) => Plan::forced(family, shape, dev, tuning),
        }
    }
}

/// Build a self-sampling arm (registry entry point).
pub fn create(name: &str, gpu: Option<Arc<Gpu>>, tuning: &Tuning) -> Result<Box<dyn Arm>> {
    let selector = Selector::of(name)
        .ok_or_else(|| GvrError::Usage(format!("arm `{name}` is not a self-sampling arm")))?;
    let gpu = gpu.ok_or_else(|| {
        GvrError::Usage(format!(
            "arm `{name}` runs on the GPU, and this run has none (CPU arms: cpu-ref, cpu-ss)"
        ))
    })?;
    if !tuning.is_empty() {
        tracing::warn!(
            "arm {name} runs with knobs {}",
            tuning.assignments().join(" ")
        );
    }
    Ok(Box::new(SsArm::new(name, selector, gpu, tuning.clone())))
}

/// A self-sampling arm: a selector, a tuning, and the staged batch and plan.
pub struct SsArm {
    name: String,
    selector: Selector,
    device: DeviceProfile,
    tuning: Tuning,
    runner: Runner,
    batch: Option<DeviceBatch>,
    plan: Option<Plan>,
    /// `ss.slowdown`: a wasted read pass before every launch.
    slowdown: Option<Slowdown>,
}

/// The wasted pass of `ss.slowdown=1`: `flush_slowdown_read` over the staged
/// logits (the nightly gate's proof that it catches a regression).
struct Slowdown {
    function: CudaFunction,
    sink: CudaSlice<u8>,
}

impl SsArm {
    pub fn new(name: &str, selector: Selector, gpu: Arc<Gpu>, tuning: Tuning) -> SsArm {
        SsArm {
            name: name.to_string(),
            selector,
            device: profile_for(&gpu),
            runner: Runner::new(gpu, name),
            tuning,
            batch: None,
            plan: None,
            slowdown: None,
        }
    }

    /// The plan of the staged batch, as prepared (e.g. the register
    /// family's next-wave distance, decided from the loaded entry).
    pub fn staged_plan(&self) -> Option<&Plan> {
        self.plan.as_ref()
    }

    fn slowed(&self) -> bool {
        self.tuning.get("ss.slowdown") == Some("1")
    }

    fn plan(&self, shape: &Shape) -> std::result::Result<Plan, String> {
        self.selector.plan(shape, &self.device, &self.tuning)
    }

    fn not_staged(&self) -> GvrError {
        GvrError::Other(anyhow::anyhow!("arm {}: launch before stage", self.name))
    }

    fn launch_slowdown(&mut self) -> Result<()> {
        let (Some(slow), Some(batch)) = (self.slowdown.as_mut(), self.batch.as_ref()) else {
            return Ok(());
        };
        let gpu = self.runner.gpu().clone();
        let words16 = (batch.logits.len() / 4) as u64;
        let mut waste = gpu.stream.launch_builder(&slow.function);
        waste.arg(&batch.logits).arg(&words16).arg(&mut slow.sink);
        let cfg = LaunchConfig {
            grid_dim: (self.device.sms * 4, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: flush_slowdown_read(const uint4*, u64 words16, uint4*): the
        // logits buffer holds rows*npad f32 (npad a multiple of 64, so a whole
        // number of 16-byte words) and the sink holds 16 bytes.
        unsafe { waste.launch(cfg) }.map_err(|e| GvrError::Kernel {
            name: "flush_slowdown_read".into(),
            message: format!("launch failed: {e:?}"),
        })?;
        Ok(())
    }
}

impl Arm for SsArm {
    fn name(&self) -> &str {
        &self.name
    }

    fn backend(&self) -> Backend {
        Backend::Gpu
    }

    fn admits(&self, shape: &Shape) -> std::result::Result<(), String> {
        self.plan(shape).map(|_| ())
    }

    fn variant(&self, shape: &Shape) -> Option<String> {
        self.plan(shape).ok().map(|p| {
            let mut v = p.variant(&self.tuning);
            if self.slowed() {
                v.push_str(" +ss.slowdown=1");
            }
            v
        })
    }

    fn builds(&self, shape: &Shape) -> Vec<KernelBuild> {
        self.plan(shape)
            .map(|p| p.builds(&self.tuning))
            .unwrap_or_default()
    }

    fn stage(&mut self, batch: &Batch) -> Result<()> {
        let mut plan = self.plan(&Shape::of(batch)).map_err(|reason| {
            GvrError::Usage(format!(
                "arm {} does not admit this batch: {reason}",
                self.name
            ))
        })?;
        self.plan = None;
        self.runner.prepare(&mut plan, &self.tuning)?;
        if self.slowed() && self.slowdown.is_none() {
            let gpu = self.runner.gpu().clone();
            let module = gpu.module(&FLUSH, &[])?;
            self.slowdown = Some(Slowdown {
                function: gpu.function(&module, "flush_slowdown_read")?,
                sink: gpu.zeroed::<u8>(16)?,
            });
        }
        self.batch = None;
        self.batch = Some(DeviceBatch::upload(self.runner.gpu(), batch)?);
        self.plan = Some(plan);
        Ok(())
    }

    fn poison_output(&mut self) -> Result<()> {
        self.runner.reset_workspace()?;
        match self.batch.as_mut() {
            Some(batch) => batch.poison_output(),
            None => Err(self.not_staged()),
        }
    }

    fn launch(&mut self) -> Result<()> {
        if self.plan.is_none() || self.batch.is_none() {
            return Err(self.not_staged());
        }
        self.launch_slowdown()?;
        let (Some(plan), Some(batch)) = (self.plan.as_ref(), self.batch.as_mut()) else {
            return Err(self.not_staged());
        };
        self.runner.launch(plan, batch)
    }

    fn read_output(&mut self) -> Result<Vec<i32>> {
        let batch = self.batch.as_ref().ok_or_else(|| self.not_staged())?;
        self.runner.gpu().synchronize()?;
        batch.download_output()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ss_arm_name_has_a_selector() {
        for name in ["ss", "ss-main", "ss-reg", "ss-clus", "ss-regclus"] {
            assert!(Selector::of(name).is_some(), "{name}");
        }
        assert_eq!(Selector::of("radix"), None);
    }

    #[test]
    fn create_without_gpu_is_a_usage_error() {
        for name in ["ss", "ss-main", "ss-reg", "ss-clus", "ss-regclus"] {
            let err = create(name, None, &Tuning::default())
                .err()
                .expect("no GPU");
            assert_eq!(err.exit_code(), 2, "{err}");
            assert!(err.to_string().contains("GPU"), "{err}");
        }
        assert!(create("radix", None, &Tuning::default()).is_err());
    }
}
