//! The headline: the base arm (`ss`) against the **best baseline** of each
//! case, and per-tier tables of the baselines that choose a tier per shape.
//!
//! Per case, the best baseline is the fastest of the baseline arms (ours and
//! the library peers) that is exact on the case and was timed by the same
//! method as the base arm's record; the base arm's own family (`ss`,
//! `ss-*`), A/A twins (`ARM#2`) and CPU engines are not baselines. The ratio
//! is time(best baseline) / time(base), above 1 when the base is faster.
//! Cases where no baseline qualifies are counted, not guessed.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::capture::Model;
use crate::record::TimingMethod;

use super::quantile::geomean;
use super::ratios::{pair, RatioSummary};
use super::sample::{arms_in_order, CaseTime};

/// Batch-size bands of the "who wins where" table (inclusive bounds).
pub const B_BANDS: [(u32, u32, &str); 6] = [
    (1, 1, "B=1"),
    (2, 4, "B=2-4"),
    (8, 16, "B=8-16"),
    (32, 64, "B=32-64"),
    (128, 256, "B=128-256"),
    (512, u32::MAX, "B>=512"),
];

/// Row-length bands (left-closed, right-open).
pub const N_BANDS: [(u32, u32, &str); 5] = [
    (0, 4096, "N<4K"),
    (4096, 16384, "N=4K-16K"),
    (16384, 65536, "N=16K-64K"),
    (65536, 131072, "N=64K-128K"),
    (131072, u32::MAX, "N>=128K"),
];

fn band(value: u32, bands: &[(u32, u32, &'static str)], inclusive: bool) -> &'static str {
    bands
        .iter()
        .find(|(lo, hi, _)| value >= *lo && if inclusive { value <= *hi } else { value < *hi })
        .map(|(_, _, label)| *label)
        .unwrap_or("other")
}

/// The batch band of `b`.
pub fn b_band(b: u32) -> &'static str {
    band(b, &B_BANDS, true)
}

/// The row-length band of `n`.
pub fn n_band(n: u32) -> &'static str {
    band(n, &N_BANDS, false)
}

/// Whether `arm` is a baseline of `base`: not the base's own family (the
/// base itself or `base-*`), not an A/A twin, not a CPU engine (unless the
/// base is one).
pub fn is_baseline_of(arm: &str, base: &str) -> bool {
    let family = arm == base || arm.starts_with(&format!("{base}-"));
    let twin = arm.contains('#');
    let cpu = arm.starts_with("cpu-") && !base.starts_with("cpu-");
    !(family || twin || cpu)
}

/// One case of the headline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BestPoint {
    pub case: String,
    pub model: Model,
    pub n: u32,
    pub b: u32,
    pub base_us: f64,
    pub best_arm: String,
    pub best_us: f64,
    /// best_us / base_us.
    pub ratio: f64,
    pub method: Option<TimingMethod>,
    /// Every candidate arm was exact and timed the same way on this case.
    #[serde(default)]
    pub complete: bool,
}

/// Cases one baseline was the best of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmWins {
    pub arm: String,
    pub cases: usize,
    /// Geomean of best/base over those cases.
    pub geomean: f64,
}

/// One (B band, N band) cell of the "who wins where" table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BandCell {
    pub b_band: String,
    pub n_band: String,
    pub cases: usize,
    /// Geomean of best/base in the cell.
    pub geomean: f64,
    /// The baseline that is best in most of the cell's cases.
    pub winner: String,
    pub winner_cases: usize,
    /// Cases where the base is strictly faster than the best baseline.
    pub base_faster: usize,
}

