//! A/A noise floor: the same arm measured twice (two runs, or two copies of
//! the arm in one run). The spread of its per-case ratios is the band inside
//! which a difference is indistinguishable from measurement noise.

use serde::{Deserialize, Serialize};

use super::quantile::{geomean, quantile_sorted, sorted_finite};

/// Per-case ratio distribution of an A/A comparison (time(B) / time(A)).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NoiseFloor {
    pub p1: f64,
    pub p99: f64,
    pub geomean: f64,
    pub cases: usize,
    #[serde(default)]
    pub p5: Option<f64>,
    #[serde(default)]
    pub p50: Option<f64>,
    #[serde(default)]
    pub p95: Option<f64>,
    /// max |ln ratio|: the worst single-case disagreement, symmetric in A and B.
    #[serde(default)]
    pub max_abs_log_ratio: Option<f64>,
}

impl NoiseFloor {
    /// `None` when no finite positive ratio is present.
    pub fn of(ratios: &[f64]) -> Option<NoiseFloor> {
        let sorted: Vec<f64> = sorted_finite(ratios)
            .into_iter()
            .filter(|r| *r > 0.0)
            .collect();
        let max_abs_log_ratio = sorted
            .iter()
            .map(|r| r.ln().abs())
            .fold(None, |acc: Option<f64>, v| {
                Some(acc.map_or(v, |a| a.max(v)))
            });
        Some(NoiseFloor {
            p1: quantile_sorted(&sorted, 0.01)?,
            p99: quantile_sorted(&sorted, 0.99)?,
            geomean: geomean(&sorted)?,
            cases: sorted.len(),
            p5: quantile_sorted(&sorted, 0.05),
            p50: quantile_sorted(&sorted, 0.5),
            p95: quantile_sorted(&sorted, 0.95),
            max_abs_log_ratio,
        })
    }

    /// Upper edge of the noise band used by `regress`: the A/A P99. A case
    /// slower than this is slower than 99% of pure-noise disagreements.
    pub fn upper_edge(&self) -> f64 {
        self.p99
    }
}

fn cell(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.4}")).unwrap_or_default()
}

impl std::fmt::Display for NoiseFloor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "| Cases | P1 | P5 | P50 | P95 | P99 | Geometric mean | max abs ln ratio |"
        )?;
        writeln!(f, "|---:|---:|---:|---:|---:|---:|---:|---:|")?;
        writeln!(
            f,
            "| {} | {:.4} | {} | {} | {} | {:.4} | {:.4} | {} |",
            self.cases,
            self.p1,
            cell(self.p5),
            cell(self.p50),
            cell(self.p95),
            self.p99,
            self.geomean,
            cell(self.max_abs_log_ratio)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_floor_of_symmetric_jitter() {
        // 101 ratios evenly from 0.95 to 1.05: p1 at h = 1, p99 at h = 99.
        let ratios: Vec<f64> = (0..=100).map(|i| 0.95 + 0.001 * i as f64).collect();
        let nf = NoiseFloor::of(&ratios).unwrap();
        assert_eq!(nf.cases, 101);
        assert!((nf.p1 - 0.951).abs() < 1e-9);
        assert!((nf.p99 - 1.049).abs() < 1e-9);
        assert!((nf.p50.unwrap() - 1.0).abs() < 1e-9);
        assert!((nf.max_abs_log_ratio.unwrap() - 0.95f64.ln().abs()).abs() < 1e-12);
        assert_eq!(nf.upper_edge(), nf.p99);
        assert_eq!(NoiseFloor::of(&[]), None);
    }

    #[test]
    fn noise_floor_json_round_trip_and_minimal_form() {
        let nf = NoiseFloor::of(&[0.99, 1.0, 1.01]).unwrap();
        let text = serde_json::to_string(&nf).unwrap();
        assert_eq!(serde_json::from_str::<NoiseFloor>(&text).unwrap(), nf);
        // The four required fields are enough (hand-written noise files).
        let minimal: NoiseFloor =
            serde_json::from_str(r#"{"p1":0.97,"p99":1.03,"geomean":1.0,"cases":10}"#).unwrap();
        assert_eq!(minimal.p5, None);
        assert!(minimal.to_string().contains("| 10 | 0.9700 |"));
    }
}
