//! Markdown rendering of the report tables (the layout of SEED.md's
//! performance section) and of the regress verdict. A blank cell means
//! missing or not comparable, never zero.

use std::fmt::Write as _;
use std::path::Path;

use crate::capture::Model;
use crate::stats::ratios::{Comparison, Group, BUCKET_LABELS, PRODUCTION_N_SPLIT};
use crate::stats::regress::ChangeKind;
use crate::stats::{ExactClass, RegressAnalysis};

use super::ReportSummary;
use crate::floor::FloorSection;

/// Segment order of the seed's tables: Flash, Pro, V3.2.
const MODEL_ORDER: [Model; 3] = [Model::Flash, Model::Pro, Model::V32];

/// How many flagged cases the regress table lists.
const WORST_CASES_SHOWN: usize = 20;

/// `9746` -> `9,746`.
pub(crate) fn count(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

fn ratio(x: f64) -> String {
    format!("{x:.2}")
}

fn opt(x: Option<f64>, render: impl Fn(f64) -> String) -> String {
    x.map(render).unwrap_or_default()
}

/// 100 and 0 print without decimals, as in the seed ("100%").
pub(crate) fn percent(p: f64) -> String {
    if p == 100.0 || p == 0.0 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

/// A roofline fraction as a percentage (small kernels sit far below 1%).
fn fraction(f: f64) -> String {
    format!("{:.2}%", f * 100.0)
}

fn group_geomean(groups: &[Group], label: &str) -> String {
    groups
        .iter()
        .find(|g| g.label == label)
        .map(|g| format!("{:.2} ({})", g.summary.geomean, count(g.summary.count)))
        .unwrap_or_default()
}

/// One row per comparison: its geometric mean (cases) per batch size, over
/// every batch size any comparison has.
fn batch_table(out: &mut String, first_column: &str, comparisons: &[Comparison]) {
    let mut batches: Vec<u32> = comparisons
        .iter()
        .flat_map(|c| {
            c.by_batch
                .iter()
                .filter_map(|g| g.label.parse::<u32>().ok())
        })
        .collect();
    batches.sort_unstable();
    batches.dedup();
    let mut columns = vec![first_column.to_string()];
    columns.extend(batches.iter().map(|b| format!("B={b}")));
    table_header(out, &columns);
    for c in comparisons {
        let mut cells = vec![c.other_arm.clone()];
        cells.extend(
            batches
                .iter()
                .map(|b| group_geomean(&c.by_batch, &b.to_string())),
        );
        table_row(out, &cells);
    }
}

pub(crate) fn table_header(out: &mut String, columns: &[String]) {
    let _ = writeln!(out, "| {} |", columns.join(" | "));
    let rule: Vec<&str> = columns
        .iter()
        .enumerate()
        .map(|(i, _)| if i == 0 { "---" } else { "---:" })
        .collect();
    let _ = writeln!(out, "|{}|", rule.join("|"));
}

pub(crate) fn table_row(out: &mut String, cells: &[String]) {
    let _ = writeln!(out, "| {} |", cells.join(" | "));
}

/// `n` or `lo–hi`.
fn span((lo, hi): (usize, usize)) -> String {
    if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}–{hi}")
    }
}

/// The reps this run took: the protocol of its manifest, then what its
/// records hold.
fn reps_lines(out: &mut String, reps: &super::RepsTaken) {
    if let Some(p) = &reps.protocol {
        let _ = writeln!(
            out,
            "Protocol (manifest.json): {} warm-up, {} warm, {} cold reps per case.",
            p.warmup, p.warm_reps, p.cold_reps
        );
    }
    if reps.warm.is_some() || reps.cold.is_some() {
        let _ = writeln!(
            out,
            "Reps recorded per timed case: {} warm, {} cold.",
            reps.warm.map(span).unwrap_or_else(|| "0".into()),
            reps.cold.map(span).unwrap_or_else(|| "0".into())
        );
    }
    if reps.protocol.is_some() || reps.warm.is_some() || reps.cold.is_some() {
        out.push('\n');
    }
}