/// The headline section of a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BestBaseline {
    pub base_arm: String,
    /// Arms that competed for best baseline, in run order.
    pub candidates: Vec<String>,
    /// Arms of the run left out (the base's family, A/A twins, CPU engines).
    pub excluded: Vec<String>,
    /// The timing method(s) of the compared cases.
    pub methods: Vec<TimingMethod>,
    /// Distribution of best/base over the cases.
    pub summary: Option<RatioSummary>,
    /// The case where the best baseline comes closest to (or beats) the base.
    pub closest: Option<BestPoint>,
    /// Per baseline, how many cases it was the best of, most first.
    pub wins: Vec<ArmWins>,
    /// Band cells in (B band, N band) order; empty bands are absent.
    pub bands: Vec<BandCell>,
    /// Usable base cases that no baseline timed the same way covers.
    pub no_baseline: usize,
    /// The same distribution over the cases where every candidate arm is
    /// exact and timed the same way as the base (a run whose peer stopped
    /// early, or an arm inexact somewhere, leaves cases whose best is taken
    /// over fewer arms); `None` when no case has them all.
    #[serde(default)]
    pub complete: Option<RatioSummary>,
    /// Cases of the headline with at least one candidate arm missing there.
    #[serde(default)]
    pub incomplete: usize,
    #[serde(skip)]
    pub points: Vec<BestPoint>,
}

/// Index the usable (exact, timed) records by (case, arm); a repeated
/// (case, arm) keeps its last record, as the pairwise comparisons do.
fn usable_by_case(cases: &[CaseTime]) -> HashMap<&str, HashMap<&str, &CaseTime>> {
    let mut by_case: HashMap<&str, HashMap<&str, &CaseTime>> = HashMap::new();
    for c in cases {
        by_case
            .entry(c.case.as_str())
            .or_default()
            .insert(c.arm.as_str(), c);
    }
    by_case
}

/// The base arm against the best baseline of every case (see module docs).
/// `None` when the run has no baseline of `base_arm` at all.
pub fn best_baseline(
    cases: &[CaseTime],
    base_arm: &str,
    only: Option<&[String]>,
) -> Option<BestBaseline> {
    // `only` (the report's --vs): the arms allowed to compete; the rest of
    // the run is ignored here.
    let arms: Vec<String> = arms_in_order(cases)
        .into_iter()
        .filter(|a| a == base_arm || only.is_none_or(|o| o.contains(a)))
        .collect();
    let (candidates, excluded): (Vec<String>, Vec<String>) = arms
        .iter()
        .filter(|a| a.as_str() != base_arm)
        .cloned()
        .partition(|a| is_baseline_of(a, base_arm));
    if candidates.is_empty() || !arms.iter().any(|a| a == base_arm) {
        return None;
    }
    let by_case = usable_by_case(cases);
    let mut points = Vec::new();
    let mut no_baseline = 0;
    let mut seen = std::collections::HashSet::new();
    for c in cases.iter().filter(|c| c.arm == base_arm) {
        if !seen.insert(c.case.as_str()) {
            continue;
        }
        let Some(records) = by_case.get(c.case.as_str()) else {
            continue;
        };
        let base = records[base_arm];
        let Some(base_us) = base.usable_mean_us().filter(|t| *t > 0.0) else {
            continue;
        };
        let timed: Vec<(&CaseTime, f64)> = candidates
            .iter()
            .filter_map(|arm| records.get(arm.as_str()))
            .filter(|r| r.method == base.method)
            .filter_map(|r| Some((*r, r.usable_mean_us().filter(|t| *t > 0.0)?)))
            .collect();
        let complete = timed.len() == candidates.len();
        let best = timed.into_iter().min_by(|a, b| a.1.total_cmp(&b.1));
        match best {
            Some((r, best_us)) => points.push(BestPoint {
                case: base.case.clone(),
                model: base.model,
                n: base.n,
                b: base.b,
                base_us,
                best_arm: r.arm.clone(),
                best_us,
                ratio: best_us / base_us,
                method: base.method,
                complete,
            }),
            None => no_baseline += 1,
        }
    }
    let ratios: Vec<f64> = points.iter().map(|p| p.ratio).collect();
    let complete_ratios: Vec<f64> = points
        .iter()
        .filter(|p| p.complete)
        .map(|p| p.ratio)
        .collect();
    let incomplete = points.len() - complete_ratios.len();
    let mut methods = Vec::new();
    for m in points.iter().filter_map(|p| p.method) {
        if !methods.contains(&m) {
            methods.push(m);
        }
    }
    let closest = points
        .iter()
        .min_by(|a, b| a.ratio.total_cmp(&b.ratio))
        .cloned();
    Some(BestBaseline {
        base_arm: base_arm.to_string(),
        candidates,
        excluded,
        methods,
        summary: RatioSummary::of(&ratios),
        closest,
        wins: wins(&points),
        bands: bands(&points),
        no_baseline,
        complete: RatioSummary::of(&complete_ratios),
        incomplete,
        points,
    })
}

