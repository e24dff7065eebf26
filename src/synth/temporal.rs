//! Temporal model of the synthetic generator: how an element's latent score
//! moves from one decode step to the next, and its calibration against the
//! real hit-rate and retention-by-rank statistics.
//!
//! Every element carries a standard-normal latent `z`; the logit is
//! `Q(Φ(z))` with `Q` the layer's marginal quantile (see `marginal`). Because
//! that map is increasing, top-K membership depends on `z` alone, so the hit
//! rate and the retention curve are functions of the temporal model and of
//! q = K/N only — never of the marginal.
//!
//! A plain Gaussian AR(1) (`z_t = ρ z_{t−1} + √(1−ρ²) ε`) cannot reproduce
//! the real retention curve: with ρ tuned to the hit rate it keeps the best
//! ranks ~100 % of the time, while real top ranks are retained only 85–90 %.
//! Real layers show abrupt "collapses", so each element, at
//! each step, independently picks one of three AR(1) regimes: the main one
//! (ρ), a partial re-draw (ρ₂, probability w₂) and a fresh draw (ρ = 0,
//! probability w₀). Every regime keeps the N(0, 1) marginal exactly, so the
//! marginal calibration is untouched. The parameters are fitted at run time
//! by `fit_temporal` (deterministic; well under a second per (model, N) in
//! release builds, cached).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use statrs::distribution::{ContinuousCDF, Normal};

use crate::capture::format::Model;

/// Number of rank buckets of the retention curve (best → K-th).
pub const RETENTION_BUCKETS: usize = 20;

/// Real retention by rank bucket (unshifted indices, 64K ISL).
pub fn target_retention(model: Model) -> [f64; RETENTION_BUCKETS] {
    match model {
        Model::V32 => [
            0.849, 0.826, 0.807, 0.785, 0.764, 0.738, 0.717, 0.686, 0.659, 0.634, 0.613, 0.581,
            0.554, 0.534, 0.509, 0.482, 0.455, 0.421, 0.391, 0.356,
        ],
        Model::Flash => [
            0.901, 0.889, 0.868, 0.846, 0.822, 0.794, 0.762, 0.734, 0.701, 0.669, 0.637, 0.598,
            0.573, 0.527, 0.507, 0.469, 0.433, 0.403, 0.369, 0.347,
        ],
        Model::Pro => [
            0.906, 0.898, 0.885, 0.871, 0.855, 0.837, 0.813, 0.793, 0.765, 0.743, 0.711, 0.680,
            0.640, 0.605, 0.574, 0.533, 0.496, 0.453, 0.422, 0.385,
        ],
    }
}

/// Real mean hit rate |topK_t ∩ topK_{t−1}| / K.
pub fn target_hit_rate(model: Model) -> f64 {
    match model {
        Model::V32 => 0.654,
        Model::Flash => 0.651,
        Model::Pro => 0.729,
    }
}

/// Gate tolerances of the calibration gates, shared by the fit (which balances the
/// margins) and the validator.
pub const HIT_RATE_TOLERANCE: f64 = 0.03;
pub const RETENTION_TOLERANCE: f64 = 0.05;

/// Largest K/N at which the 64K-ISL temporal statistics are applied as gates.
/// Near K/N = 0.5 the chance overlap alone is 50 % and the real curve shape
/// (measured at small K/N) is not attainable by any stationary process.
pub const TEMPORAL_GATE_MAX_FRACTION: f64 = 0.125;

/// Parameters of the three-regime AR(1) latent process.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct TemporalModel {
    /// Lag-1 correlation of the main regime.
    pub rho: f64,
    /// Probability of the partial re-draw regime.
    pub partial_weight: f64,
    /// Lag-1 correlation of the partial re-draw regime.
    pub partial_rho: f64,
    /// Probability of a fresh, independent draw.
    pub fresh_weight: f64,
}

impl TemporalModel {
    /// Independent steps (no temporal structure at all).
    pub const INDEPENDENT: TemporalModel = TemporalModel {
        rho: 0.0,
        partial_weight: 0.0,
        partial_rho: 0.0,
        fresh_weight: 0.0,
    };

    /// Cumulative regime thresholds and (ρ, √(1−ρ²)) per regime, in f32 for
    /// the generator's inner loop. Regime picked by a uniform `u`: main if
    /// `u >= thresholds[1]`, partial if `u >= thresholds[0]`, else fresh.
    pub fn regimes_f32(&self) -> ([f32; 2], [(f32, f32); 3]) {
        let coef = |rho: f64| (rho as f32, (1.0 - rho * rho).max(0.0).sqrt() as f32);
        (
            [
                self.fresh_weight as f32,
                (self.fresh_weight + self.partial_weight) as f32,
            ],
            [coef(0.0), coef(self.partial_rho), coef(self.rho)],
        )
    }

