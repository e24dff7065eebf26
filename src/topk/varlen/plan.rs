//! The launch of one varlen call: which family serves the envelope, and the
//! kernel scalars that make it read `kv_lens` per request. Pure.
//!
//! The family is the one `ss` would run for a batch of `rows` rows of the
//! envelope length: each family's capacity is an upper bound for every row
//! of length ≤ the envelope, and each kernel recomputes the per-row parts
//! (sample schedule, short/zero-window path, register bracket) from the row's
//! own length. Rows longer than a family's capacity (a kv_lens entry above
//! the promised `max_seq_len`) still come out exact: every family takes an
//! exact whole-row path for them, and no row is ever read past the stride.

use cudarc::driver::LaunchConfig;

use super::contract::{route_len, ContractError, VarlenShape};
use crate::topk::route::DeviceProfile;
use crate::topk::{Plan, Shape, Tuning};

/// Everything a varlen call launches, fixed at plan time.
#[derive(Debug, Clone, PartialEq)]
pub struct VarlenPlan {
    pub shape: VarlenShape,
    /// Longest row the plan was made for.
    pub n_env: usize,
    /// Request-level hints are read (HOST-B); `false`: hint-free (HOST-C).
    pub hints: bool,
    /// The family launch (one kernel per call), with the varlen scalars set.
    pub launch: Plan,
}

impl VarlenPlan {
    /// Recorded variant, e.g. `varlen/reg/blk1024/v4`.
    pub fn variant(&self) -> String {
        let family = self.launch.family_variant();
        format!(
            "varlen{}/{family}",
            if self.hints { "" } else { "(hint-free)" }
        )
    }

    pub fn config(&self) -> LaunchConfig {
        self.launch.config()
    }

    /// Bytes of the SPLIT workspace the launch needs (0 for other plans).
    pub fn workspace_bytes(&self) -> usize {
        self.launch.workspace_bytes()
    }
}

/// Plan a varlen launch for `shape` with length envelope `n_env`.
pub fn plan(
    shape: &VarlenShape,
    n_env: usize,
    hints: bool,
    dev: &DeviceProfile,
) -> Result<VarlenPlan, ContractError> {
    shape.validate()?;
    let n = route_len(shape, n_env);
    // The family plans see a 64-multiple stride that holds the planned row
    // (their admission rule; a stride of at most k plans a k + 1 row whose
    // rows all take the short path); the kernels read the real stride from
    // the scalars set below and clamp every row to it.
    let family_shape = Shape {
        rows: shape.rows,
        n,
        npad: shape.npad.max(n).div_ceil(64) * 64,
        k: shape.k,
    };
    let refused =
        |reason: &str| ContractError(format!("no family can serve this varlen launch: {reason}"));
    let next_n = shape.next_n;
    let cr_shift = shape.cr_shift();
    let npad = shape.npad as u32; // validate() checked it fits
    let mut launch = Plan::routed(&family_shape, dev, &Tuning::production())
        .map_err(|reason| refused(&reason))?;
    match &mut launch {
        Plan::Main(p) => {
            p.args.npad = npad;
            p.args.next_n = next_n;
            p.args.cr_shift = cr_shift;
        }
        Plan::Reg(p) => {
            p.args.npad = npad;
            p.args.use_hints = u32::from(hints);
            p.args.next_n = next_n;
            p.args.cr_shift = cr_shift;
            // Row lengths come from kv_lens on the device: no row is loaded
            // for a guessed length, and no next wave is prefetched.
            p.args.row_guess = 0;
            p.args.ahead = 0;
        }
        Plan::Clus(p) => {
            p.args.npad = npad;
            p.args.next_n = next_n;
            p.args.cr_shift = cr_shift;
        }
        Plan::RegClus(p) => {
            p.args.npad = npad;
            p.args.hint_free = u32::from(!hints);
            p.args.next_n = next_n;
            p.args.cr_shift = cr_shift;
        }
    }
    Ok(VarlenPlan {
        shape: *shape,
        n_env,
        hints,
        launch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topk::varlen::contract::{envelope, EnvelopeSource};

    fn shape(rows: usize, npad: usize, k: usize, next_n: u32, cr: u32) -> VarlenShape {
        VarlenShape {
            rows,
            npad,
            k,
            next_n,
            compress_ratio: cr,
        }
    }

    #[test]
    fn every_family_gets_the_varlen_scalars() {
        let dev = DeviceProfile::h200();
        let mut seen = [false; 4];
        for (rows, n, k) in [
            (64, 4096, 512),
            (1, 65536, 512),
            (512, 131072, 2048),
            (4, 262144, 2048),
            (30, 65536, 512),
        ] {
            let s = shape(rows * 2, n, k, 2, 4);
            let p = plan(&s, n, false, &dev).unwrap();
            match &p.launch {
                Plan::Main(m) => {
                    seen[0] = true;
                    assert_eq!((m.args.next_n, m.args.cr_shift), (2, 2));
                }
                Plan::Reg(r) => {
                    seen[1] = true;
                    assert_eq!(
                        (r.args.next_n, r.args.cr_shift, r.args.use_hints),
                        (2, 2, 0)
                    );
                    // Never a next-wave prefetch: the launcher loads the build without it.
                    assert_eq!(r.args.ahead, 0);
                }
                Plan::Clus(c) => {
                    seen[3] = true;
                    assert_eq!((c.args.next_n, c.args.cr_shift), (2, 2));
                }
                Plan::RegClus(c) => {
                    seen[2] = true;
                    assert_eq!(
                        (c.args.next_n, c.args.cr_shift, c.args.hint_free),
                        (2, 2, 1)
                    );
                }
            }
            assert!(
                p.variant().starts_with("varlen(hint-free)/"),
                "{}",
                p.variant()
            );
        }
        assert_eq!(
            seen, [true; 4],
            "the shapes above cover main, reg, reg_clus and clus"
        );
    }

    #[test]
    fn the_family_follows_the_envelope_not_the_current_lengths() {
        // 4 rows, k = 512, max_seq_len 262,144 plans for the
        // whole envelope, so a replayed graph never needs a re-plan.
        let dev = DeviceProfile::h200();
        let s = shape(4, 262_144, 512, 1, 1);
        let n_env = envelope(&s, EnvelopeSource::MaxSeqLen(262_144));
        let a = plan(&s, n_env, true, &dev).unwrap();
        assert_eq!(a.n_env, 262_144);
        let b = plan(&s, n_env, true, &dev).unwrap();
        assert_eq!(a, b, "pure");
    }

    #[test]
    fn plans_are_total_over_the_contract() {
        let dev = DeviceProfile::h200();
        for k in [512usize, 1024, 2048] {
            for next_n in 1..=4u32 {
                for cr in [1u32, 4] {
                    for requests in [1usize, 3, 16, 64, 300, 1024] {
                        for npad in [4100usize, 9024, 65_536, 262_144] {
                            let s = shape(requests * next_n as usize, npad, k, next_n, cr);
                            for n_env in [1usize, k, k + 1, npad / 3, npad] {
                                let p = plan(&s, n_env, true, &dev);
                                assert!(p.is_ok(), "{s:?} n_env {n_env}: {:?}", p.err());
                            }
                        }
                    }
                }
            }
        }
    }
}