fn wins(points: &[BestPoint]) -> Vec<ArmWins> {
    let mut by_arm: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for p in points {
        by_arm.entry(p.best_arm.as_str()).or_default().push(p.ratio);
    }
    let mut wins: Vec<ArmWins> = by_arm
        .into_iter()
        .filter_map(|(arm, ratios)| {
            Some(ArmWins {
                arm: arm.to_string(),
                cases: ratios.len(),
                geomean: geomean(&ratios)?,
            })
        })
        .collect();
    wins.sort_by(|a, b| b.cases.cmp(&a.cases).then(a.arm.cmp(&b.arm)));
    wins
}

fn bands(points: &[BestPoint]) -> Vec<BandCell> {
    let order = |label: &str, bands: &[(u32, u32, &str)]| {
        bands
            .iter()
            .position(|(_, _, l)| *l == label)
            .unwrap_or(usize::MAX)
    };
    let mut cells: BTreeMap<(usize, usize), Vec<&BestPoint>> = BTreeMap::new();
    for p in points {
        let key = (order(b_band(p.b), &B_BANDS), order(n_band(p.n), &N_BANDS));
        cells.entry(key).or_default().push(p);
    }
    cells
        .into_values()
        .filter_map(|cell| {
            let first = cell[0];
            let ratios: Vec<f64> = cell.iter().map(|p| p.ratio).collect();
            let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
            for p in &cell {
                *counts.entry(p.best_arm.as_str()).or_default() += 1;
            }
            let (winner, winner_cases) = counts
                .iter()
                .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
                .map(|(a, n)| (a.to_string(), *n))?;
            Some(BandCell {
                b_band: b_band(first.b).to_string(),
                n_band: n_band(first.n).to_string(),
                cases: cell.len(),
                geomean: geomean(&ratios)?,
                winner,
                winner_cases,
                base_faster: ratios.iter().filter(|r| **r > 1.0).count(),
            })
        })
        .collect()
}

/// The tier word of a variant: what comes before its first space or
/// parenthesis (`"split (4 CTAs/row, grid 64)"` → `split`).
pub fn tier_of(variant: &str) -> &str {
    let end = variant
        .find(|c: char| c.is_whitespace() || c == '(')
        .unwrap_or(variant.len());
    &variant[..end]
}

/// One tier of one arm against the base.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TierRow {
    pub tier: String,
    /// Records of the arm in this tier (usable or not).
    pub records: usize,
    /// time(arm) / time(base) over the tier's paired cases.
    pub summary: Option<RatioSummary>,
}

/// An arm's records split by the tier its variant names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TierTable {
    pub arm: String,
    pub base_arm: String,
    pub rows: Vec<TierRow>,
}

