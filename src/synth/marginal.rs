//! Target marginal of the synthetic logits of one layer: a symmetric Beta
//! body (the published per-depth fits, moment-matched on
//! [mean − fr/2, mean + fr/2]) spliced at quantile p₀ into a heavy upper
//! tail that passes exactly through the published real k-th largest values
//! at N = 16K, 64K and 256K, and continues as a generalized Pareto tail
//! beyond (see `SplicedTail`).
//!
//! Why not one GPD above p₀: with x₀ = Q_body(p₀) a single GPD has three
//! unknowns (p₀, ξ, σ), and for 7 of the 9 published bodies no solution
//! meets all three boundaries (the best leaves the 64K boundary mass at
//! 1.06–1.35×). The anchored tail meets them by construction, and the GPD
//! is kept where it matters for realism: beyond the last anchor.
//!
//! The marginal is explicit: `cdf` and `quantile` are closed forms (up to
//! the regularized incomplete Beta function), so `validate` measures KS
//! distances against exactly what the generator claims to draw from.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use statrs::function::beta::{beta_reg, ln_beta};

use super::temporal::{normal_cdf, normal_sf};
use crate::capture::format::Model;

/// A published single-Beta fit of one depth class.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct BodyFit {
    pub name: &'static str,
    pub mean: f64,
    pub std: f64,
    pub full_range: f64,
}

const V32_FITS: [BodyFit; 3] = [
    BodyFit {
        name: "v32_shallow",
        mean: -0.75,
        std: 1.90,
        full_range: 13.60,
    },
    BodyFit {
        name: "v32_moderate",
        mean: -2.96,
        std: 1.68,
        full_range: 12.85,
    },
    BodyFit {
        name: "v32_deep",
        mean: -4.51,
        std: 1.75,
        full_range: 11.24,
    },
];
const FLASH_FITS: [BodyFit; 3] = [
    BodyFit {
        name: "flash_shallow",
        mean: -1.315,
        std: 0.605,
        full_range: 7.31,
    },
    BodyFit {
        name: "flash_moderate",
        mean: -2.088,
        std: 0.728,
        full_range: 9.95,
    },
    BodyFit {
        name: "flash_deep",
        mean: -2.595,
        std: 0.785,
        full_range: 11.46,
    },
];
const PRO_FITS: [BodyFit; 3] = [
    BodyFit {
        name: "pro_shallow",
        mean: -1.184,
        std: 0.864,
        full_range: 8.76,
    },
    BodyFit {
        name: "pro_moderate",
        mean: -1.885,
        std: 1.025,
        full_range: 10.04,
    },
    BodyFit {
        name: "pro_deep",
        mean: -2.590,
        std: 0.870,
        full_range: 9.74,
    },
];

/// The three depth-class fits of a model (shallow, moderate, deep).
pub fn body_fits(model: Model) -> &'static [BodyFit; 3] {
    match model {
        Model::V32 => &V32_FITS,
        Model::Flash => &FLASH_FITS,
        Model::Pro => &PRO_FITS,
    }
}

/// Depth class (0 shallow, 1 moderate, 2 deep) of a layer.
///
/// Flash uses the published layer lists. V3.2 has one fit each near
/// L20 / L22 / L42, so its 61 layers are split into thirds at 20 | 21..40 |
/// 41..60; Pro publishes no lists, so its even layers 2..60 are split into
/// thirds (2..20 | 22..40 | 42..60). Layers outside the grid take the nearest
/// class so any layer number is accepted.
pub fn depth_class(model: Model, layer: u32) -> usize {
    match model {
        Model::Flash => match layer {
            2 | 4 | 10 | 14 | 16 | 18 | 22 => 0,
            6 | 8 | 12 | 30 | 34 | 40 | 42 => 1,
            20 | 24 | 26 | 28 | 32 | 36 | 38 => 2,
            l if l < 20 => 0,
            l if l < 30 => 2,
            _ => 1,
        },
        Model::V32 | Model::Pro => match layer {
            0..=20 => 0,
            21..=40 => 1,
            _ => 2,
        },
    }
}

/// Row widths at which the published statistics give the real k-th largest value.
pub const BOUNDARY_WIDTHS: [f64; 3] = [16384.0, 65536.0, 262144.0];

/// Real k-th largest logit at `BOUNDARY_WIDTHS`.
pub fn real_boundaries(model: Model) -> [f64; 3] {
    match model {
        Model::V32 => [0.5046, 2.1187, 3.2788],
        Model::Flash => [0.6023, 1.6566, 2.9700],
        Model::Pro => [-0.1778, 0.8641, 2.1512],
    }
}

