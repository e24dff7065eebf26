//! `cpu-ss`: the CPU model of the self-sampling main and register families
//! (crate::topk::cpu) as an arm, over every row of a batch.

use rayon::prelude::*;

use crate::arms::{Arm, Backend, Shape};
use crate::error::{GvrError, Result};
use crate::exact::UNWRITTEN;
use crate::grid::Batch;
use crate::topk::cpu::{select_row, select_row_reg, CpuModel, PathCounts, RegCounts};
use crate::topk::SUPPORTED_K;

/// The `cpu-ss` arm.
pub struct CpuSs {
    model: CpuModel,
    batch: Option<Batch>,
    output: Vec<i32>,
    counts: PathCounts,
    /// Path counts of the rows the register family served (route → reg/regimg).
    reg_counts: RegCounts,
}

impl Default for CpuSs {
    fn default() -> Self {
        CpuSs::new()
    }
}

impl CpuSs {
    /// Plans launches for our H200 (132 SMs), like the `ss` arm does.
    pub fn new() -> CpuSs {
        CpuSs::with_model(CpuModel::new())
    }

    pub fn with_model(model: CpuModel) -> CpuSs {
        CpuSs {
            model,
            batch: None,
            output: Vec::new(),
            counts: PathCounts::default(),
            reg_counts: RegCounts::default(),
        }
    }

    /// Model every row with `parts` CTAs per row instead of the route's R.
    pub fn with_parts(self, parts: u32) -> CpuSs {
        CpuSs::with_model(self.model.with_parts(parts))
    }

    /// Path counts of the last launch (summed over its rows).
    pub fn path_counts(&self) -> PathCounts {
        self.counts
    }

    /// Register-family path counts of the last launch (zero when the route
    /// sent the batch to a streaming family).
    pub fn reg_counts(&self) -> RegCounts {
        self.reg_counts
    }

    /// The model's streaming launch parameters for `shape`.
    pub fn launch_params(&self, shape: &Shape) -> crate::topk::route::MainParams {
        self.model.launch_params(shape)
    }
}

/// Reject a batch whose buffers do not match its declared shape, so that
/// row slicing can never go out of bounds.
fn validate(batch: &Batch) -> Result<()> {
    let bad = |field: &str, message: String| GvrError::input("<staged batch>", field, message);
    if batch.logits.len() < batch.rows * batch.npad {
        return Err(bad(
            "logits",
            format!(
                "{} values for {} rows of stride {}",
                batch.logits.len(),
                batch.rows,
                batch.npad
            ),
        ));
    }
    if batch.n.len() != batch.rows {
        return Err(bad(
            "n",
            format!("{} lengths for {} rows", batch.n.len(), batch.rows),
        ));
    }
    if let Some(row) = batch.n.iter().position(|&n| n as usize > batch.npad) {
        return Err(bad(
            "n",
            format!(
                "row {row}: n = {} exceeds npad {}",
                batch.n[row], batch.npad
            ),
        ));
    }
    if !batch.hints.is_empty() && batch.hints.len() != batch.rows * batch.k {
        return Err(bad(
            "hints",
            format!(
                "{} hints for {} rows of k = {} (expected 0 or rows·k)",
                batch.hints.len(),
                batch.rows,
                batch.k
            ),
        ));
    }
    Ok(())
}

impl Arm for CpuSs {
    fn name(&self) -> &str {
        "cpu-ss"
    }

    fn backend(&self) -> Backend {
        Backend::Cpu
    }

    fn admits(&self, shape: &Shape) -> std::result::Result<(), String> {
        if SUPPORTED_K.contains(&shape.k) {
            Ok(())
        } else {
            Err(format!(
                "cpu-ss models K in {SUPPORTED_K:?}, not {}",
                shape.k
            ))
        }
    }

    fn variant(&self, shape: &Shape) -> Option<String> {
        self.model.variant(shape)
    }

    fn stage(&mut self, batch: &Batch) -> Result<()> {
        validate(batch)?;
        self.output = vec![UNWRITTEN; batch.rows * batch.k];
        self.batch = Some(batch.clone());
        Ok(())
    }

    fn poison_output(&mut self) -> Result<()> {
        self.output.fill(UNWRITTEN);
        Ok(())
    }

    fn launch(&mut self) -> Result<()> {
        let Some(batch) = self.batch.as_ref() else {
            return Err(GvrError::Usage("cpu-ss: launch before stage".into()));
        };
        let k = batch.k;
        if k == 0 || batch.rows == 0 {
            self.counts = PathCounts::default();
            self.reg_counts = RegCounts::default();
            return Ok(());
        }
        let hint_free = batch.hints.is_empty();
        if let Some((mut model, _)) = self.model.reg_launch(&Shape::of(batch)) {
            model.use_hints = !hint_free;
            self.counts = PathCounts::default();
            self.reg_counts = self
                .output
                .par_chunks_mut(k)
                .enumerate()
                .map(|(r, out)| {
                    let mut counts = RegCounts::default();
                    let hints = if hint_free { &[][..] } else { batch.hints(r) };
                    out.copy_from_slice(&select_row_reg(
                        batch.row(r),
                        hints,
                        k,
                        &model,
                        &mut counts,
                    ));
                    counts
                })
                .reduce(RegCounts::default, RegCounts::merged);
            return Ok(());
        }
        self.reg_counts = RegCounts::default();
        let launch = self.model.launch_params(&Shape::of(batch));
        self.counts = self
            .output
            .par_chunks_mut(k)
            .enumerate()
            .map(|(r, out)| {
                let mut counts = PathCounts::default();
                let hints = if hint_free { &[][..] } else { batch.hints(r) };
                let selected = select_row(batch.row(r), hints, k, &launch, &mut counts);
                out.copy_from_slice(&selected);
                counts
            })
            .reduce(PathCounts::default, PathCounts::merged);
        Ok(())
    }