/// Per-tier tables against `base_arm`: for `radix` whenever the run has it,
/// and for every other baseline whose records name two tiers or more.
pub fn tier_tables(cases: &[CaseTime], base_arm: &str) -> Vec<TierTable> {
    arms_in_order(cases)
        .into_iter()
        .filter(|arm| is_baseline_of(arm, base_arm))
        .filter_map(|arm| {
            let mut tier_of_case: HashMap<&str, &str> = HashMap::new();
            let mut records: BTreeMap<&str, usize> = BTreeMap::new();
            for c in cases.iter().filter(|c| c.arm == arm) {
                let tier = c.variant.as_deref().map(tier_of).unwrap_or("(none)");
                tier_of_case.insert(c.case.as_str(), tier);
                *records.entry(tier).or_default() += 1;
            }
            if records.len() < 2 && arm != "radix" {
                return None;
            }
            let pairing = pair(cases, base_arm, cases, &arm);
            let mut ratios: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
            for p in &pairing.points {
                if let Some(tier) = tier_of_case.get(p.case.as_str()) {
                    ratios.entry(tier).or_default().push(p.ratio);
                }
            }
            let rows = records
                .iter()
                .map(|(tier, n)| TierRow {
                    tier: tier.to_string(),
                    records: *n,
                    summary: ratios.get(tier).and_then(|r| RatioSummary::of(r)),
                })
                .collect();
            Some(TierTable {
                arm,
                base_arm: base_arm.to_string(),
                rows,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::sample::{ColdStats, ExactClass};

    fn rec(case: &str, arm: &str, b: u32, n: u32, us: f64) -> CaseTime {
        CaseTime {
            case: case.to_string(),
            cell: case.split('@').next().unwrap().to_string(),
            arm: arm.to_string(),
            model: Model::Flash,
            isl: "64k".into(),
            layer: 0,
            n,
            k: 512,
            b,
            variant: None,
            exact: ExactClass::Exact,
            cold: ColdStats::of(&[us]),
            bytes: 4 * b as u64 * (n as u64 + 512),
            method: Some(TimingMethod::Cupti),
        }
    }

    #[test]
    fn families_twins_and_cpu_engines_are_not_baselines() {
        for arm in [
            "radix",
            "radix-mcta",
            "gvr1",
            "torch",
            "fi-auto",
            "sglang-v2",
        ] {
            assert!(is_baseline_of(arm, "ss"), "{arm}");
        }
        for arm in ["ss", "ss-main", "ss-varlen", "radix#2", "cpu-ref"] {
            assert!(!is_baseline_of(arm, "ss"), "{arm}");
        }
        assert!(is_baseline_of("cpu-ref", "cpu-ss"));
    }

    #[test]
    fn bands_cover_the_grid() {
        assert_eq!(b_band(1), "B=1");
        assert_eq!(b_band(4), "B=2-4");
        assert_eq!(b_band(1024), "B>=512");
        assert_eq!(n_band(4095), "N<4K");
        assert_eq!(n_band(4096), "N=4K-16K");
        assert_eq!(n_band(262_147), "N>=128K");
    }

    #[test]
    fn the_fastest_exact_same_method_baseline_wins_each_case() {
        let mut cases = vec![
            rec("a@b1", "ss", 1, 8000, 2.0),
            rec("a@b1", "radix", 1, 8000, 8.0),
            rec("a@b1", "fi-cub", 1, 8000, 5.0),
            rec("a@b1", "ss-main", 1, 8000, 1.0), // the base's family: never a baseline
            rec("a@b1", "radix#2", 1, 8000, 1.5), // a twin: never a baseline
            rec("b@b512", "ss", 512, 200_000, 10.0),
            rec("b@b512", "radix", 512, 200_000, 30.0),
            rec("b@b512", "fi-cub", 512, 200_000, 9.0),
            rec("c@b1", "ss", 1, 8000, 2.0),
        ];
        // An inexact fast baseline and one timed another way do not count.
        let mut wrong = rec("c@b1", "fi-cub", 1, 8000, 0.1);
        wrong.exact = ExactClass::Wrong;
        let mut graphed = rec("c@b1", "radix", 1, 8000, 0.2);
        graphed.method = Some(TimingMethod::GraphReplay);
        cases.push(wrong);
        cases.push(graphed);
        let best = best_baseline(&cases, "ss", None).unwrap();
        assert_eq!(best.candidates, ["radix", "fi-cub"]);
        assert_eq!(best.excluded, ["ss-main", "radix#2"]);
        assert_eq!(best.no_baseline, 1);
        assert_eq!(best.points.len(), 2);
        assert_eq!(best.points[0].best_arm, "fi-cub");
        assert!((best.points[0].ratio - 2.5).abs() < 1e-12);
        let s = best.summary.unwrap();
        assert_eq!((s.count, s.base_faster), (2, 1));
        let closest = best.closest.unwrap();
        assert_eq!(
            (closest.case.as_str(), closest.best_arm.as_str()),
            ("b@b512", "fi-cub")
        );
        assert!((closest.ratio - 0.9).abs() < 1e-12);
        assert_eq!(best.wins.len(), 1);
        assert_eq!(
            (best.wins[0].arm.as_str(), best.wins[0].cases),
            ("fi-cub", 2)
        );
        assert_eq!(best.methods, [TimingMethod::Cupti]);
        let cells: Vec<(&str, &str, &str)> = best
            .bands
            .iter()
            .map(|c| (c.b_band.as_str(), c.n_band.as_str(), c.winner.as_str()))
            .collect();
        assert_eq!(
            cells,
            [
                ("B=1", "N=4K-16K", "fi-cub"),
                ("B>=512", "N>=128K", "fi-cub")
            ]
        );
        assert!(best_baseline(&cases, "nope", None).is_none());
        // Both headline cases have radix and fi-cub: nothing incomplete.
        assert_eq!(best.incomplete, 0);
        assert_eq!(best.complete.unwrap().count, 2);
    }

    #[test]
    fn cases_a_peer_missed_are_counted_and_left_out_of_the_complete_headline() {
        // The peer stopped before case b: its best is radix alone (1.5x), while
        // the cases every baseline covers give fi-cub's 1.25x.
        let cases = vec![
            rec("a@b1", "ss", 1, 8000, 4.0),
            rec("a@b1", "radix", 1, 8000, 8.0),
            rec("a@b1", "fi-cub", 1, 8000, 5.0),
            rec("b@b1", "ss", 1, 9000, 4.0),
            rec("b@b1", "radix", 1, 9000, 6.0),
        ];
        let best = best_baseline(&cases, "ss", None).unwrap();
        assert_eq!(best.summary.unwrap().count, 2);
        assert_eq!(best.incomplete, 1);
        let complete = best.complete.unwrap();
        assert_eq!(complete.count, 1);
        assert!((complete.geomean - 1.25).abs() < 1e-12);
        assert_eq!(
            best.points.iter().map(|p| p.complete).collect::<Vec<_>>(),
            [true, false]
        );
        // Only radix competing (--vs radix): both cases complete, radix the best.
        let radix = best_baseline(&cases, "ss", Some(&["radix".to_string()])).unwrap();
        assert_eq!(radix.candidates, ["radix"]);
        assert_eq!(radix.incomplete, 0);
        assert!((radix.summary.unwrap().geomean - (2.0f64 * 1.5).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn tiers_group_by_the_first_word_of_the_variant() {
        assert_eq!(tier_of("split (4 CTAs/row, grid 64)"), "split");
        assert_eq!(tier_of("multi-pass(3 launches)"), "multi-pass");
        assert_eq!(tier_of("per-row"), "per-row");
        let with = |mut c: CaseTime, v: &str| {
            c.variant = Some(v.to_string());
            c
        };
        let cases = vec![
            rec("a@b1", "ss", 1, 8000, 2.0),
            with(rec("a@b1", "radix", 1, 8000, 8.0), "per-row (grid 1)"),
            rec("b@b1", "ss", 1, 200_000, 4.0),
            with(
                rec("b@b1", "radix", 1, 200_000, 4.0),
                "multi-pass (3 launches)",
            ),
            rec("c@b1", "ss", 1, 200_000, 4.0),
            with(
                rec("c@b1", "radix", 1, 200_000, 16.0),
                "multi-pass (3 launches)",
            ),
            with(
                rec("a@b1", "torch", 1, 8000, 9.0),
                "torch-2.11 sorted=False",
            ),
        ];
        let tables = tier_tables(&cases, "ss");
        assert_eq!(tables.len(), 1, "torch has one tier: no table");
        let radix = &tables[0];
        assert_eq!(radix.arm, "radix");
        let rows: Vec<(&str, usize, f64)> = radix
            .rows
            .iter()
            .map(|r| (r.tier.as_str(), r.records, r.summary.unwrap().geomean))
            .collect();
        assert_eq!(rows, [("multi-pass", 2, 2.0), ("per-row", 1, 4.0)]);
    }
}
