//! Paired comparisons: join two arms on `case`, form per-case time ratios,
//! summarise them (geomean, quantiles, buckets) and break them down by model,
//! batch size and the N = 4096 production split.

use std::collections::BTreeMap;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::capture::Model;
use crate::record::TimingMethod;

use super::quantile::{geomean, quantile_sorted, sorted_finite};
use super::sample::{CaseTime, ExactClass};

/// Rows shorter than this lie outside the production GVR region
/// (`kSeqSmallDefaultForK()`): verdicts split here.
pub const PRODUCTION_N_SPLIT: u32 = 4096;

/// Inner edges of the ratio buckets; bucket i is [edge[i-1], edge[i]),
/// left-closed and right-open, with the first open below and the last above.
pub const BUCKET_EDGES: [f64; 7] = [0.7, 0.9, 1.0, 1.2, 1.5, 2.0, 3.0];
pub const BUCKET_LABELS: [&str; 8] = [
    "<0.7", "0.7-0.9", "0.9-1.0", "1.0-1.2", "1.2-1.5", "1.5-2.0", "2.0-3.0", ">=3.0",
];

/// Index of the bucket holding `ratio` (a ratio exactly on an edge belongs to
/// the bucket that starts there).
pub fn bucket_index(ratio: f64) -> usize {
    BUCKET_EDGES
        .iter()
        .take_while(|edge| ratio >= **edge)
        .count()
}

/// One case present and usable (exact, timed) in both arms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatioPoint {
    pub case: String,
    /// Arm of the comparison side (differs per point when runs are pooled).
    pub arm: String,
    pub model: Model,
    pub isl: String,
    pub layer: u32,
    pub n: u32,
    pub b: u32,
    pub base_us: f64,
    pub other_us: f64,
    /// other_us / base_us: above 1 means the base side is faster.
    pub ratio: f64,
    /// How both sides were timed (a ratio is only formed between records
    /// timed the same way).
    #[serde(default)]
    pub method: Option<TimingMethod>,
}

/// The outcome of joining two sides on `case`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Pairing {
    pub points: Vec<RatioPoint>,
    /// Cases only the base side has.
    pub only_in_base: usize,
    /// Cases only the comparison side has.
    pub only_in_other: usize,
    /// Cases both sides have but at least one is inexact, untimed or timed
    /// at zero, or the two were timed by different methods (no meaningful
    /// ratio).
    pub not_comparable: usize,
    /// Of `not_comparable`: both usable, but timed by different methods.
    #[serde(default)]
    pub method_differs: usize,
}

impl Pairing {
    pub fn ratios(&self) -> Vec<f64> {
        self.points.iter().map(|p| p.ratio).collect()
    }
}

/// Index the records of one arm by case. A case that appears twice (a resumed
/// run re-appending it) keeps its last record, the most recent measurement.
fn index_by_case<'a>(cases: &'a [CaseTime], arm: &str) -> HashMap<&'a str, &'a CaseTime> {
    let mut by_case = HashMap::new();
    for c in cases.iter().filter(|c| c.arm == arm) {
        by_case.insert(c.case.as_str(), c);
    }
    by_case
}

/// Join `base_arm` in `base` with `other_arm` in `other` on `case` (the two
/// slices may be the same run or two runs). Points come out in the base
/// side's record order so reports are stable.
pub fn pair(base: &[CaseTime], base_arm: &str, other: &[CaseTime], other_arm: &str) -> Pairing {
    let base_by_case = index_by_case(base, base_arm);
    let other_by_case = index_by_case(other, other_arm);
    let mut pairing = Pairing::default();
    let mut seen = std::collections::HashSet::new();
    for b in base.iter().filter(|c| c.arm == base_arm) {
        // First occurrence fixes the order; the index supplies the last record.
        if !seen.insert(b.case.as_str()) {
            continue;
        }
        let Some(b) = base_by_case.get(b.case.as_str()) else {
            continue;
        };
        let Some(o) = other_by_case.get(b.case.as_str()) else {
            pairing.only_in_base += 1;
            continue;
        };
        match (b.usable_mean_us(), o.usable_mean_us()) {
            (Some(_), Some(_)) if b.method != o.method => {
                pairing.not_comparable += 1;
                pairing.method_differs += 1;
            }
            (Some(base_us), Some(other_us)) if base_us > 0.0 && other_us > 0.0 => {
                pairing.points.push(RatioPoint {
                    case: b.case.clone(),
                    arm: o.arm.clone(),
                    model: b.model,
                    isl: b.isl.clone(),
                    layer: b.layer,
                    n: b.n,
                    b: b.b,
                    base_us,
                    other_us,
                    ratio: other_us / base_us,
                    method: b.method,
                })
            }
            _ => pairing.not_comparable += 1,
        }
    }
    pairing.only_in_other = other_by_case
        .keys()
        .filter(|case| !base_by_case.contains_key(*case))
        .count();
    pairing
}

