//! `ss-varlen` and `ss-varlen-hints`: every harness batch through the
//! production varlen entry (crate::topk::varlen) — per-request `kv_lens` on the
//! device, `next_n` MTP rows per request, the compress ratio, one launch.
//!
//! - `ss-varlen` is the production (HOST-C) call: hint-free.
//! - `ss-varlen-hints` passes request-level hints (HOST-B): the hints of
//!   each request's first row.
//!
//! A varlen batch (`Batch::varlen`) keeps its `kv_lens`, `next_n` and ratio;
//! any other batch is the varlen call with `next_n = 1`, ratio 1 and
//! `kv_lens = n` (row r's cache length is its valid length). The launch is
//! planned for the envelope `max_seq_len = npad · ratio` — the longest row
//! the stride can hold — so the call never reads lengths back to the host,
//! exactly as a CUDA-graph-captured decode step would run.

use std::sync::Arc;

use cudarc::driver::CudaSlice;

use crate::arms::{Arm, Backend, Shape};
use crate::error::{GvrError, Result};
use crate::gpu::{DeviceBatch, Gpu};
use crate::grid::Batch;
use crate::topk::varlen::{self, EnvelopeSource, VarlenIo, VarlenPlan, VarlenShape, VarlenTopK};
use crate::topk::{profile_for, DeviceProfile};

/// The varlen call a harness batch stands for: (shape, kv_lens).
pub fn varlen_call(batch: &Batch) -> std::result::Result<(VarlenShape, Vec<i32>), String> {
    let (next_n, ratio, kv_lens): (u32, u32, Vec<i32>) = match &batch.varlen {
        Some(v) => (
            v.next_n,
            v.compress_ratio,
            v.kv_lens
                .iter()
                .map(|&kv| kv.min(i32::MAX as u32) as i32)
                .collect(),
        ),
        None => (1, 1, batch.n.iter().map(|&n| n as i32).collect()),
    };
    let shape = VarlenShape {
        rows: batch.rows,
        npad: batch.npad,
        k: batch.k,
        next_n,
        compress_ratio: ratio,
    };
    shape.validate().map_err(|e| e.to_string())?;
    // The batch's row lengths must be the contract's (a batch whose lengths
    // were cut by its builder is not a varlen call).
    let lens = shape.row_lengths(&kv_lens).map_err(|e| e.to_string())?;
    if let Some(r) = (0..batch.rows).find(|&r| lens[r] != batch.n[r] as usize) {
        return Err(format!(
            "row {r}: length {} is not the varlen length {} of its request",
            batch.n[r], lens[r]
        ));
    }
    Ok((shape, kv_lens))
}

fn plan_for(
    batch_shape: &VarlenShape,
    hints: bool,
    dev: &DeviceProfile,
) -> std::result::Result<VarlenPlan, String> {
    let msl = batch_shape.npad as u64 * batch_shape.compress_ratio as u64;
    let n_env = varlen::envelope(batch_shape, EnvelopeSource::MaxSeqLen(msl));
    varlen::plan(batch_shape, n_env, hints, dev).map_err(|e| e.to_string())
}

/// Build `ss-varlen` / `ss-varlen-hints` (registry entry point).
pub fn create(name: &str, gpu: Option<Arc<Gpu>>) -> Result<Box<dyn Arm>> {
    let hints = match name {
        "ss-varlen" => false,
        "ss-varlen-hints" => true,
        other => {
            return Err(GvrError::Usage(format!(
                "arm `{other}` is not built by arms::ss_varlen"
            )))
        }
    };
    let gpu = gpu.ok_or_else(|| {
        GvrError::Usage(format!(
            "arm `{name}` runs on the GPU, and this run has none (CPU arms: cpu-ref, cpu-ss)"
        ))
    })?;
    Ok(Box::new(SsVarlen {
        name: if hints {
            "ss-varlen-hints"
        } else {
            "ss-varlen"
        },
        hints,
        device: profile_for(&gpu),
        gpu,
        staged: None,
    }))
}

struct Staged {
    launcher: VarlenTopK,
    batch: DeviceBatch,
    kv_lens: CudaSlice<i32>,
    request_hints: Option<CudaSlice<i32>>,
}

/// The GPU arm.
pub struct SsVarlen {
    name: &'static str,
    hints: bool,
    gpu: Arc<Gpu>,
    device: DeviceProfile,
    staged: Option<Staged>,
}

