//! Regression analysis: a baseline run against a current run, arm by arm.
//! A case regresses when it is slower beyond both the noise band and an
//! absolute floor, or when it was exact and no longer is.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::quantile::geomean;
use super::ratios::{pair, RatioSummary};
use super::sample::{CaseTime, ExactClass};

/// Thresholds of the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RegressConfig {
    /// current/baseline above this is outside noise (A/A P99, default 1.05).
    pub noise_upper: f64,
    /// A slowdown must also exceed this many µs: at the launch floor a 5%
    /// ratio is a fraction of a microsecond and single batches vary by more.
    pub abs_floor_us: f64,
    /// Geomean of current/baseline above this flags a drift of the whole arm.
    pub geomean_threshold: f64,
    /// Slower cases are listed, but the arm regresses on them only when they
    /// exceed this share of the compared cases: beyond an A/A P99 band about
    /// 1 % of cases of an unchanged kernel land there by chance.
    #[serde(default)]
    pub max_slower_fraction: f64,
}

impl Default for RegressConfig {
    fn default() -> Self {
        RegressConfig {
            noise_upper: 1.05,
            abs_floor_us: 0.5,
            geomean_threshold: 1.02,
            max_slower_fraction: 0.01,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeKind {
    /// Slower beyond the noise band and the absolute floor.
    Slower,
    /// Exact in the baseline, not exact now.
    LostExactness,
}

/// One flagged case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseChange {
    pub case: String,
    pub arm: String,
    pub kind: ChangeKind,
    pub baseline_exact: ExactClass,
    pub current_exact: ExactClass,
    pub baseline_us: Option<f64>,
    pub current_us: Option<f64>,
    /// current / baseline, when both are timed.
    pub ratio: Option<f64>,
}

/// The verdict for one arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmRegression {
    pub arm: String,
    /// Cases timed and exact on both sides.
    pub compared: usize,
    /// Distribution of current/baseline over compared cases.
    pub drift: Option<RatioSummary>,
    pub geomean_flagged: bool,
    /// More slower cases than `max_slower_fraction` of the compared ones.
    pub slower_beyond_chance: bool,
    /// Flagged cases, worst first (lost exactness, then by ratio).
    pub changes: Vec<CaseChange>,
    pub missing_in_current: usize,
    pub new_in_current: usize,
}

impl ArmRegression {
    pub fn slower(&self) -> usize {
        self.changes
            .iter()
            .filter(|c| c.kind == ChangeKind::Slower)
            .count()
    }

    pub fn lost_exactness(&self) -> usize {
        self.changes
            .iter()
            .filter(|c| c.kind == ChangeKind::LostExactness)
            .count()
    }

    pub fn regressed(&self) -> bool {
        self.geomean_flagged || self.lost_exactness() > 0 || self.slower_beyond_chance
    }
}

/// Compare `arm` between the two sides.
pub fn analyse_arm(
    baseline: &[CaseTime],
    current: &[CaseTime],
    arm: &str,
    config: &RegressConfig,
) -> ArmRegression {
    let pairing = pair(baseline, arm, current, arm);
    let mut changes = Vec::new();
    for p in &pairing.points {
        if p.ratio > config.noise_upper && p.other_us - p.base_us > config.abs_floor_us {
            changes.push(CaseChange {
                case: p.case.clone(),
                arm: arm.to_string(),
                kind: ChangeKind::Slower,
                baseline_exact: ExactClass::Exact,
                current_exact: ExactClass::Exact,
                baseline_us: Some(p.base_us),
                current_us: Some(p.other_us),
                ratio: Some(p.ratio),
            });
        }
    }
    // Exactness losses: every case exact before and present but inexact now.
    let current_by_case: HashMap<&str, &CaseTime> = current
        .iter()
        .filter(|c| c.arm == arm)
        .map(|c| (c.case.as_str(), c))
        .collect();
    let mut seen = std::collections::HashSet::new();
    for before in baseline.iter().filter(|c| c.arm == arm).rev() {
        // Reverse + seen: the last record of a duplicated case wins, as in `pair`.
        if !seen.insert(before.case.as_str()) || before.exact != ExactClass::Exact {
            continue;
        }
        if let Some(now) = current_by_case.get(before.case.as_str()) {
            if now.exact != ExactClass::Exact {
                let baseline_us = before.usable_mean_us();
                changes.push(CaseChange {
                    case: before.case.clone(),
                    arm: arm.to_string(),
                    kind: ChangeKind::LostExactness,
                    baseline_exact: before.exact,
                    current_exact: now.exact,
                    baseline_us,
                    current_us: now.cold.map(|c| c.mean_us),
                    ratio: None,
                });
            }
        }
    }
    changes.sort_by(|a, b| {
        let rank = |c: &CaseChange| (c.kind == ChangeKind::Slower, -c.ratio.unwrap_or(0.0));
        let (ra, rb) = (rank(a), rank(b));
        ra.0.cmp(&rb.0)
            .then(ra.1.total_cmp(&rb.1))
            .then(a.case.cmp(&b.case))
    });
    let drift = RatioSummary::of(&pairing.ratios());
    let geomean_flagged = geomean(&pairing.ratios()).is_some_and(|g| g > config.geomean_threshold);
    let slower = changes
        .iter()
        .filter(|c| c.kind == ChangeKind::Slower)
        .count();
    let slower_beyond_chance =
        slower as f64 > config.max_slower_fraction * pairing.points.len() as f64;
    ArmRegression {
        arm: arm.to_string(),
        compared: pairing.points.len(),
        drift,
        geomean_flagged,
        slower_beyond_chance,
        changes,
        missing_in_current: pairing.only_in_base,
        new_in_current: pairing.only_in_other,
    }
}

/// The whole analysis over several arms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegressAnalysis {
    pub config: RegressConfig,
    pub arms: Vec<ArmRegression>,
}

