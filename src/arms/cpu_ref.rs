//! `cpu-ref`: the exact CPU reference (`exact::reference_topk`) run as an
//! arm, rows in parallel with rayon. It is the yardstick the checker itself
//! trusts, so a non-exact `cpu-ref` record means the harness is broken.

use rayon::prelude::*;

use super::{Arm, Backend, Shape};
use crate::error::{GvrError, Result};
use crate::exact::UNWRITTEN;
use crate::grid::Batch;

#[derive(Default)]
pub struct CpuRef {
    staged: Option<Batch>,
    output: Vec<i32>,
}

impl CpuRef {
    pub fn new() -> CpuRef {
        CpuRef::default()
    }
}

/// Top-K of one row into `out` (`k` slots): the reference indices, then -1
/// for slots a short row (n < k) cannot fill.
fn reference_row(row: &[f32], out: &mut [i32]) -> Result<()> {
    let k = out.len();
    let indices = crate::exact::reference_topk(row, k);
    for (slot, value) in out.iter_mut().enumerate() {
        *value = indices.get(slot).copied().unwrap_or(-1);
    }
    Ok(())
}

impl Arm for CpuRef {
    fn name(&self) -> &str {
        "cpu-ref"
    }

    fn backend(&self) -> Backend {
        Backend::Cpu
    }

    fn admits(&self, shape: &Shape) -> std::result::Result<(), String> {
        if shape.k == 0 {
            return Err("K = 0".into());
        }
        Ok(())
    }

    fn stage(&mut self, batch: &Batch) -> Result<()> {
        self.output = vec![UNWRITTEN; batch.rows * batch.k];
        self.staged = Some(batch.clone());
        Ok(())
    }

    fn poison_output(&mut self) -> Result<()> {
        self.output.fill(UNWRITTEN);
        Ok(())
    }

    fn launch(&mut self) -> Result<()> {
        let batch = self
            .staged
            .as_ref()
            .ok_or_else(|| GvrError::Other(anyhow::anyhow!("cpu-ref: launch before stage")))?;
        self.output
            .par_chunks_mut(batch.k)
            .enumerate()
            .try_for_each(|(r, out)| reference_row(batch.row(r), out))
    }

    fn read_output(&mut self) -> Result<Vec<i32>> {
        Ok(self.output.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(rows: &[&[f32]], k: usize) -> Batch {
        Batch::from_rows(rows, 64, k, -3e38)
    }

    #[test]
    fn reference_arm_is_exact_and_pads_short_rows() {
        let long: Vec<f32> = (0..40).map(|i| ((i * 37) % 41) as f32).collect();
        let short = [5.0, 1.0];
        let b = batch(&[&long, &short], 4);
        let mut arm = CpuRef::new();
        arm.stage(&b).unwrap();
        arm.poison_output().unwrap();
        assert!(arm.read_output().unwrap().iter().all(|&v| v == UNWRITTEN));
        arm.launch().unwrap();
        let out = arm.read_output().unwrap();
        assert_eq!(
            crate::exact::check_batch(&b, &out),
            crate::exact::ExactStatus::Exact
        );
        let mut short_out = out[4..].to_vec();
        short_out[..2].sort_unstable();
        assert_eq!(short_out, [0, 1, -1, -1]);
    }

    #[test]
    fn launch_before_stage_is_an_error() {
        assert!(CpuRef::new().launch().is_err());
    }
}