impl SsVarlen {
    fn not_staged(&self) -> GvrError {
        GvrError::Other(anyhow::anyhow!("arm {}: launch before stage", self.name))
    }

    /// Plans depend on the whole batch (its kv_lens), not just the shape;
    /// the shape alone is planned as a batch-uniform call.
    fn shape_plan(&self, shape: &Shape) -> std::result::Result<VarlenPlan, String> {
        let s = VarlenShape {
            rows: shape.rows,
            npad: shape.npad,
            k: shape.k,
            next_n: 1,
            compress_ratio: 1,
        };
        s.validate().map_err(|e| e.to_string())?;
        plan_for(&s, self.hints, &self.device)
    }
}

impl Arm for SsVarlen {
    fn name(&self) -> &str {
        self.name
    }

    fn backend(&self) -> Backend {
        Backend::Gpu
    }

    fn admits(&self, shape: &Shape) -> std::result::Result<(), String> {
        if shape.n > shape.npad {
            return Err(format!(
                "row length {} exceeds npad {}",
                shape.n, shape.npad
            ));
        }
        self.shape_plan(shape).map(|_| ())
    }

    fn variant(&self, shape: &Shape) -> Option<String> {
        self.shape_plan(shape).ok().map(|p| p.variant())
    }

    fn stage(&mut self, batch: &Batch) -> Result<()> {
        let refuse = |reason: String| {
            GvrError::Usage(format!(
                "arm {} does not admit this batch: {reason}",
                self.name
            ))
        };
        let (shape, kv_lens) = varlen_call(batch).map_err(refuse)?;
        let plan = plan_for(&shape, self.hints, &self.device).map_err(refuse)?;
        // The launcher (compiled entry, SPLIT workspace) is kept while the
        // plan is unchanged; the previous batch is freed before the next upload.
        let launcher = match self.staged.take() {
            Some(previous) if *previous.launcher.plan() == plan => previous.launcher,
            _ => VarlenTopK::new(&self.gpu, plan)?,
        };
        let request_hints = if self.hints {
            let k = batch.k;
            let per_request: Vec<i32> = (0..shape.requests())
                .flat_map(|q| batch.hints(q * shape.next_n as usize).iter().copied())
                .collect::<Vec<i32>>();
            debug_assert_eq!(per_request.len(), shape.requests() * k);
            Some(self.gpu.upload(&per_request)?)
        } else {
            None
        };
        let staged = Staged {
            launcher,
            batch: DeviceBatch::upload(&self.gpu, batch)?,
            kv_lens: self.gpu.upload(&kv_lens)?,
            request_hints,
        };
        self.gpu.synchronize()?;
        self.staged = Some(staged);
        Ok(())
    }

    fn poison_output(&mut self) -> Result<()> {
        match self.staged.as_mut() {
            Some(s) => s.batch.poison_output(),
            None => Err(self.not_staged()),
        }
    }

    fn launch(&mut self) -> Result<()> {
        let Some(s) = self.staged.as_mut() else {
            return Err(self.not_staged());
        };
        let mut io = VarlenIo {
            logits: &s.batch.logits,
            kv_lens: &s.kv_lens,
            hints: s.request_hints.as_ref(),
            indices: &mut s.batch.output,
            values: None,
        };
        s.launcher.launch(&mut io)
    }

    fn read_output(&mut self) -> Result<Vec<i32>> {
        let s = self.staged.as_ref().ok_or_else(|| self.not_staged())?;
        self.gpu.synchronize()?;
        s.batch.download_output()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact::suite;

    #[test]
    fn every_adversarial_batch_is_a_varlen_call() {
        for k in [512usize, 1024, 2048] {
            for case in suite(k) {
                let call = varlen_call(&case.batch);
                assert!(call.is_ok(), "{}: {:?}", case.name, call.err());
                let (shape, _) = call.unwrap();
                assert!(
                    plan_for(&shape, false, &DeviceProfile::h200()).is_ok(),
                    "{}",
                    case.name
                );
            }
        }
    }

    #[test]
    fn a_uniform_batch_is_next_n_one_with_kv_equal_to_n() {
        let rows = vec![vec![1.0f32; 3000], vec![2.0f32; 3000]];
        let b = Batch::from_rows(&rows, 3008, 512, f32::MIN);
        let (shape, kv) = varlen_call(&b).unwrap();
        assert_eq!((shape.next_n, shape.compress_ratio, shape.rows), (1, 1, 2));
        assert_eq!(kv, [3000, 3000]);
    }
}
