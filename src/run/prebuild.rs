//! Compile a run's kernel builds in parallel before its first case.
//!
//! Without it, each build is compiled by NVRTC when the first case that
//! needs it is staged, one after another: ~100 s of a campaign shard's first
//! cases on the device host, and ~37 s more for `gpu info`. The arms say which builds their planned launches load
//! ([`crate::arms::Arm::builds`]); [`crate::gpu::Gpu::prebuild`] compiles the
//! missing ones on every core and loads them. Timing is untouched: the
//! modules are the same, only compiled earlier.

use std::time::Instant;

use crate::arms::{Arm, Shape};
use crate::capture::CaptureSet;
use crate::error::Result;
use crate::gpu::{Gpu, KernelBuild};
use crate::grid::Case;

/// The launch shape of a case as the arms plan it: the cell's nominal
/// length and its capture row stride.
pub fn case_shape(case: &Case, captures: &CaptureSet) -> Option<Shape> {
    let entry = captures.cell(&case.cell.id)?;
    Some(Shape {
        rows: case.b,
        n: case.cell.n as usize,
        npad: entry.npad as usize,
        k: case.cell.k as usize,
    })
}

/// Every distinct build the arms plan for the shapes, in first-seen order.
pub fn planned_builds(arms: &[Box<dyn Arm>], shapes: &[Shape]) -> Vec<KernelBuild> {
    let mut seen_shapes = std::collections::HashSet::new();
    let mut builds: Vec<KernelBuild> = Vec::new();
    for shape in shapes {
        if !seen_shapes.insert(*shape) {
            continue;
        }
        for arm in arms {
            for build in arm.builds(shape) {
                if !builds.contains(&build) {
                    builds.push(build);
                }
            }
        }
    }
    builds
}

/// Compile the arms' planned builds for `cases` in parallel, one thread per
/// core. Never an error: a prebuild that fails (a module that will not load)
/// is reported and left to the cases, which compile what they stage.
pub fn prebuild_for_cases(
    gpu: &Gpu,
    arms: &[Box<dyn Arm>],
    cases: &[Case],
    captures: &CaptureSet,
) -> Result<()> {
    let threads = crate::gpu::prebuild_threads();
    let shapes: Vec<Shape> = cases
        .iter()
        .filter_map(|case| case_shape(case, captures))
        .collect();
    let builds = planned_builds(arms, &shapes);
    let started = Instant::now();
    let compiled = match gpu.prebuild(&builds, threads) {
        Ok(compiled) => compiled,
        Err(e) => {
            eprintln!("kernels: prebuild stopped ({e}); the cases compile what they stage");
            return Ok(());
        }
    };
    if compiled > 0 {
        eprintln!(
            "kernels: {compiled} of {} planned builds compiled before the first case ({threads} threads, {:.1} s)",
            builds.len(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arms::Backend;
    use crate::gpu::sources::{RADIX, SS_MAIN};
    use crate::grid::Batch;

    /// An arm that plans one build per distinct k.
    struct ByK;

    impl Arm for ByK {
        fn name(&self) -> &str {
            "by-k"
        }
        fn backend(&self) -> Backend {
            Backend::Gpu
        }
        fn admits(&self, _shape: &Shape) -> std::result::Result<(), String> {
            Ok(())
        }
        fn builds(&self, shape: &Shape) -> Vec<KernelBuild> {
            let source = if shape.k == 2048 { SS_MAIN } else { RADIX };
            vec![KernelBuild {
                source,
                defines: vec![("K", shape.k.to_string())],
            }]
        }
        fn stage(&mut self, _batch: &Batch) -> Result<()> {
            Ok(())
        }
        fn poison_output(&mut self) -> Result<()> {
            Ok(())
        }
        fn launch(&mut self) -> Result<()> {
            Ok(())
        }
        fn read_output(&mut self) -> Result<Vec<i32>> {
            Ok(Vec::new())
        }
    }

    fn shape(rows: usize, k: usize) -> Shape {
        Shape {
            rows,
            n: 4 * k,
            npad: 4 * k,
            k,
        }
    }

    #[test]
    fn builds_are_distinct_and_in_first_seen_order() {
        let arms: Vec<Box<dyn Arm>> = vec![Box::new(ByK), Box::new(ByK)];
        let shapes = [
            shape(1, 2048),
            shape(8, 512),
            shape(1, 2048),
            shape(4, 2048),
        ];
        let builds = planned_builds(&arms, &shapes);
        let keys: Vec<_> = builds
            .iter()
            .map(|b| (b.source.name, b.defines[0].1.as_str()))
            .collect();
        assert_eq!(
            keys,
            [("ss/main.cu", "2048"), ("baselines/radix.cu", "512")]
        );
    }

    #[test]
    fn cpu_arms_plan_no_builds() {
        let arms: Vec<Box<dyn Arm>> = vec![Box::new(crate::arms::cpu_ref::CpuRef::new())];
        assert!(planned_builds(&arms, &[shape(1, 512)]).is_empty());
    }
}
