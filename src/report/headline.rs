//! The report's lead: the base arm against the best baseline of each case
//! (`stats::best`), then the per-tier tables of the baselines that pick a
//! tier per shape. Rendered before the per-arm tables.

use std::fmt::Write as _;

use super::markdown::{count, percent, table_header, table_row};
use super::ReportSummary;
use crate::stats::best::{BestBaseline, TierTable, B_BANDS, N_BANDS};
use crate::timing::TimingMethod;

/// `cupti` → "CUPTI kernel time", ... for the headline's sentence.
pub fn method_words(methods: &[TimingMethod]) -> String {
    if methods.is_empty() {
        return "no common timing method".to_string();
    }
    methods
        .iter()
        .map(|m| match m {
            TimingMethod::Cupti => {
                "kernel time (CUPTI kernel records, all kernels of a call summed)"
            }
            TimingMethod::GraphReplay => "CUDA-graph replay between events",
            TimingMethod::CudaEvents => "CUDA events around eager calls",
            TimingMethod::HostClock => "host clock (CPU engines)",
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The headline section and the tier tables.
pub fn render_headline(out: &mut String, s: &ReportSummary) {
    if let Some(best) = &s.best_baseline {
        render_best(out, best);
    }
    for table in &s.tiers {
        render_tiers(out, table);
    }
}

fn render_best(out: &mut String, b: &BestBaseline) {
    let base = &b.base_arm;
    let _ = writeln!(out, "## Headline: {base} vs the best baseline\n");
    let _ = writeln!(
        out,
        "Per case, the best baseline is the fastest arm among {} that is exact on the case and \
         was timed the same way as {base}; ratio = time(best baseline) / time({base}), above 1 \
         when {base} is faster. Timing: {}.{}\n",
        b.candidates
            .iter()
            .map(|a| format!("`{a}`"))
            .collect::<Vec<_>>()
            .join(", "),
        method_words(&b.methods),
        if b.excluded.is_empty() {
            String::new()
        } else {
            format!(
                " Not baselines: {} ({base}'s own family, A/A twins, CPU engines).",
                b.excluded.join(", ")
            )
        }
    );
    let Some(sm) = b.summary else {
        let _ = writeln!(
            out,
            "No case has {base} and a baseline both exact and timed the same way.\n"
        );
        return;
    };
    let mut lines = vec![
        format!(
            "- **{:.2}×** geometric mean over {} cases (min {:.2}, P5 {:.2}, median {:.2}, P95 {:.2}, max {:.2})",
            sm.geomean,
            count(sm.count),
            sm.min,
            sm.p5,
            sm.p50,
            sm.p95,
            sm.max
        ),
        format!(
            "- {base} faster in **{}** of them ({} cases)",
            percent(sm.base_faster_pct),
            count(sm.base_faster)
        ),
    ];
    if let Some(c) = &b.closest {
        lines.push(format!(
            "- closest case: `{}` (B = {}, N = {}): {:.2}× against `{}` ({:.2} µs vs {:.2} µs)",
            c.case, c.b, c.n, c.ratio, c.best_arm, c.best_us, c.base_us
        ));
    }
    if b.incomplete > 0 {
        lines.push(format!(
            "- {} of these cases lack at least one baseline (missing, inexact or timed otherwise): \
             their best is over the arms they have",
            count(b.incomplete)
        ));
        match &b.complete {
            Some(c) => lines.push(format!(
                "- over the {} cases every baseline covers: **{:.2}×** (min {:.2}, P5 {:.2}, median {:.2}, P95 {:.2}), {base} faster in {}",
                count(c.count),
                c.geomean,
                c.min,
                c.p5,
                c.p50,
                c.p95,
                percent(c.base_faster_pct)
            )),
            None => lines.push("- no case has every baseline".to_string()),
        }
    }
    if b.no_baseline > 0 {
        lines.push(format!(
            "- {} cases of {base} have no baseline exact and timed the same way (left out)",
            count(b.no_baseline)
        ));
    }
    let _ = writeln!(out, "{}\n", lines.join("\n"));

    let _ = writeln!(out, "### Which baseline is best\n");
    table_header(
        out,
        &[
            "Best baseline".to_string(),
            "Cases".to_string(),
            "Share".to_string(),
            format!("Geomean best/{base}"),
        ],
    );
    for w in &b.wins {
        table_row(
            out,
            &[
                w.arm.clone(),
                count(w.cases),
                percent(100.0 * w.cases as f64 / sm.count.max(1) as f64),
                format!("{:.2}", w.geomean),
            ],
        );
    }

    let _ = writeln!(
        out,
        "\n### Where each baseline wins (B × N bands: winner, its share of the cell, geomean best/{base}, cases)\n"
    );
    let n_labels: Vec<&str> = N_BANDS
        .iter()
        .map(|(_, _, l)| *l)
        .filter(|l| b.bands.iter().any(|c| c.n_band == *l))
        .collect();
    let mut columns = vec!["Batch".to_string()];
    columns.extend(n_labels.iter().map(|l| l.to_string()));
    table_header(out, &columns);
    for (_, _, b_label) in B_BANDS {
        if !b.bands.iter().any(|c| c.b_band == b_label) {
            continue;
        }
        let mut cells = vec![b_label.to_string()];
        for n_label in &n_labels {
            cells.push(
                b.bands
                    .iter()
                    .find(|c| c.b_band == b_label && c.n_band == *n_label)
                    .map(|c| {
                        format!(
                            "{} {} · {:.2}× ({})",
                            c.winner,
                            percent(100.0 * c.winner_cases as f64 / c.cases as f64),
                            c.geomean,
                            count(c.cases)
                        )
                    })
                    .unwrap_or_default(),
            );
        }
        table_row(out, &cells);
    }
    out.push('\n');
}

fn render_tiers(out: &mut String, t: &TierTable) {
    let base = &t.base_arm;
    let _ = writeln!(
        out,
        "### {} per tier (the tier its variant names; time({}) / time({base}))\n",
        t.arm, t.arm
    );
    table_header(
        out,
        &[
            "Tier".to_string(),
            "Records".to_string(),
            "Paired cases".to_string(),
            "Geometric mean".to_string(),
            "Min".to_string(),
            "Max".to_string(),
            format!("{base} faster"),
        ],
    );
    for r in &t.rows {
        let sm = r.summary;
        table_row(
            out,
            &[
                r.tier.clone(),
                count(r.records),
                sm.map(|x| count(x.count)).unwrap_or_default(),
                sm.map(|x| format!("{:.2}x", x.geomean)).unwrap_or_default(),
                sm.map(|x| format!("{:.2}", x.min)).unwrap_or_default(),
                sm.map(|x| format!("{:.2}", x.max)).unwrap_or_default(),
                sm.map(|x| percent(x.base_faster_pct)).unwrap_or_default(),
            ],
        );
    }
    out.push('\n');
}