/// The full `summary.md` (also what `ReportSummary` displays).
pub fn render_summary(s: &ReportSummary) -> String {
    let mut out = String::new();
    let base = &s.base_arm;
    let _ = writeln!(out, "# gvr-bench report: {}\n", s.run.display());
    if !s.environment.is_empty() {
        for (key, value) in &s.environment {
            let _ = writeln!(out, "- {key}: {value}");
        }
        out.push('\n');
    }
    let _ = writeln!(out, "Arms: {}. Base arm: `{base}`.\n", s.arms.join(", "));
    reps_lines(&mut out, &s.reps);
    if !s.files.is_empty() {
        let _ = writeln!(out, "Files written:\n");
        for f in &s.files {
            let _ = writeln!(out, "- {}", f.display());
        }
        out.push('\n');
    }

    super::headline::render_headline(&mut out, s);

    let _ = writeln!(out, "## Performance comparison\n");
    let _ = writeln!(
        out,
        "Ratios are time(comparison arm) / time({base}) over the mean of the cold reps, so a value above 1 \
         means {base} is faster. Only cases exact and timed in both arms, by the same method, enter; \
         the Method column names it.\n"
    );
    let mut columns: Vec<String> = [
        "Comparison arm",
        "Cases",
        "Geometric mean",
        "Min",
        "P5",
        "P95",
        "Max",
    ]
    .iter()
    .map(|c| c.to_string())
    .collect();
    columns.push(format!("{base} faster"));
    columns.push("Not paired".to_string());
    columns.push("Method".to_string());
    table_header(&mut out, &columns);
    for c in &s.comparisons {
        let sm = c.summary;
        let unpaired = c.only_in_base + c.only_in_other + c.not_comparable;
        let methods: Vec<&str> = c.methods.iter().map(|m| m.label()).collect();
        table_row(
            &mut out,
            &[
                c.other_arm.clone(),
                sm.map(|x| count(x.count)).unwrap_or_default(),
                opt(sm.map(|x| x.geomean), |g| format!("{g:.2}x")),
                opt(sm.map(|x| x.min), ratio),
                opt(sm.map(|x| x.p5), ratio),
                opt(sm.map(|x| x.p95), ratio),
                opt(sm.map(|x| x.max), ratio),
                opt(sm.map(|x| x.base_faster_pct), percent),
                count(unpaired),
                methods.join(", "),
            ],
        );
    }
    let _ = writeln!(
        out,
        "\nNot paired = cases missing from one arm, inexact/untimed in either (see exactness below), \
         or timed by different methods ({} such).\n",
        count(s.comparisons.iter().map(|c| c.method_differs).sum())
    );

    let _ = writeln!(out, "### Ratio distribution by case count\n");
    let mut columns = vec!["Compared with".to_string()];
    columns.extend(BUCKET_LABELS.iter().map(|l| l.to_string()));
    table_header(&mut out, &columns);
    for c in &s.comparisons {
        let total = c.summary.map_or(0, |x| x.count);
        let mut cells = vec![format!("{} ({})", c.other_arm, count(total))];
        cells.extend(c.buckets.iter().map(|n| count(*n)));
        table_row(&mut out, &cells);
    }

    let _ = writeln!(out, "\n### Geometric mean per model (cases)\n");
    let mut columns = vec!["Comparison arm".to_string()];
    columns.extend(MODEL_ORDER.iter().map(|m| m.name().to_string()));
    table_header(&mut out, &columns);
    for c in &s.comparisons {
        let mut cells = vec![c.other_arm.clone()];
        cells.extend(
            MODEL_ORDER
                .iter()
                .map(|m| group_geomean(&c.by_model, m.name())),
        );
        table_row(&mut out, &cells);
    }

    let _ = writeln!(out, "\n### Geometric mean per batch size (cases)\n");
    batch_table(&mut out, "Comparison arm", &s.comparisons);

    let _ = writeln!(
        out,
        "\n### Production split at N = {PRODUCTION_N_SPLIT} (geometric mean, cases, {base} faster)\n"
    );
    let small = format!("N<{PRODUCTION_N_SPLIT}");
    let large = format!("N>={PRODUCTION_N_SPLIT}");
    table_header(
        &mut out,
        &[
            "Comparison arm".to_string(),
            format!("N < {PRODUCTION_N_SPLIT}"),
            format!("N ≥ {PRODUCTION_N_SPLIT}"),
        ],
    );
    for c in &s.comparisons {
        let side = |label: &str| {
            c.by_n_split
                .iter()
                .find(|g| g.label == label)
                .map(|g| {
                    format!(
                        "{:.2} ({}, {})",
                        g.summary.geomean,
                        count(g.summary.count),
                        percent(g.summary.base_faster_pct)
                    )
                })
                .unwrap_or_default()
        };
        table_row(&mut out, &[c.other_arm.clone(), side(&small), side(&large)]);
    }

    let _ = writeln!(out, "\n## Exactness (tie-aware, every row of every case)\n");
    let mut columns = vec!["Arm".to_string(), "Cases".to_string()];
    columns.extend(ExactClass::ALL.iter().map(|c| c.label().to_string()));
    table_header(&mut out, &columns);
    for e in &s.exactness {
        let mut cells = vec![e.arm.clone(), count(e.total)];
        cells.extend(ExactClass::ALL.iter().map(|c| count(e.count(*c))));
        table_row(&mut out, &cells);
    }
    if !s.inexact.is_empty() {
        let _ = writeln!(out, "\n### Inexact cases ({})\n", s.inexact.len());
        for line in crate::record::inexact_lines(&s.inexact) {
            let _ = writeln!(out, "- {line}");
        }
    }

    let _ = writeln!(
        out,
        "\n## Roofline (minimum traffic 4·B·(N+K) bytes at {:.3e} B/s; exact, timed cases)\n",
        s.bandwidth
    );
    if !s.bandwidth_source.is_empty() {
        let _ = writeln!(
            out,
            "Read bandwidth {:.3} TB/s: {}.\n",
            s.bandwidth / 1e12,
            s.bandwidth_source
        );
    }
    let mut columns = vec![
        "Arm".to_string(),
        "Cases".to_string(),
        "Mean roofline".to_string(),
    ];
    columns.extend(MODEL_ORDER.iter().map(|m| m.name().to_string()));
    columns.push("Mean read bandwidth (TB/s)".to_string());
    table_header(&mut out, &columns);
    for r in &s.roofline {
        let mut cells = vec![
            r.arm.clone(),
            count(r.cases),
            opt(r.mean_fraction, fraction),
        ];
        cells.extend(MODEL_ORDER.iter().map(|m| {
            r.by_model
                .iter()
                .find(|(model, _)| model == m)
                .map(|(_, f)| fraction(*f))
                .unwrap_or_default()
        }));
        cells.push(opt(r.mean_bandwidth, |b| format!("{:.3}", b / 1e12)));
        table_row(&mut out, &cells);
    }

    if let Some(floor) = &s.floor {
        render_floor(&mut out, floor);
    }

    let _ = writeln!(out, "\n## Timing method\n");
    table_header(
        &mut out,
        &[
            "Arm".to_string(),
            "Method(s)".to_string(),
            "Untimed records".to_string(),
        ],
    );
    for m in &s.timing_methods {
        let methods: Vec<String> = m
            .methods
            .iter()
            .filter_map(|t| {
                serde_json::to_value(t)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
            })
            .collect();
        table_row(
            &mut out,
            &[m.arm.clone(), methods.join(", "), count(m.untimed)],
        );
    }
    if !s.peer_notes.is_empty() {
        out.push('\n');
        for line in &s.peer_notes {
            let _ = writeln!(out, "- {line}");
        }
    }
    out
}