    /// Expected retention curve for top-K fraction `q = K/N` in the large-N
    /// limit, by midpoint quadrature over each bucket's rank range.
    ///
    /// For a current element with latent z, the probability that it was in
    /// the previous top-K (threshold c = Φ̄⁻¹(q)) is, per regime with
    /// correlation r, Φ̄((c − r z)/√(1−r²)); the regimes mix linearly.
    pub fn retention_curve(&self, q: f64, nodes: usize) -> [f64; RETENTION_BUCKETS] {
        let grid = RetentionGrid::new(q, nodes);
        self.retention_on(&grid)
    }

    fn retention_on(&self, grid: &RetentionGrid) -> [f64; RETENTION_BUCKETS] {
        let main_weight = 1.0 - self.partial_weight - self.fresh_weight;
        let mut out = [0.0; RETENTION_BUCKETS];
        for (bucket, slot) in out.iter_mut().enumerate() {
            let zs = &grid.z[bucket * grid.nodes..(bucket + 1) * grid.nodes];
            let mut acc = 0.0;
            for &z in zs {
                acc += main_weight * stay_probability(grid.c, self.rho, z)
                    + self.partial_weight * stay_probability(grid.c, self.partial_rho, z)
                    + self.fresh_weight * grid.q;
            }
            *slot = acc / grid.nodes as f64;
        }
        out
    }

    /// Mean of the retention curve: the expected hit rate.
    pub fn hit_rate(&self, q: f64, nodes: usize) -> f64 {
        mean(&self.retention_curve(q, nodes))
    }
}

/// Latent quadrature nodes of every rank bucket for one q (they do not depend
/// on the temporal parameters, so a fit computes them once).
struct RetentionGrid {
    q: f64,
    c: f64,
    nodes: usize,
    z: Vec<f64>,
}

impl RetentionGrid {
    fn new(q: f64, nodes: usize) -> Self {
        let q = q.clamp(1e-9, 0.5);
        let mut z = Vec::with_capacity(RETENTION_BUCKETS * nodes);
        for bucket in 0..RETENTION_BUCKETS {
            for j in 0..nodes {
                let upper = q * (bucket as f64 + (j as f64 + 0.5) / nodes as f64)
                    / RETENTION_BUCKETS as f64;
                z.push(normal_upper_quantile(upper));
            }
        }
        RetentionGrid {
            q,
            c: normal_upper_quantile(q),
            nodes,
            z,
        }
    }
}