/// Real boundary value at width `n`: piecewise linear in ln N through the
/// three published points, extended linearly beyond them.
pub fn boundary_target(model: Model, n: f64) -> f64 {
    let b = real_boundaries(model);
    let x: Vec<f64> = BOUNDARY_WIDTHS.iter().map(|w| w.ln()).collect();
    let t = n.max(1.0).ln();
    let seg = if t <= x[1] { 0 } else { 1 };
    let slope = (b[seg + 1] - b[seg]) / (x[seg + 1] - x[seg]);
    b[seg] + slope * (t - x[seg])
}

/// (e^{−ξ} − 1)/ξ, continuous at ξ = 0 (limit −ln e).
fn gpd_h(e: f64, xi: f64) -> f64 {
    if xi.abs() < 1e-9 {
        -e.ln()
    } else {
        (e.powf(-xi) - 1.0) / xi
    }
}

/// Symmetric Beta body on [lo, lo + width].
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct BetaBody {
    pub lo: f64,
    pub width: f64,
    /// α = β (the body is symmetric because the fit's mean is mid-range).
    pub alpha: f64,
}

impl BetaBody {
    /// Moment match: mean (mid-range) fixes symmetry; variance of Beta(α, α)
    /// is 1/(4(2α+1)) in unit scale.
    pub fn from_fit(fit: &BodyFit) -> BetaBody {
        let v = (fit.std / fit.full_range).powi(2);
        let alpha = ((0.25 / v) - 1.0) / 2.0;
        BetaBody {
            lo: fit.mean - fit.full_range / 2.0,
            width: fit.full_range,
            alpha: alpha.max(0.05),
        }
    }

    pub fn cdf(&self, x: f64) -> f64 {
        let u = (x - self.lo) / self.width;
        if u <= 0.0 {
            0.0
        } else if u >= 1.0 {
            1.0
        } else {
            beta_reg(self.alpha, self.alpha, u)
        }
    }

    /// Inverse CDF by safeguarded Newton on the unit interval. Kept rather
    /// than statrs' `Beta::inverse_cdf`: that one lands on other last bits,
    /// which changes the generated logits, so the committed sample
    /// (captures/sample) would no longer reproduce from its command.
    pub fn quantile(&self, p: f64) -> f64 {
        if p <= 0.0 {
            return self.lo;
        }
        if p >= 1.0 {
            return self.lo + self.width;
        }
        let a = self.alpha;
        let ln_norm = ln_beta(a, a);
        let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
        let mut u = 0.5;
        for _ in 0..100 {
            let f = beta_reg(a, a, u) - p;
            if f.abs() < 1e-14 {
                break;
            }
            if f > 0.0 {
                hi = u;
            } else {
                lo = u;
            }
            let pdf = ((a - 1.0) * u.ln() + (a - 1.0) * (1.0 - u).ln() - ln_norm).exp();
            let newton = u - f / pdf;
            u = if pdf.is_finite() && pdf > 0.0 && newton > lo && newton < hi {
                newton
            } else {
                0.5 * (lo + hi)
            };
            if hi - lo < 1e-15 {
                break;
            }
        }
        self.lo + self.width * u
    }
}

/// Heavy upper tail spliced onto the body at quantile `p0`.
///
/// In log-exceedance space t = −ln(1 − p) the tail quantile is piecewise
/// linear through the anchors (t₀, x₀) = splice, then (tᵢ, bᵢ) = the three
/// real boundaries at q = K/Nᵢ; each piece is an exponential (GPD
/// ξ = 0) slice, so the marginal passes through all three published points
/// exactly. Beyond the last anchor it continues as a generalized Pareto tail
/// with shape `xi` and scale equal to the last piece's slope (density
/// continuous there). With ξ = 0 the row maximum at N = 256K lands near
/// +7…+10, inside the real +5…+10.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SplicedTail {
    pub p0: f64,
    /// Log-exceedance t = −ln(1 − p) of the splice and the three anchors.
    pub anchor_t: [f64; 4],
    /// Logit value of the splice and the three anchors.
    pub anchor_x: [f64; 4],
    /// GPD shape beyond the last anchor.
    pub xi: f64,
    /// GPD scale beyond the last anchor (= last piece's dx/dt).
    pub sigma: f64,
}

/// GPD shape beyond the last calibration anchor (exponential tail).
pub const TAIL_SHAPE_BEYOND_ANCHORS: f64 = 0.0;