/// Distribution summary of per-case ratios (time(other) / time(base)).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RatioSummary {
    pub count: usize,
    pub geomean: f64,
    pub min: f64,
    pub p5: f64,
    pub p50: f64,
    pub p95: f64,
    pub max: f64,
    /// Cases with ratio > 1 strictly: a tie is not a win.
    pub base_faster: usize,
    pub base_faster_pct: f64,
}

impl RatioSummary {
    /// `None` when no finite positive ratio is present.
    pub fn of(ratios: &[f64]) -> Option<RatioSummary> {
        let sorted: Vec<f64> = sorted_finite(ratios)
            .into_iter()
            .filter(|r| *r > 0.0)
            .collect();
        let base_faster = sorted.iter().filter(|r| **r > 1.0).count();
        Some(RatioSummary {
            count: sorted.len(),
            geomean: geomean(&sorted)?,
            min: *sorted.first()?,
            p5: quantile_sorted(&sorted, 0.05)?,
            p50: quantile_sorted(&sorted, 0.5)?,
            p95: quantile_sorted(&sorted, 0.95)?,
            max: *sorted.last()?,
            base_faster,
            base_faster_pct: 100.0 * base_faster as f64 / sorted.len() as f64,
        })
    }
}

/// Case counts per ratio bucket, in `BUCKET_LABELS` order.
pub fn bucket_counts(ratios: &[f64]) -> [usize; 8] {
    let mut counts = [0usize; 8];
    for r in ratios.iter().filter(|r| r.is_finite()) {
        counts[bucket_index(*r)] += 1;
    }
    counts
}

/// A labelled subset summary (one model, one batch size, one side of N = 4096).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    pub label: String,
    pub summary: RatioSummary,
}

fn groups_by<K: Ord>(
    points: &[RatioPoint],
    key: impl Fn(&RatioPoint) -> K,
    label: impl Fn(&K) -> String,
) -> Vec<Group> {
    let mut by_key: BTreeMap<K, Vec<f64>> = BTreeMap::new();
    for p in points {
        by_key.entry(key(p)).or_default().push(p.ratio);
    }
    by_key
        .into_iter()
        .filter_map(|(k, ratios)| {
            Some(Group {
                label: label(&k),
                summary: RatioSummary::of(&ratios)?,
            })
        })
        .collect()
}

pub fn by_model(points: &[RatioPoint]) -> Vec<Group> {
    groups_by(points, |p| p.model, |m| m.name().to_string())
}

pub fn by_batch(points: &[RatioPoint]) -> Vec<Group> {
    groups_by(points, |p| p.b, |b| b.to_string())
}

/// Labels are "N<4096" and "N>=4096".
pub fn by_n_split(points: &[RatioPoint]) -> Vec<Group> {
    groups_by(
        points,
        |p| p.n >= PRODUCTION_N_SPLIT,
        |large| {
            if *large {
                format!("N>={PRODUCTION_N_SPLIT}")
            } else {
                format!("N<{PRODUCTION_N_SPLIT}")
            }
        },
    )
}

/// Everything the report says about one comparison arm against the base.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub base_arm: String,
    pub other_arm: String,
    /// `None` when no case is usable on both sides.
    pub summary: Option<RatioSummary>,
    pub buckets: [usize; 8],
    pub by_model: Vec<Group>,
    pub by_batch: Vec<Group>,
    pub by_n_split: Vec<Group>,
    pub only_in_base: usize,
    pub only_in_other: usize,
    pub not_comparable: usize,
    /// Of `not_comparable`: usable on both sides but timed differently.
    #[serde(default)]
    pub method_differs: usize,
    /// The timing method(s) of the paired cases (one, in a run timed one way).
    #[serde(default)]
    pub methods: Vec<TimingMethod>,
    /// Per-case points (for plots); not repeated in summary.json.
    #[serde(skip)]
    pub points: Vec<RatioPoint>,
}