impl RegressAnalysis {
    pub fn regressed(&self) -> bool {
        self.arms.iter().any(ArmRegression::regressed)
    }
}

pub fn analyse(
    baseline: &[CaseTime],
    current: &[CaseTime],
    arms: &[String],
    config: &RegressConfig,
) -> RegressAnalysis {
    RegressAnalysis {
        config: *config,
        arms: arms
            .iter()
            .map(|arm| analyse_arm(baseline, current, arm, config))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Model;
    use crate::stats::sample::ColdStats;

    fn ct(case: &str, us: f64, exact: ExactClass) -> CaseTime {
        CaseTime {
            case: case.to_string(),
            cell: case.to_string(),
            arm: "ss".to_string(),
            model: Model::V32,
            isl: "64k".to_string(),
            layer: 1,
            n: 65536,
            k: 2048,
            b: 1,
            variant: None,
            exact,
            cold: ColdStats::of(&[us]),
            bytes: 1,
            method: None,
        }
    }

    fn baseline() -> Vec<CaseTime> {
        (0..50)
            .map(|i| ct(&format!("c{i}@b1"), 10.0 + i as f64, ExactClass::Exact))
            .collect()
    }

    #[test]
    fn injected_slowdown_is_flagged() {
        let base = baseline();
        let mut cur = base.clone();
        for c in cur.iter_mut().take(3) {
            c.cold.as_mut().unwrap().mean_us *= 1.2;
        }
        let a = analyse_arm(&base, &cur, "ss", &RegressConfig::default());
        assert!(a.regressed());
        assert_eq!(a.slower(), 3);
        assert!(!a.geomean_flagged);
        assert_eq!(a.compared, 50);
    }

    #[test]
    fn one_slower_case_in_two_hundred_is_chance_but_three_are_not() {
        let base: Vec<CaseTime> = (0..200)
            .map(|i| ct(&format!("c{i}@b1"), 50.0, ExactClass::Exact))
            .collect();
        let slowed = |count: usize| {
            let mut cur = base.clone();
            for c in cur.iter_mut().take(count) {
                c.cold.as_mut().unwrap().mean_us *= 1.3;
            }
            analyse_arm(&base, &cur, "ss", &RegressConfig::default())
        };
        let one = slowed(1);
        assert_eq!(one.slower(), 1, "the case is still listed");
        assert!(!one.regressed(), "{one:?}");
        let three = slowed(3);
        assert!(three.regressed());
        let strict = RegressConfig {
            max_slower_fraction: 0.0,
            ..RegressConfig::default()
        };
        let mut cur = base.clone();
        cur[0].cold.as_mut().unwrap().mean_us *= 1.3;
        assert!(analyse_arm(&base, &cur, "ss", &strict).regressed());
    }

    #[test]
    fn jitter_within_two_percent_passes() {
        let base = baseline();
        let mut cur = base.clone();
        for (i, c) in cur.iter_mut().enumerate() {
            let jitter = if i % 2 == 0 { 1.02 } else { 0.98 };
            c.cold.as_mut().unwrap().mean_us *= jitter;
        }
        let a = analyse_arm(&base, &cur, "ss", &RegressConfig::default());
        assert!(!a.regressed(), "{a:?}");
    }

    #[test]
    fn slowdown_under_absolute_floor_is_not_flagged() {
        let base = vec![ct("tiny@b1", 2.0, ExactClass::Exact)];
        let cur = vec![ct("tiny@b1", 2.4, ExactClass::Exact)]; // +20% but only 0.4 µs
        let a = analyse_arm(&base, &cur, "ss", &RegressConfig::default());
        assert_eq!(a.slower(), 0);
        // The single-case geomean drift (1.2) is still flagged.
        assert!(a.geomean_flagged);
    }

    #[test]
    fn exact_to_wrong_is_a_regression() {
        let base = baseline();
        let mut cur = base.clone();
        cur[7].exact = ExactClass::Wrong;
        let a = analyse_arm(&base, &cur, "ss", &RegressConfig::default());
        assert!(a.regressed());
        assert_eq!(a.lost_exactness(), 1);
        assert_eq!(a.changes[0].case, "c7@b1");
        assert_eq!(a.changes[0].current_exact, ExactClass::Wrong);
    }

    #[test]
    fn geomean_drift_flagged_above_threshold() {
        let base = baseline();
        let mut cur = base.clone();
        for c in cur.iter_mut() {
            c.cold.as_mut().unwrap().mean_us *= 1.03;
        }
        let a = analyse_arm(&base, &cur, "ss", &RegressConfig::default());
        assert!(a.geomean_flagged);
        assert_eq!(a.slower(), 0);
    }
}