impl SplicedTail {
    fn new(p0: f64, x0: f64, model: Model) -> Option<SplicedTail> {
        let k = model.k() as f64;
        let b = real_boundaries(model);
        let mut anchor_t = [-(1.0 - p0).ln(), 0.0, 0.0, 0.0];
        let mut anchor_x = [x0, 0.0, 0.0, 0.0];
        for i in 0..3 {
            anchor_t[i + 1] = (BOUNDARY_WIDTHS[i] / k).ln();
            anchor_x[i + 1] = b[i];
        }
        let increasing =
            anchor_t.windows(2).all(|w| w[1] > w[0]) && anchor_x.windows(2).all(|w| w[1] > w[0]);
        if !increasing {
            return None;
        }
        let sigma = (anchor_x[3] - anchor_x[2]) / (anchor_t[3] - anchor_t[2]);
        Some(SplicedTail {
            p0,
            anchor_t,
            anchor_x,
            xi: TAIL_SHAPE_BEYOND_ANCHORS,
            sigma,
        })
    }

    fn slope(&self, piece: usize) -> f64 {
        (self.anchor_x[piece + 1] - self.anchor_x[piece])
            / (self.anchor_t[piece + 1] - self.anchor_t[piece])
    }

    /// Quantile at log-exceedance t ≥ t₀.
    fn value_at_t(&self, t: f64) -> f64 {
        for piece in 0..3 {
            if t <= self.anchor_t[piece + 1] {
                return self.anchor_x[piece] + (t - self.anchor_t[piece]) * self.slope(piece);
            }
        }
        let e = (-(t - self.anchor_t[3])).exp();
        self.anchor_x[3] + self.sigma * gpd_h(e, self.xi)
    }

    /// Log-exceedance of value x ≥ x₀ (inverse of `value_at_t`).
    fn t_at_value(&self, x: f64) -> f64 {
        for piece in 0..3 {
            if x <= self.anchor_x[piece + 1] {
                return self.anchor_t[piece] + (x - self.anchor_x[piece]) / self.slope(piece);
            }
        }
        let y = (x - self.anchor_x[3]) / self.sigma;
        let conditional_sf = if self.xi.abs() < 1e-9 {
            (-y).exp()
        } else {
            let base = 1.0 + self.xi * y;
            if base <= 0.0 {
                0.0
            } else {
                base.powf(-1.0 / self.xi)
            }
        };
        self.anchor_t[3] - conditional_sf.max(1e-300).ln()
    }

    fn x0(&self) -> f64 {
        self.anchor_x[0]
    }
}

/// The target marginal of one depth class, and the generator's fast map
/// from latent z to logit.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Marginal {
    pub fit: BodyFit,
    pub body: BetaBody,
    /// None = body only (the ablation that the gates must reject).
    pub tail: Option<SplicedTail>,
    #[serde(skip)]
    z_table: Vec<f32>,
}

/// Latent range of the lookup table; |z| > 8.5 has probability ~2e-17.
const Z_MIN: f64 = -8.5;
const Z_MAX: f64 = 8.5;
const Z_TABLE_POINTS: usize = (1 << 14) + 1;

impl Marginal {
    /// Body + tail calibrated to the model's published boundaries.
    pub fn calibrated(model: Model, fit: &BodyFit) -> Marginal {
        let body = BetaBody::from_fit(fit);
        let tail = solve_splice(&body, model);
        Marginal::assemble(*fit, body, tail)
    }

    /// The published single-Beta fit alone (no tail).
    pub fn body_only(fit: &BodyFit) -> Marginal {
        Marginal::assemble(*fit, BetaBody::from_fit(fit), None)
    }

    fn assemble(fit: BodyFit, body: BetaBody, tail: Option<SplicedTail>) -> Marginal {
        let mut m = Marginal {
            fit,
            body,
            tail,
            z_table: Vec::new(),
        };
        m.z_table = m.build_z_table();
        m
    }

    pub fn cdf(&self, x: f64) -> f64 {
        match &self.tail {
            Some(t) if x > t.x0() => 1.0 - (-t.t_at_value(x)).exp(),
            _ => self.body.cdf(x),
        }
    }

    /// Upper-tail probability 1 − F(x), without cancellation in the tail.
    pub fn sf(&self, x: f64) -> f64 {
        match &self.tail {
            Some(t) if x > t.x0() => (-t.t_at_value(x)).exp(),
            _ => 1.0 - self.body.cdf(x),
        }
    }

    pub fn quantile(&self, p: f64) -> f64 {
        match &self.tail {
            Some(t) if p > t.p0 => t.value_at_t(-(1.0 - p).max(1e-300).ln()),
            _ => self.body.quantile(p),
        }
    }