fn stay_probability(c: f64, rho: f64, z: f64) -> f64 {
    let s = (1.0 - rho * rho).max(1e-12).sqrt();
    normal_sf((c - rho * z) / s)
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Standard normal CDF Φ(x) (statrs; the same erfc expression, so generated
/// values are unchanged).
pub fn normal_cdf(x: f64) -> f64 {
    Normal::standard().cdf(x)
}

/// Standard normal survival 1 − Φ(x), accurate in the upper tail.
pub fn normal_sf(x: f64) -> f64 {
    Normal::standard().sf(x)
}

/// The z with 1 − Φ(z) = u (u in (0, 1)): −Φ⁻¹(u) by symmetry, which keeps
/// the precision of a tiny u that Φ⁻¹(1 − u) would lose.
pub fn normal_upper_quantile(u: f64) -> f64 {
    -Normal::standard().inverse_cdf(u.clamp(1e-300, 1.0 - 1e-16))
}

/// Sampling-noise allowances of the validator's estimates for a set of a few
/// dozen cells: a retention bucket holds only K/20 elements per step pair,
/// while the hit rate pools all K, so the bucket estimate is ~4.5× noisier.
const RETENTION_NOISE_ALLOWANCE: f64 = 0.015;
const HIT_RATE_NOISE_ALLOWANCE: f64 = 0.003;

/// Quality of one candidate: the worse of the two gate margins it uses
/// (expected error plus noise allowance, as a fraction of the tolerance;
/// lower is better).
fn fit_score(model: Model, curve: &[f64; RETENTION_BUCKETS]) -> f64 {
    let target = target_retention(model);
    let curve_err = curve
        .iter()
        .zip(target.iter())
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    let hr_err = (mean(curve) - target_hit_rate(model)).abs();
    ((curve_err + RETENTION_NOISE_ALLOWANCE) / RETENTION_TOLERANCE)
        .max((hr_err + HIT_RATE_NOISE_ALLOWANCE) / HIT_RATE_TOLERANCE)
}

/// Fit the temporal model of `model` at top-K fraction `q = K/N`.
///
/// The retention curve's mean (0.618 / 0.642 / 0.693) is below the mean hit
/// rate (0.654 / 0.651 / 0.729), so both cannot be met exactly; the fit picks
/// the hit rate in [target − 0.03, target] and the regime mixture that
/// minimise the worse of the two gate errors relative to its tolerance.
/// For each (hit rate, w₂, ρ₂, w₀) candidate, ρ is solved by bisection so the
/// expected hit rate matches; a coarse quadrature drives the search and the
/// winner is re-scored on a fine one.
pub fn fit_temporal(model: Model, q: f64) -> TemporalModel {
    let coarse = RetentionGrid::new(q, 4);
    let fine = RetentionGrid::new(q, 24);
    let target_hr = target_hit_rate(model);
    let mut best = (f64::INFINITY, TemporalModel::INDEPENDENT);
    for hr_step in 0..=12 {
        let hr = target_hr - 0.0025 * hr_step as f64;
        for &partial_weight in &[0.0, 0.1, 0.2, 0.3, 0.4] {
            for &partial_rho in &[0.3, 0.5, 0.6, 0.7, 0.8, 0.85] {
                for &fresh_weight in &[0.0, 0.05, 0.1] {
                    let mut candidate = TemporalModel {
                        rho: 0.0,
                        partial_weight,
                        partial_rho,
                        fresh_weight,
                    };
                    let Some(rho) = solve_rho(&candidate, &coarse, hr) else {
                        continue;
                    };
                    candidate.rho = rho;
                    let score = fit_score(model, &candidate.retention_on(&coarse));
                    if score < best.0 {
                        best = (score, candidate);
                    }
                }
            }
        }
    }
    // Re-solve ρ of the winner on the fine grid so the realised hit rate is
    // what was intended.
    let mut winner = best.1;
    let intended = mean(&winner.retention_on(&coarse));
    if let Some(rho) = solve_rho(&winner, &fine, intended) {
        winner.rho = rho;
    }
    winner
}

/// ρ of the main regime giving expected hit rate `hr`, or None if out of reach.
fn solve_rho(candidate: &TemporalModel, grid: &RetentionGrid, hr: f64) -> Option<f64> {
    let at = |rho: f64| {
        let m = TemporalModel { rho, ..*candidate };
        mean(&m.retention_on(grid))
    };
    let (mut lo, mut hi) = (0.0, 0.99995);
    if at(lo) > hr || at(hi) < hr {
        return None;
    }
    for _ in 0..40 {
        let mid = 0.5 * (lo + hi);
        if at(mid) < hr {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(0.5 * (lo + hi))
}

/// Cached `fit_temporal` per (model, N, K): the 886-cell grid has only 25
/// distinct (model, N) pairs, so the fits cost nothing after the first cell.
pub fn temporal_for(model: Model, n: usize, k: usize) -> TemporalModel {
    type Cache = Mutex<HashMap<(Model, usize, usize), TemporalModel>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Ok(map) = cache.lock() {
        if let Some(found) = map.get(&(model, n, k)) {
            return *found;
        }
    }
    let q = k as f64 / n.max(1) as f64;
    let fitted = fit_temporal(model, q);
    if let Ok(mut map) = cache.lock() {
        map.insert((model, n, k), fitted);
    }
    fitted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_ar1_hit_rate_matches_bivariate_normal_closed_form_at_half() {
        // At q = 1/2 the orthant probability is 1/4 + asin(ρ)/(2π), so the
        // hit rate is 1/2 + asin(ρ)/π.
        let rho: f64 = 0.6;
        let m = TemporalModel {
            rho,
            ..TemporalModel::INDEPENDENT
        };
        let expected = 0.5 + rho.asin() / std::f64::consts::PI;
        let got = m.hit_rate(0.5, 200);
        assert!(
            (got - expected).abs() < 2e-3,
            "got {got}, expected {expected}"
        );
    }

    #[test]
    fn independent_steps_retain_at_chance() {
        let curve = TemporalModel::INDEPENDENT.retention_curve(0.01, 8);
        for v in curve {
            assert!((v - 0.01).abs() < 1e-9);
        }
    }

    #[test]
    fn fitted_models_meet_the_gates_in_expectation_near_64k() {
        for model in Model::ALL {
            let q = model.k() as f64 / 65536.0;
            let fitted = fit_temporal(model, q);
            let curve = fitted.retention_curve(q, 24);
            let score = fit_score(model, &curve);
            assert!(score < 1.0, "{model}: score {score} with {fitted:?}");
            assert!(
                fitted.rho > 0.79 && fitted.rho < 0.999,
                "{model}: {fitted:?}"
            );
        }
    }
}

#[cfg(test)]
mod report {
    use super::*;

    /// `cargo test --release --lib fitted_temporal_parameters -- --ignored --nocapture`
    /// prints the fitted regime mixture of every (model, N) of the grid.
    #[test]
    #[ignore]
    fn fitted_temporal_parameters() {
        for model in Model::ALL {
            let mut widths: Vec<u32> = crate::grid::dsa886_cells()
                .into_iter()
                .filter(|c| c.model == model)
                .map(|c| c.n)
                .collect();
            widths.sort_unstable();
            widths.dedup();
            for n in widths {
                let q = model.k() as f64 / n as f64;
                let m = fit_temporal(model, q);
                let curve = m.retention_curve(q, 24);
                let target = target_retention(model);
                let err = curve
                    .iter()
                    .zip(target.iter())
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f64::max);
                println!(
                    "{model:<5} N {n:>6} K/N {q:.4} rho {:.4} w2 {:.2} rho2 {:.2} w0 {:.2} hr {:.4} curve-err {err:.4}",
                    m.rho,
                    m.partial_weight,
                    m.partial_rho,
                    m.fresh_weight,
                    mean(&curve)
                );
            }
        }
    }
}