/// Distinct methods of `points`, in first-appearance order.
pub fn methods_of(points: &[RatioPoint]) -> Vec<TimingMethod> {
    let mut methods = Vec::new();
    for m in points.iter().filter_map(|p| p.method) {
        if !methods.contains(&m) {
            methods.push(m);
        }
    }
    methods
}

/// Compare `other_arm` against `base_arm` within one run.
pub fn compare(cases: &[CaseTime], base_arm: &str, other_arm: &str) -> Comparison {
    let pairing = pair(cases, base_arm, cases, other_arm);
    let ratios = pairing.ratios();
    Comparison {
        base_arm: base_arm.to_string(),
        other_arm: other_arm.to_string(),
        summary: RatioSummary::of(&ratios),
        buckets: bucket_counts(&ratios),
        by_model: by_model(&pairing.points),
        by_batch: by_batch(&pairing.points),
        by_n_split: by_n_split(&pairing.points),
        only_in_base: pairing.only_in_base,
        only_in_other: pairing.only_in_other,
        not_comparable: pairing.not_comparable,
        method_differs: pairing.method_differs,
        methods: methods_of(&pairing.points),
        points: pairing.points,
    }
}

/// Exactness verdict counts of one arm; always reported, whatever the timing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExactCounts {
    pub arm: String,
    pub total: usize,
    pub exact: usize,
    pub wrong: usize,
    pub unwritten: usize,
    pub failed: usize,
    pub unsupported: usize,
}

impl ExactCounts {
    pub fn count(&self, class: ExactClass) -> usize {
        match class {
            ExactClass::Exact => self.exact,
            ExactClass::Wrong => self.wrong,
            ExactClass::Unwritten => self.unwritten,
            ExactClass::Failed => self.failed,
            ExactClass::Unsupported => self.unsupported,
        }
    }
}

/// Exactness counts for each arm, in `arms` order.
pub fn exact_counts(cases: &[CaseTime], arms: &[String]) -> Vec<ExactCounts> {
    arms.iter()
        .map(|arm| {
            let mut counts = ExactCounts {
                arm: arm.clone(),
                total: 0,
                exact: 0,
                wrong: 0,
                unwritten: 0,
                failed: 0,
                unsupported: 0,
            };
            for c in cases.iter().filter(|c| &c.arm == arm) {
                counts.total += 1;
                match c.exact {
                    ExactClass::Exact => counts.exact += 1,
                    ExactClass::Wrong => counts.wrong += 1,
                    ExactClass::Unwritten => counts.unwritten += 1,
                    ExactClass::Failed => counts.failed += 1,
                    ExactClass::Unsupported => counts.unsupported += 1,
                }
            }
            counts
        })
        .collect()
}

/// Mean roofline fraction and read bandwidth of one arm over its exact, timed
/// cases, overall and per model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RooflineStats {
    pub arm: String,
    pub cases: usize,
    pub mean_fraction: Option<f64>,
    /// Mean achieved bandwidth in bytes/s.
    pub mean_bandwidth: Option<f64>,
    pub by_model: Vec<(Model, f64)>,
}

