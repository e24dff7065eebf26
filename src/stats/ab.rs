//! Same-run A/B of knob variants: for every case, the speed of each variant
//! of an arm relative to the base variant of the same arm (base time over
//! variant time: above 1 means the variant is faster), summarised by
//! geomean, min and max, overall and per group of record fields.

use std::collections::BTreeMap;

use super::quantile::geomean;
use crate::record::CaseRecord;

/// One line of the table: a variant (or a group of its cases) against base.
#[derive(Debug, Clone, PartialEq)]
pub struct AbLine {
    pub arm: String,
    pub variant: String,
    /// Group label (`all`, or `b=256 k=2048` ...).
    pub group: String,
    pub cases: usize,
    pub geomean: f64,
    pub min: f64,
    pub max: f64,
}

/// The A/B of one experiment run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AbTable {
    pub lines: Vec<AbLine>,
    /// `case arm@variant status` of every record that was not exact.
    pub inexact: Vec<String>,
}

/// The record fields an A/B table can be split by.
pub const FIELDS: [&str; 6] = ["b", "k", "n", "model", "cell", "variant"];

/// The value of record field `field` (one of [`FIELDS`]).
pub fn field(r: &CaseRecord, field: &str) -> Option<String> {
    Some(match field {
        "b" => r.b.to_string(),
        "k" => r.k.to_string(),
        "n" => r.n.to_string(),
        "model" => format!("{:?}", r.model).to_lowercase(),
        "cell" => r.cell.clone(),
        "variant" => r.variant.clone().unwrap_or_default(),
        _ => return None,
    })
}

/// Case -> (mean cold µs, its record), for one arm variant.
type Timed<'a> = BTreeMap<String, (f64, &'a CaseRecord)>;

/// The A/B table of `records` for arms spelled `ARM@VARIANT`: each variant
/// of each arm against `ARM@base`, on the cases both ran exactly; split by
/// `by` record fields as well when given.
pub fn ab_table(records: &[CaseRecord], base: &str, by: &[String]) -> AbTable {
    let mut table = AbTable::default();
    // (arm, variant) -> case -> (mean cold µs, record)
    let mut times: BTreeMap<(String, String), Timed> = BTreeMap::new();
    for r in records {
        let Some((arm, variant)) = r.arm.split_once('@') else {
            continue;
        };
        if r.exact.label() == "unsupported" {
            continue;
        }
        if !r.timed_and_exact() {
            table
                .inexact
                .push(format!("{} {} {}", r.case, r.arm, r.exact.label()));
            continue;
        }
        if let Some(t) = r.mean_cold_us() {
            times
                .entry((arm.to_string(), variant.to_string()))
                .or_default()
                .insert(r.case.clone(), (t, r));
        }
    }
    for ((arm, variant), cases) in &times {
        if variant == base {
            continue;
        }
        let Some(base_cases) = times.get(&(arm.clone(), base.to_string())) else {
            continue;
        };
        let mut groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for (case, (t, r)) in cases {
            let Some((tb, _)) = base_cases.get(case) else {
                continue;
            };
            let speed = tb / t;
            groups.entry("all".into()).or_default().push(speed);
            if !by.is_empty() {
                let label: Vec<String> = by
                    .iter()
                    .map(|f| format!("{f}={}", field(r, f).unwrap_or_else(|| "?".into())))
                    .collect();
                groups.entry(label.join(" ")).or_default().push(speed);
            }
        }
        for (group, speeds) in groups {
            let Some(g) = geomean(&speeds) else { continue };
            table.lines.push(AbLine {
                arm: arm.clone(),
                variant: variant.clone(),
                group,
                cases: speeds.len(),
                geomean: g,
                min: speeds.iter().copied().fold(f64::INFINITY, f64::min),
                max: speeds.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            });
        }
    }
    table
}

impl std::fmt::Display for AbTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "| arm | variant | cases | speed vs base (geomean) | min | max |\n|---|---|---:|---:|---:|---:|"
        )?;
        for l in &self.lines {
            let variant = if l.group == "all" {
                l.variant.clone()
            } else {
                format!("{} ({})", l.variant, l.group)
            };
            writeln!(
                f,
                "| {} | {variant} | {} | {:.3} | {:.3} | {:.3} |",
                l.arm, l.cases, l.geomean, l.min, l.max
            )?;
        }
        if !self.inexact.is_empty() {
            writeln!(f, "\nNot exact (left out of the table):")?;
            for line in &self.inexact {
                writeln!(f, "- {line}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::results::tests::record;

    fn rec(case: &str, arm: &str, us: f64, b: u32) -> CaseRecord {
        let mut r = record(case, arm);
        r.cold_us = vec![us, us];
        r.b = b;
        r
    }

    #[test]
    fn variants_compare_with_the_base_on_common_exact_cases() {
        let records = vec![
            rec("c1", "ss-main@base", 10.0, 1),
            rec("c1", "ss-main@fast", 5.0, 1),
            rec("c2", "ss-main@base", 10.0, 256),
            rec("c2", "ss-main@fast", 8.0, 256),
            rec("c3", "ss-main@fast", 1.0, 256), // no base: left out
            rec("c1", "radix", 30.0, 1),         // not a variant
        ];
        let t = ab_table(&records, "base", &["b".to_string()]);
        let all = t.lines.iter().find(|l| l.group == "all").unwrap();
        assert_eq!(
            (all.arm.as_str(), all.variant.as_str(), all.cases),
            ("ss-main", "fast", 2)
        );
        assert!((all.geomean - (2.0f64 * 1.25).sqrt()).abs() < 1e-12);
        assert_eq!((all.min, all.max), (1.25, 2.0));
        let b1 = t.lines.iter().find(|l| l.group == "b=1").unwrap();
        assert_eq!((b1.cases, b1.geomean), (1, 2.0));
        assert!(t.to_string().contains("| ss-main | fast | 2 |"));
    }

    #[test]
    fn inexact_records_are_listed_not_compared() {
        let mut wrong = rec("c1", "ss-main@fast", 1.0, 1);
        wrong.exact = crate::exact::ExactStatus::Wrong {
            row: 0,
            reason: "x".into(),
        };
        let records = vec![rec("c1", "ss-main@base", 10.0, 1), wrong];
        let t = ab_table(&records, "base", &[]);
        assert!(t.lines.is_empty());
        assert_eq!(t.inexact.len(), 1);
        assert!(t.to_string().contains("Not exact"));
    }
}