    /// Q(Φ(z)) on a z grid; the tail part uses Φ̄(z) directly so that
    /// upper-tail probabilities keep full relative precision.
    fn build_z_table(&self) -> Vec<f32> {
        let step = (Z_MAX - Z_MIN) / (Z_TABLE_POINTS - 1) as f64;
        (0..Z_TABLE_POINTS)
            .map(|i| {
                let z = Z_MIN + step * i as f64;
                let value = match &self.tail {
                    Some(t) if normal_cdf(z) > t.p0 => t.value_at_t(-normal_sf(z).max(1e-300).ln()),
                    _ => self.body.quantile(normal_cdf(z)),
                };
                value as f32
            })
            .collect()
    }

    /// The logit of latent z: linear interpolation in the Q∘Φ table (the
    /// table error is < 1e-4 in probability, far below the KS gates).
    #[inline]
    pub fn value_of_z(&self, z: f32) -> f32 {
        const INV_STEP: f32 = ((Z_TABLE_POINTS - 1) as f64 / (Z_MAX - Z_MIN)) as f32;
        let last = (Z_TABLE_POINTS - 1) as f32;
        let t = ((z - Z_MIN as f32) * INV_STEP).clamp(0.0, last - 1e-3);
        let i = t as usize;
        let frac = t - i as f32;
        let (a, b) = (self.z_table[i], self.z_table[i + 1]);
        a + (b - a) * frac
    }
}

/// Choose the splice quantile p₀ where the body hands over to the tail.
///
/// The tail's first piece runs from (t₀, Q_body(p₀)) to the 16K anchor. The
/// splice is put where that piece is tangent to the body in t-space
/// (dQ_body/dt = chord slope), i.e. where the density is continuous; of
/// several such points the largest p₀ keeps most of the published body.
/// Without a tangent point the p₀ with the smallest slope mismatch is used.
fn solve_splice(body: &BetaBody, model: Model) -> Option<SplicedTail> {
    let k = model.k() as f64;
    let first_anchor_t = (BOUNDARY_WIDTHS[0] / k).ln();
    let first_anchor_x = real_boundaries(model)[0];
    let ln_norm = ln_beta(body.alpha, body.alpha);
    // Body slope dx/dt = (1 − p) / f(x) minus the chord slope to the anchor.
    let mismatch = |p0: f64| -> Option<f64> {
        let x0 = body.quantile(p0);
        if x0 >= first_anchor_x {
            return None;
        }
        let u = ((x0 - body.lo) / body.width).clamp(1e-300, 1.0 - 1e-16);
        let a = body.alpha;
        let pdf = ((a - 1.0) * (u.ln() + (1.0 - u).ln()) - ln_norm).exp() / body.width;
        let body_slope = (1.0 - p0) / pdf;
        let chord = (first_anchor_x - x0) / (first_anchor_t + (1.0 - p0).ln());
        Some(body_slope - chord)
    };
    let p_max = 1.0 - k / BOUNDARY_WIDTHS[0] - 1e-4;
    let grid: Vec<f64> = (0..=400)
        .map(|i| 0.02 + (p_max - 0.02) * i as f64 / 400.0)
        .collect();
    let scanned: Vec<(f64, f64)> = grid
        .iter()
        .filter_map(|&p0| mismatch(p0).map(|d| (p0, d)))
        .collect();
    let mut chosen = None;
    for w in scanned.windows(2).rev() {
        let ((pa, da), (pb, db)) = (w[0], w[1]);
        if da.signum() != db.signum() {
            let (mut lo, mut hi, mut d_lo) = (pa, pb, da);
            for _ in 0..60 {
                let mid = 0.5 * (lo + hi);
                match mismatch(mid) {
                    Some(d) if d.signum() == d_lo.signum() => {
                        lo = mid;
                        d_lo = d;
                    }
                    Some(_) => hi = mid,
                    None => break,
                }
            }
            chosen = Some(0.5 * (lo + hi));
            break;
        }
    }
    let p0 = chosen.or_else(|| {
        scanned
            .iter()
            .min_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
            .map(|&(p, _)| p)
    })?;
    SplicedTail::new(p0, body.quantile(p0), model)
}

/// Which marginal family the generator draws from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MarginalKind {
    /// Beta body + calibrated GPD tail (the shipped generator).
    Calibrated,
    /// Beta body alone (an ablation; the gates must reject it).
    BodyOnly,
}