pub fn roofline_by_arm(cases: &[CaseTime], arms: &[String], bandwidth: f64) -> Vec<RooflineStats> {
    arms.iter()
        .map(|arm| {
            let mut all = Vec::new();
            let mut per_model: BTreeMap<Model, Vec<f64>> = BTreeMap::new();
            for c in cases.iter().filter(|c| &c.arm == arm) {
                if let Some(f) = c.roofline_fraction(bandwidth) {
                    all.push(f);
                    per_model.entry(c.model).or_default().push(f);
                }
            }
            let mean_fraction = super::quantile::mean(&all);
            RooflineStats {
                arm: arm.clone(),
                cases: all.len(),
                mean_fraction,
                mean_bandwidth: mean_fraction.map(|f| f * bandwidth),
                by_model: per_model
                    .into_iter()
                    .filter_map(|(m, v)| Some((m, super::quantile::mean(&v)?)))
                    .collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::sample::ColdStats;

    fn case_time(
        case: &str,
        arm: &str,
        model: Model,
        n: u32,
        b: u32,
        us: f64,
        exact: ExactClass,
    ) -> CaseTime {
        CaseTime {
            case: case.to_string(),
            cell: case.split('@').next().unwrap_or(case).to_string(),
            arm: arm.to_string(),
            model,
            isl: "64k".to_string(),
            layer: 0,
            n,
            k: model.k() as u32,
            b,
            variant: None,
            exact,
            cold: ColdStats::of(&[us]),
            bytes: 4 * b as u64 * (n as u64 + model.k() as u64),
            method: None,
        }
    }

    #[test]
    fn buckets_are_left_closed() {
        assert_eq!(bucket_index(0.69), 0);
        assert_eq!(bucket_index(0.7), 1);
        assert_eq!(bucket_index(0.9999), 2);
        assert_eq!(bucket_index(1.0), 3);
        assert_eq!(bucket_index(2.9999), 6);
        assert_eq!(bucket_index(3.0), 7);
        assert_eq!(bucket_index(50.0), 7);
        assert_eq!(
            bucket_counts(&[0.7, 1.0, 3.0, 3.0, f64::NAN]),
            [0, 1, 0, 1, 0, 0, 0, 2]
        );
    }

    #[test]
    fn summary_of_known_ratios() {
        let s = RatioSummary::of(&[1.0, 2.0, 4.0, 0.5, 1.0]).unwrap();
        assert_eq!(s.count, 5);
        // ln: 0 + ln2 + 2ln2 - ln2 + 0 = 2 ln2 over 5 -> 2^(2/5).
        assert!((s.geomean - 2f64.powf(0.4)).abs() < 1e-12);
        assert_eq!(s.min, 0.5);
        assert_eq!(s.max, 4.0);
        assert_eq!(s.p50, 1.0);
        // sorted 0.5 1 1 2 4: p5 h = 0.2 -> 0.5 + 0.2·0.5; p95 h = 3.8 -> 2 + 0.8·2.
        assert!((s.p5 - 0.6).abs() < 1e-12);
        assert!((s.p95 - 3.6).abs() < 1e-12);
        // Ties at exactly 1.0 are not wins: only 2.0 and 4.0 count.
        assert_eq!(s.base_faster, 2);
        assert!((s.base_faster_pct - 40.0).abs() < 1e-12);
        assert_eq!(RatioSummary::of(&[]), None);
    }

    #[test]
    fn wrong_records_are_counted_but_not_timed() {
        let cases = vec![
            case_time(
                "c1@b1",
                "ss",
                Model::Flash,
                8192,
                1,
                10.0,
                ExactClass::Exact,
            ),
            case_time(
                "c1@b1",
                "radix",
                Model::Flash,
                8192,
                1,
                20.0,
                ExactClass::Exact,
            ),
            case_time(
                "c2@b1",
                "ss",
                Model::Flash,
                8192,
                1,
                10.0,
                ExactClass::Exact,
            ),
            case_time(
                "c2@b1",
                "radix",
                Model::Flash,
                8192,
                1,
                1.0,
                ExactClass::Wrong,
            ),
            case_time(
                "c3@b1",
                "ss",
                Model::Pro,
                2048,
                1,
                10.0,
                ExactClass::Unsupported,
            ),
            case_time(
                "c3@b1",
                "radix",
                Model::Pro,
                2048,
                1,
                30.0,
                ExactClass::Exact,
            ),
        ];
        let cmp = compare(&cases, "ss", "radix");
        let s = cmp.summary.unwrap();
        assert_eq!(s.count, 1);
        assert_eq!(s.geomean, 2.0);
        assert_eq!(cmp.not_comparable, 2);
        let counts = exact_counts(&cases, &["ss".to_string(), "radix".to_string()]);
        assert_eq!(
            (counts[0].exact, counts[0].unsupported, counts[0].total),
            (2, 1, 3)
        );
        assert_eq!((counts[1].exact, counts[1].wrong), (2, 1));
    }

    #[test]
    fn pairing_with_missing_cases() {
        let cases = vec![
            case_time("a@b1", "ss", Model::V32, 1000, 1, 5.0, ExactClass::Exact),
            case_time("b@b1", "ss", Model::V32, 1000, 1, 5.0, ExactClass::Exact),
            case_time(
                "b@b1",
                "radix",
                Model::V32,
                1000,
                1,
                10.0,
                ExactClass::Exact,
            ),
            case_time(
                "c@b1",
                "radix",
                Model::V32,
                1000,
                1,
                10.0,
                ExactClass::Exact,
            ),
            case_time(
                "d@b1",
                "radix",
                Model::V32,
                1000,
                1,
                10.0,
                ExactClass::Exact,
            ),
        ];
        let p = pair(&cases, "ss", &cases, "radix");
        assert_eq!(p.points.len(), 1);
        assert_eq!(p.points[0].case, "b@b1");
        assert_eq!(p.only_in_base, 1);
        assert_eq!(p.only_in_other, 2);
        assert_eq!(p.not_comparable, 0);
    }

    #[test]
    fn ratios_pair_only_records_timed_the_same_way() {
        let timed = |case: &str, arm: &str, us: f64, method: TimingMethod| CaseTime {
            method: Some(method),
            ..case_time(case, arm, Model::V32, 1000, 1, us, ExactClass::Exact)
        };
        let cases = vec![
            timed("a@b1", "ss", 5.0, TimingMethod::Cupti),
            timed("a@b1", "torch", 20.0, TimingMethod::GraphReplay),
            timed("b@b1", "ss", 5.0, TimingMethod::Cupti),
            timed("b@b1", "torch", 15.0, TimingMethod::Cupti),
        ];
        let cmp = compare(&cases, "ss", "torch");
        assert_eq!(cmp.summary.unwrap().count, 1);
        assert!((cmp.summary.unwrap().geomean - 3.0).abs() < 1e-12);
        assert_eq!((cmp.not_comparable, cmp.method_differs), (1, 1));
        assert_eq!(cmp.methods, [TimingMethod::Cupti]);
        assert_eq!(cmp.points[0].method, Some(TimingMethod::Cupti));
    }

    #[test]
    fn duplicate_case_keeps_the_last_record() {
        let cases = vec![
            case_time("a@b1", "ss", Model::V32, 1000, 1, 5.0, ExactClass::Exact),
            case_time(
                "a@b1",
                "radix",
                Model::V32,
                1000,
                1,
                50.0,
                ExactClass::Exact,
            ),
            case_time(
                "a@b1",
                "radix",
                Model::V32,
                1000,
                1,
                10.0,
                ExactClass::Exact,
            ),
        ];
        let p = pair(&cases, "ss", &cases, "radix");
        assert_eq!(p.points.len(), 1);
        assert_eq!(p.points[0].ratio, 2.0);
    }

    #[test]
    fn breakdowns_split_by_model_batch_and_n() {
        let cases = vec![
            case_time("a@b1", "ss", Model::Flash, 4095, 1, 1.0, ExactClass::Exact),
            case_time(
                "a@b1",
                "radix",
                Model::Flash,
                4095,
                1,
                2.0,
                ExactClass::Exact,
            ),
            case_time("b@b8", "ss", Model::Pro, 4096, 8, 1.0, ExactClass::Exact),
            case_time("b@b8", "radix", Model::Pro, 4096, 8, 8.0, ExactClass::Exact),
        ];
        let cmp = compare(&cases, "ss", "radix");
        let labels: Vec<(&str, f64)> = cmp
            .by_n_split
            .iter()
            .map(|g| (g.label.as_str(), (g.summary.geomean * 1e9).round() / 1e9))
            .collect();
        assert_eq!(labels, vec![("N<4096", 2.0), ("N>=4096", 8.0)]);
        let models: Vec<&str> = cmp.by_model.iter().map(|g| g.label.as_str()).collect();
        assert_eq!(models, vec!["flash", "pro"]);
        let batches: Vec<&str> = cmp.by_batch.iter().map(|g| g.label.as_str()).collect();
        assert_eq!(batches, vec!["1", "8"]);
    }

    #[test]
    fn roofline_means_per_arm_and_model() {
        // bytes = 4·1·(4096+512) = 18432; at 1 µs -> 1.8432e10 B/s.
        let cases = vec![
            case_time("a@b1", "ss", Model::Flash, 4096, 1, 1.0, ExactClass::Exact),
            case_time("b@b1", "ss", Model::Flash, 4096, 1, 2.0, ExactClass::Wrong),
        ];
        let r = roofline_by_arm(&cases, &["ss".to_string()], 1.8432e10);
        assert_eq!(r[0].cases, 1);
        assert!((r[0].mean_fraction.unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(r[0].by_model.len(), 1);
    }
}
