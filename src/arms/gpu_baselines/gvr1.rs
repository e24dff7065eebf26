//! `gvr1`: GVR V1 Guess-Verify-Refine with previous-step hints
//! (`kernels/gvr1.cu`).
//!
//! One 512-thread CTA per row; 48 KiB of dynamic shared memory hold the
//! candidate buffer (keys + indices), so the kernel needs the opt-in path
//! (static smem adds ≈ 8.6 KB).

use super::{arg_u32, launch_err, BaselineKernel, LaunchCtx, LaunchPlan, MAX_ROW_LEN};
use crate::arms::Shape;
use crate::error::Result;
use crate::gpu::sources::{KernelSource, GVR1};
use crate::gpu::PushKernelArg;

/// Threads per CTA; must match `G1_BLK` in `kernels/gvr1.cu`.
pub const BLOCK: u32 = 512;
pub const ENTRY: &str = "gvr1_topk";
/// Candidate capacity; must match `G1_CAP`.
pub const CANDIDATE_CAP: usize = 6144;
/// Dynamic shared memory: `CANDIDATE_CAP` u32 keys + as many i32 indices.
pub const DYN_SMEM_BYTES: usize = 2 * CANDIDATE_CAP * 4;
/// Static shared memory of the kernel (8608 B per ptxas) plus headroom.
pub const STATIC_SMEM_RESERVE: usize = 12 * 1024;
/// Opt-in shared memory per block on sm_90 (H100/H200: 227 KiB).
pub const SMEM_OPTIN_BYTES: usize = 232_448;

/// One CTA per row. The kernel's candidate cap must leave room above k for
/// the verify search (k ≤ cap / 2 keeps the aim strictly inside [k, cap]).
pub fn plan(rows: usize, n_max: usize, k: usize) -> Result<LaunchPlan, String> {
    if n_max > MAX_ROW_LEN {
        return Err(format!("row length {n_max} exceeds {MAX_ROW_LEN}"));
    }
    if k == 0 || 2 * k > CANDIDATE_CAP {
        return Err(format!(
            "k = {k} leaves no search room under the candidate cap {CANDIDATE_CAP}"
        ));
    }
    let grid =
        u32::try_from(rows).map_err(|_| format!("rows = {rows} does not fit a 32-bit grid"))?;
    Ok(LaunchPlan {
        entry: ENTRY,
        tier: "per-row",
        grid,
        block: BLOCK,
        dyn_smem_bytes: DYN_SMEM_BYTES as u32,
        ctas_per_row: 1,
        chunk: 0,
        grid_barrier: false,
    })
}

/// The `gvr1` arm's kernel. `hint_offset` is added to every hint before the
/// gather (upstream shifts by `row % next_n + 1`; our harness passes raw
/// previous-step indices, so the registered arm uses 0).
pub struct Gvr1 {
    pub hint_offset: i32,
}

impl BaselineKernel for Gvr1 {
    fn arm_name(&self) -> &'static str {
        "gvr1"
    }

    fn source(&self) -> KernelSource {
        GVR1
    }

    fn plan(&self, shape: &Shape, _sms: usize) -> std::result::Result<LaunchPlan, String> {
        plan(shape.rows, shape.n, shape.k)
    }

    fn launch(&self, ctx: LaunchCtx<'_>) -> Result<()> {
        let batch = ctx.batch;
        let rows = arg_u32(batch.rows, "rows")?;
        let npad = arg_u32(batch.npad, "npad")?;
        let k = arg_u32(batch.k, "k")?;
        let hint_offset = self.hint_offset;
        let mut args = ctx.gpu.stream.launch_builder(ctx.function);
        args.arg(&batch.logits)
            .arg(&batch.n)
            .arg(&batch.hints)
            .arg(&mut batch.output)
            .arg(&rows)
            .arg(&npad)
            .arg(&k)
            .arg(&hint_offset);
        // SAFETY: the argument list matches `gvr1_topk` in kernels/gvr1.cu
        // (pointers to [rows*npad] f32, [rows] i32, [rows*k] i32 hints,
        // [rows*k] i32 output, then rows, npad, k as u32 and hint_offset as
        // i32). Hints are only dereferenced through an unsigned range check
        // against the row length. One CTA per staged row; the dynamic smem
        // size was opted in by the arm before staging.
        unsafe { args.launch(ctx.plan.config()) }.map_err(launch_err(ctx.plan.entry))?;
        Ok(())
    }
}

#[cfg(test)]
pub(super) mod model;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_cta_per_row_with_opt_in_smem() {
        for rows in [0usize, 1, 7, 1024, 70_000] {
            for k in [512usize, 1024, 2048] {
                let p = plan(rows, 131_072, k).unwrap();
                assert_eq!(p.grid as usize, rows);
                assert_eq!((p.block, p.ctas_per_row), (BLOCK, 1));
                assert_eq!(p.entry, ENTRY);
                assert!(!p.grid_barrier);
                assert!(p.dyn_smem_bytes as usize + STATIC_SMEM_RESERVE <= SMEM_OPTIN_BYTES);
            }
        }
        assert_eq!(plan(2, 5000, 2048).unwrap().describe(), "per-row (grid 2)");
    }

    #[test]
    fn refuses_what_the_kernel_cannot_do() {
        assert!(plan(1, MAX_ROW_LEN + 1, 512).is_err());
        assert!(plan(1, 1000, 4096).is_err());
        assert!(plan(1, 1000, 0).is_err());
        plan(1, MAX_ROW_LEN, 2048).unwrap();
    }

    /// The host constants must match the kernel's `#define`s.
    #[test]
    fn constants_match_the_kernel_source() {
        let define = |name: &str| -> u64 {
            let line = GVR1
                .code
                .lines()
                .find(|l| l.starts_with(&format!("#define {name} ")))
                .unwrap_or_else(|| panic!("#define {name} missing"));
            let value = line.split_whitespace().nth(2).unwrap();
            value.trim_end_matches('u').parse().unwrap()
        };
        assert_eq!(define("G1_BLK"), BLOCK as u64, "G1_BLK");
        assert_eq!(define("G1_CAP"), CANDIDATE_CAP as u64, "G1_CAP");
        assert!(crate::gpu::sources::declared_entries(GVR1.code).contains(&ENTRY.to_string()));
    }

    #[test]
    fn registered_under_its_arm_name() {
        assert!(super::super::arm_names().contains(&"gvr1"));
    }
}