/// Cached marginal of (model, layer); the 9 depth classes are solved once.
pub fn marginal_for(model: Model, layer: u32, kind: MarginalKind) -> Arc<Marginal> {
    type Cache = Mutex<HashMap<(Model, usize, MarginalKind), Arc<Marginal>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let class = depth_class(model, layer);
    let key = (model, class, kind);
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Ok(map) = cache.lock() {
        if let Some(found) = map.get(&key) {
            return Arc::clone(found);
        }
    }
    let fit = &body_fits(model)[class];
    let built = Arc::new(match kind {
        MarginalKind::Calibrated => Marginal::calibrated(model, fit),
        MarginalKind::BodyOnly => Marginal::body_only(fit),
    });
    if let Ok(mut map) = cache.lock() {
        map.entry(key).or_insert_with(|| Arc::clone(&built));
    }
    built
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beta_body_matches_published_moments() {
        let fit = &V32_FITS[0];
        let body = BetaBody::from_fit(fit);
        // Mean at mid-range, std from the Beta variance formula.
        let a = body.alpha;
        let std = body.width * (a * a / ((2.0 * a).powi(2) * (2.0 * a + 1.0))).sqrt();
        assert!((std - fit.std).abs() < 1e-9);
        assert!((body.quantile(0.5) - fit.mean).abs() < 1e-9);
    }

    #[test]
    fn body_quantile_inverts_cdf() {
        let body = BetaBody::from_fit(&FLASH_FITS[2]);
        for &p in &[1e-6, 0.01, 0.3, 0.5, 0.9, 0.999] {
            let x = body.quantile(p);
            assert!((body.cdf(x) - p).abs() < 1e-9, "p {p}");
        }
    }

    #[test]
    fn calibrated_quantile_hits_real_boundaries_for_every_class() {
        for model in Model::ALL {
            for fit in body_fits(model) {
                let m = Marginal::calibrated(model, fit);
                assert!(m.tail.is_some(), "{}: no tail solution", fit.name);
                for (w, b) in BOUNDARY_WIDTHS.iter().zip(real_boundaries(model)) {
                    let q = m.quantile(1.0 - model.k() as f64 / w);
                    // Exceedance mass at the real boundary within 3 % of K/N.
                    let mass = (1.0 - m.cdf(b)) / (model.k() as f64 / w);
                    assert!(
                        (0.97..=1.03).contains(&mass),
                        "{} at {w}: q {q} vs {b}, mass {mass}",
                        fit.name
                    );
                }
            }
        }
    }

    #[test]
    fn cdf_and_quantile_are_inverse_across_the_splice() {
        let m = Marginal::calibrated(Model::Pro, &PRO_FITS[1]);
        for &p in &[0.01, 0.2, 0.5, 0.8, 0.95, 0.999, 0.99999] {
            let x = m.quantile(p);
            assert!((m.cdf(x) - p).abs() < 1e-8, "p {p}");
        }
    }

    #[test]
    fn z_table_agrees_with_quantile() {
        let m = Marginal::calibrated(Model::V32, &V32_FITS[2]);
        for &z in &[-3.0_f64, -1.0, 0.0, 1.0, 2.0, 3.5, 4.5] {
            let exact = m.quantile(normal_cdf(z));
            let fast = m.value_of_z(z as f32) as f64;
            assert!(
                (exact - fast).abs() < 1e-3 * (1.0 + exact.abs()),
                "z {z}: {exact} vs {fast}"
            );
        }
    }

    #[test]
    fn boundary_target_passes_through_published_points() {
        for model in Model::ALL {
            for (w, b) in BOUNDARY_WIDTHS.iter().zip(real_boundaries(model)) {
                assert!((boundary_target(model, *w) - b).abs() < 1e-12);
            }
        }
    }
}

#[cfg(test)]
mod report {
    use super::*;

    /// `cargo test --release --lib solved_tail_parameters -- --ignored --nocapture`
    /// prints the solved splice of every depth class (documented in
    /// captures/sample/README.md).
    #[test]
    #[ignore]
    fn solved_tail_parameters() {
        for model in Model::ALL {
            for fit in body_fits(model) {
                let m = Marginal::calibrated(model, fit);
                let masses: Vec<String> = BOUNDARY_WIDTHS
                    .iter()
                    .zip(real_boundaries(model))
                    .map(|(w, b)| format!("{:.3}", (1.0 - m.cdf(b)) / (model.k() as f64 / w)))
                    .collect();
                println!(
                    "{:<15} alpha {:.3} tail {:?} masses {:?} q(1-1e-6) {:.3}",
                    fit.name,
                    m.body.alpha,
                    m.tail,
                    masses,
                    m.quantile(1.0 - 1e-6)
                );
            }
        }
    }
}