/// The "Latency floor" section (`grid --floor` runs only).
fn render_floor(out: &mut String, f: &FloorSection) {
    let _ = writeln!(out, "\n## Latency floor\n");
    let _ = writeln!(
        out,
        "The floor reads each row once, meets once and writes k indices that wait on the row \
         (kernels/harness/floor.cu): no selection, so no top-K reaches it. Each case's floor is its \
         fastest launch shape, timed in this run on the same inputs. Ratio = time(arm) / floor: \
         how far an arm is from it; for a baseline, the most any kernel of these launch shapes \
         could gain against that baseline.\n"
    );
    let _ = writeln!(
        out,
        "Floors: {} cases ({} failed), mean roofline {}, B = 1 median {}.\n",
        count(f.cases),
        count(f.failed),
        opt(f.roofline.mean_fraction, fraction),
        opt(f.b1_median_us, |us| format!("{us:.2} µs")),
    );
    table_header(
        out,
        &[
            "Arm".to_string(),
            "Cases".to_string(),
            "Geometric mean".to_string(),
            "Min".to_string(),
            "P5".to_string(),
            "P50".to_string(),
            "P95".to_string(),
            "Max".to_string(),
        ],
    );
    for c in &f.vs {
        let sm = c.summary;
        table_row(
            out,
            &[
                c.other_arm.clone(),
                sm.map(|x| count(x.count)).unwrap_or_default(),
                opt(sm.map(|x| x.geomean), |g| format!("{g:.2}x")),
                opt(sm.map(|x| x.min), ratio),
                opt(sm.map(|x| x.p5), ratio),
                opt(sm.map(|x| x.p50), ratio),
                opt(sm.map(|x| x.p95), ratio),
                opt(sm.map(|x| x.max), ratio),
            ],
        );
    }
    let _ = writeln!(out, "\n### Time / floor per batch size (geometric mean)\n");
    batch_table(out, "Arm", &f.vs);
    let shapes: Vec<String> = f
        .best_shapes
        .iter()
        .map(|(label, n)| format!("{label} ({})", count(*n)))
        .collect();
    let _ = writeln!(out, "\nFastest floor shape: {}.", shapes.join(", "));
}