    fn read_output(&mut self) -> Result<Vec<i32>> {
        Ok(self.output.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(rows: Vec<Vec<f32>>, npad: usize, k: usize) -> Batch {
        Batch::from_rows(&rows, npad, k, 3.0e38)
    }

    #[test]
    fn clus_picks_are_modelled_with_the_clus_sample_and_stay_exact() {
        // 16 rows of 100,000: the H200 route picks clus with 4-CTA clusters.
        let k = 512;
        let rows: Vec<Vec<f32>> = (0..16)
            .map(|r| {
                (0..100_000)
                    .map(|i| (((i * 7919 + r * 104_729) % 100_003) as f32).sin())
                    .collect()
            })
            .collect();
        let b = batch(rows, 100_032, k);
        let mut arm = CpuSs::new();
        assert_eq!(arm.variant(&Shape::of(&b)).as_deref(), Some("clus/cl4"));
        let params = arm.launch_params(&Shape::of(&b));
        assert_eq!((params.unit_values, params.r, params.split), (16, 4, false));
        arm.stage(&b).unwrap();
        arm.launch().unwrap();
        let out = arm.read_output().unwrap();
        assert!(crate::exact::check_batch(&b, &out).is_exact());
    }

    #[test]
    fn arm_runs_rows_and_ignores_poisoned_padding() {
        let k = 512;
        let long: Vec<f32> = (0..20_000).map(|i| ((i * 7919) % 20_000) as f32).collect();
        let short: Vec<f32> = (0..300).map(|i| i as f32).collect();
        let b = batch(vec![long.clone(), short, Vec::new()], 20_032, k);
        let mut arm = CpuSs::new();
        assert!(arm.admits(&Shape::of(&b)).is_ok());
        assert!(arm
            .admits(&Shape {
                k: 100,
                ..Shape::of(&b)
            })
            .is_err());
        assert_eq!(
            arm.variant(&Shape::of(&b)).as_deref(),
            Some("main/blk1024/r1")
        );
        arm.stage(&b).unwrap();
        arm.poison_output().unwrap();
        arm.launch().unwrap();
        let out = arm.read_output().unwrap();
        assert_eq!(out.len(), 3 * k);
        let mut first: Vec<f32> = out[..k].iter().map(|&i| long[i as usize]).collect();
        first.sort_by(|a, b| b.total_cmp(a));
        assert_eq!(first[0], 19_999.0);
        assert_eq!(first[k - 1], (20_000 - k) as f32);
        assert!(out[k..k + 300].iter().copied().eq(0..300));
        assert!(out[k + 300..].iter().all(|&i| i == -1));
        assert_eq!(arm.path_counts().rows, 3);
        assert_eq!(arm.path_counts().short_row, 2);
        assert_eq!(arm.path_counts().split_rows, 0);
    }

    #[test]
    fn one_long_row_follows_the_route_into_split() {
        let k = 1024;
        let n = 262_144;
        let row: Vec<f32> = (0..n).map(|i| ((i * 48_271) % n) as f32).collect();
        let b = batch(vec![row], n, k);
        let mut arm = CpuSs::new();
        assert_eq!(
            arm.variant(&Shape::of(&b)).as_deref(),
            Some("main/blk1024/r64")
        );
        arm.stage(&b).unwrap();
        arm.launch().unwrap();
        let out = arm.read_output().unwrap();
        // Values are a permutation of 0..n, so the top-k are n-k..n.
        let mut values: Vec<usize> = out.iter().map(|&i| (i as usize * 48_271) % n).collect();
        values.sort_unstable();
        assert!(values.iter().copied().eq(n - k..n));
        assert_eq!(arm.path_counts().split_rows, 1);
        let forced = CpuSs::new().with_parts(1);
        assert_eq!(
            forced.variant(&Shape::of(&b)).as_deref(),
            Some("main/blk1024/r1")
        );
    }

    #[test]
    fn register_routed_shapes_run_the_reg_model() {
        let k = 512;
        let row: Vec<f32> = (0..2048).map(|i| ((i * 7919) % 2048) as f32).collect();
        let b = batch(
            vec![row.clone(), vec![2.0; 2000], row[..100].to_vec()],
            2048,
            k,
        );
        let mut arm = CpuSs::new();
        assert_eq!(
            arm.variant(&Shape::of(&b)).as_deref(),
            Some("reg/blk512/v1")
        );
        arm.stage(&b).unwrap();
        arm.launch().unwrap();
        let out = arm.read_output().unwrap();
        assert!(crate::exact::check_batch(&b, &out).is_exact());
        let c = arm.reg_counts();
        assert_eq!(
            (c.rows, c.short_row, c.deg, c.escape_guard),
            (3, 1, 2, 1),
            "{c:?}"
        );
        assert_eq!(arm.path_counts().rows, 0, "main was not modelled");
        // A forced split factor keeps the main model.
        let forced = CpuSs::new().with_parts(1);
        assert_eq!(
            forced.variant(&Shape::of(&b)).as_deref(),
            Some("main/blk1024/r1")
        );
    }

    #[test]
    fn stage_rejects_inconsistent_batches() {
        let mut b = batch(vec![vec![1.0; 700]], 704, 512);
        b.hints.pop();
        let err = CpuSs::new().stage(&b).unwrap_err();
        assert!(err.to_string().contains("hints"), "{err}");
        let mut b = batch(vec![vec![1.0; 700]], 704, 512);
        b.n[0] = 800;
        assert!(CpuSs::new().stage(&b).is_err());
        assert!(CpuSs::new().launch().is_err(), "launch before stage");
    }
}