/// Markdown of a regress analysis: per-arm summary, worst cases, verdict.
pub fn render_regress(
    a: &RegressAnalysis,
    baseline: &Path,
    current: &Path,
    noise: Option<&Path>,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Regression check\n");
    let _ = writeln!(out, "- baseline: {}", baseline.display());
    let _ = writeln!(out, "- current: {}", current.display());
    let band_source = match noise {
        Some(p) => format!("A/A P99 from {}", p.display()),
        None => "default".to_string(),
    };
    let _ = writeln!(
        out,
        "- a case regresses when current/baseline > {:.4} ({band_source}) and it is slower by more than {} µs, \
         or when it was exact and is not now",
        a.config.noise_upper, a.config.abs_floor_us
    );
    let _ = writeln!(
        out,
        "- an arm drifts when its geometric mean current/baseline > {}\n",
        a.config.geomean_threshold
    );

    table_header(
        &mut out,
        &[
            "Arm",
            "Compared",
            "Geomean drift",
            "P95",
            "Max",
            "Slower",
            "Lost exactness",
            "Missing now",
            "New now",
            "Verdict",
        ]
        .map(str::to_string),
    );
    for arm in &a.arms {
        let d = arm.drift;
        let geomean_cell = match d {
            Some(d) if arm.geomean_flagged => format!("**{:.4}**", d.geomean),
            Some(d) => format!("{:.4}", d.geomean),
            None => String::new(),
        };
        table_row(
            &mut out,
            &[
                arm.arm.clone(),
                count(arm.compared),
                geomean_cell,
                opt(d.map(|x| x.p95), |v| format!("{v:.4}")),
                opt(d.map(|x| x.max), |v| format!("{v:.4}")),
                count(arm.slower()),
                count(arm.lost_exactness()),
                count(arm.missing_in_current),
                count(arm.new_in_current),
                if arm.regressed() {
                    "REGRESSED".to_string()
                } else {
                    "ok".to_string()
                },
            ],
        );
    }

    let mut worst: Vec<_> = a.arms.iter().flat_map(|arm| arm.changes.iter()).collect();
    // Exactness losses first (always fatal), then the largest slowdowns.
    worst.sort_by(|x, y| {
        (x.kind == ChangeKind::Slower)
            .cmp(&(y.kind == ChangeKind::Slower))
            .then(y.ratio.unwrap_or(0.0).total_cmp(&x.ratio.unwrap_or(0.0)))
    });
    if !worst.is_empty() {
        let _ = writeln!(
            out,
            "\n## Worst cases ({} of {})\n",
            worst.len().min(WORST_CASES_SHOWN),
            worst.len()
        );
        table_header(
            &mut out,
            &[
                "Arm",
                "Case",
                "Baseline µs",
                "Current µs",
                "Ratio",
                "Exact before",
                "Exact now",
                "Why",
            ]
            .map(str::to_string),
        );
        for c in worst.iter().take(WORST_CASES_SHOWN) {
            table_row(
                &mut out,
                &[
                    c.arm.clone(),
                    c.case.clone(),
                    opt(c.baseline_us, |v| format!("{v:.2}")),
                    opt(c.current_us, |v| format!("{v:.2}")),
                    opt(c.ratio, |v| format!("{v:.3}")),
                    c.baseline_exact.label().to_string(),
                    c.current_exact.label().to_string(),
                    match c.kind {
                        ChangeKind::Slower => "slower".to_string(),
                        ChangeKind::LostExactness => "lost exactness".to_string(),
                    },
                ],
            );
        }
    }
    let verdict = if a.regressed() {
        "REGRESSED"
    } else {
        "OK (no regression)"
    };
    let _ = writeln!(out, "\n**Verdict: {verdict}**");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_get_thousands_separators() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(9746), "9,746");
        assert_eq!(count(1234567), "1,234,567");
    }

    #[test]
    fn percent_formatting() {
        assert_eq!(percent(100.0), "100%");
        assert_eq!(percent(99.64), "99.6%");
        assert_eq!(percent(0.0), "0%");
    }
}
