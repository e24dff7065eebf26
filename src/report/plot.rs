//! SVG plots (plotters, SVG backend): the ratio distribution and the speedup
//! heatmap of each comparison, and latency against N per model.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plotters::prelude::*;

use crate::capture::Model;
use crate::error::{GvrError, Result};
use crate::stats::ratios::BUCKET_LABELS;
use crate::stats::{geomean, CaseTime, Comparison};

use super::ReportSummary;

type PlotResult = std::result::Result<(), Box<dyn std::error::Error>>;

fn plot_error(path: &Path, e: Box<dyn std::error::Error>) -> GvrError {
    GvrError::Other(anyhow::anyhow!("{}: drawing plot: {e}", path.display()))
}

/// Arm names may hold characters that are awkward in file names ("radix#2").
fn file_stem(arm: &str) -> String {
    arm.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Write every plot the data supports; returns the files written.
pub fn write_plots(summary: &ReportSummary, out: &Path) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for cmp in &summary.comparisons {
        if cmp.points.is_empty() {
            continue;
        }
        let stem = file_stem(&cmp.other_arm);
        let path = out.join(format!("ratio_hist_{stem}.svg"));
        ratio_histogram(cmp, &path).map_err(|e| plot_error(&path, e))?;
        written.push(path);
        let path = out.join(format!("heatmap_{stem}.svg"));
        speedup_heatmap(cmp, &path).map_err(|e| plot_error(&path, e))?;
        written.push(path);
    }
    for model in Model::ALL {
        let path = out.join(format!("latency_{}.svg", model.name()));
        if latency_vs_n(&summary.cases, &summary.arms, model, &path)
            .map_err(|e| plot_error(&path, e))?
        {
            written.push(path);
        }
    }
    Ok(written)
}

/// Bar chart of the case count in each ratio bucket.
fn ratio_histogram(cmp: &Comparison, path: &Path) -> PlotResult {
    let root = SVGBackend::new(path, (860, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let tallest = cmp.buckets.iter().copied().max().unwrap_or(0).max(1);
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "time({}) / time({}): cases per ratio bucket",
                cmp.other_arm, cmp.base_arm
            ),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(
            (0usize..BUCKET_LABELS.len()).into_segmented(),
            0usize..tallest + tallest / 10 + 1,
        )?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(BUCKET_LABELS.len())
        .x_label_formatter(&|v| match v {
            SegmentValue::Exact(i) | SegmentValue::CenterOf(i) => {
                BUCKET_LABELS.get(*i).copied().unwrap_or("").to_string()
            }
            SegmentValue::Last => String::new(),
        })
        .x_desc(format!("ratio (> 1: {} faster)", cmp.base_arm))
        .y_desc("cases")
        .draw()?;
    chart.draw_series(
        Histogram::vertical(&chart)
            .style(RGBColor(52, 101, 164).filled())
            .margin(8)
            .data(cmp.buckets.iter().enumerate().map(|(i, n)| (i, *n))),
    )?;
    root.present()?;
    Ok(())
}

/// Colour of a ratio on a log scale: white at 1, blue where the base arm is
/// faster, red where it is slower, saturating at 4x either way.
fn ratio_colour(ratio: f64) -> RGBColor {
    let t = (ratio.log2() / 2.0).clamp(-1.0, 1.0);
    let fade = |full: u8, t: f64| (255.0 - (255.0 - full as f64) * t) as u8;
    if t >= 0.0 {
        RGBColor(fade(33, t), fade(102, t), fade(172, t))
    } else {
        RGBColor(fade(178, -t), fade(24, -t), fade(43, -t))
    }
}

/// Heatmap over (model/ISL rung, B): each cell is the geomean of the per-layer
/// ratios there (docs/method.md, "Comparing arms"). Drawn in pixel space so every cell and label
/// is placed exactly; missing cells stay blank.
fn speedup_heatmap(cmp: &Comparison, path: &Path) -> PlotResult {
    // Rung = (model, ISL label); ordered by model, then by mean N.
    let mut rung_n: BTreeMap<(Model, String), Vec<f64>> = BTreeMap::new();
    let mut cells: BTreeMap<((Model, String), u32), Vec<f64>> = BTreeMap::new();
    for p in &cmp.points {
        let rung = (p.model, p.isl.clone());
        rung_n.entry(rung.clone()).or_default().push(p.n as f64);
        cells.entry((rung, p.b)).or_default().push(p.ratio);
    }
    let mut rungs: Vec<((Model, String), f64)> = rung_n
        .into_iter()
        .map(|(rung, ns)| {
            let mean_n = ns.iter().sum::<f64>() / ns.len() as f64;
            (rung, mean_n)
        })
        .collect();
    // Seed segment order (Flash, Pro, V3.2), then by N within a model.
    let segment = |m: Model| {
        [Model::Flash, Model::Pro, Model::V32]
            .iter()
            .position(|x| *x == m)
    };
    rungs.sort_by(|a, b| {
        segment(a.0 .0)
            .cmp(&segment(b.0 .0))
            .then(a.1.total_cmp(&b.1))
    });
    let mut batches: Vec<u32> = cells.keys().map(|(_, b)| *b).collect();
    batches.sort_unstable();
    batches.dedup();

    let (left, top, cell_w, cell_h) = (170i32, 60i32, 64i32, 26i32);
    let width = (left + cell_w * batches.len() as i32 + 30).max(480) as u32;
    let height = (top + cell_h * rungs.len() as i32 + 60) as u32;
    let root = SVGBackend::new(path, (width, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let title = format!(
        "geomean time({}) / time({}) per (rung, B); blue: {} faster",
        cmp.other_arm, cmp.base_arm, cmp.base_arm
    );
    root.draw(&Text::new(title, (10, 15), ("sans-serif", 16).into_font()))?;
    let label_style = ("sans-serif", 12).into_font();
    for (col, b) in batches.iter().enumerate() {
        let x = left + col as i32 * cell_w + cell_w / 3;
        root.draw(&Text::new(
            format!("B={b}"),
            (x, top - 18),
            label_style.clone(),
        ))?;
    }
    for (row, ((model, isl), mean_n)) in rungs.iter().enumerate() {
        let y = top + row as i32 * cell_h;
        let label = format!("{model} {isl} (N≈{:.0})", mean_n);
        root.draw(&Text::new(label, (8, y + cell_h / 3), label_style.clone()))?;
        for (col, b) in batches.iter().enumerate() {
            let Some(g) = cells
                .get(&((*model, isl.clone()), *b))
                .and_then(|r| geomean(r))
            else {
                continue;
            };
            let x = left + col as i32 * cell_w;
            root.draw(&Rectangle::new(
                [(x, y), (x + cell_w - 2, y + cell_h - 2)],
                ratio_colour(g).filled(),
            ))?;
            root.draw(&Text::new(
                format!("{g:.2}"),
                (x + 12, y + cell_h / 3),
                label_style.clone(),
            ))?;
        }
    }
    root.present()?;
    Ok(())
}

/// One SVG per model: a panel per batch size, latency (mean over layers of
/// the mean cold µs, exact timed cases only) against N (mean over layers at
/// each ISL rung), one line per arm. Returns false when the model has no data.
fn latency_vs_n(
    cases: &[CaseTime],
    arms: &[String],
    model: Model,
    path: &Path,
) -> std::result::Result<bool, Box<dyn std::error::Error>> {
    // (b, arm, isl) -> (Σn, Σus, count)
    let mut sums: BTreeMap<(u32, usize, String), (f64, f64, usize)> = BTreeMap::new();
    for c in cases.iter().filter(|c| c.model == model) {
        let (Some(us), Some(arm_index)) =
            (c.usable_mean_us(), arms.iter().position(|a| a == &c.arm))
        else {
            continue;
        };
        if us <= 0.0 || c.n == 0 {
            continue;
        }
        let entry = sums
            .entry((c.b, arm_index, c.isl.clone()))
            .or_insert((0.0, 0.0, 0));
        entry.0 += c.n as f64;
        entry.1 += us;
        entry.2 += 1;
    }
    if sums.is_empty() {
        return Ok(false);
    }
    // b -> arm -> points (n, us), sorted by n.
    let mut panels: BTreeMap<u32, BTreeMap<usize, Vec<(f64, f64)>>> = BTreeMap::new();
    for ((b, arm, _), (sum_n, sum_us, count)) in &sums {
        let n = *count as f64;
        panels
            .entry(*b)
            .or_default()
            .entry(*arm)
            .or_default()
            .push((sum_n / n, sum_us / n));
    }
    let columns = panels.len().min(3);
    let rows = panels.len().div_ceil(columns);
    let root =
        SVGBackend::new(path, (420 * columns as u32, 320 * rows as u32 + 40)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(
        &format!("{model}: mean cold latency vs N (mean over layers; log-log)"),
        ("sans-serif", 20),
    )?;
    let areas = root.split_evenly((rows, columns));
    // Axes are log2(N) and log10(µs) on linear coordinates: the tick marks
    // then fall on powers of two of N, which is how the grid is laid out.
    for (panel, (area, (b, lines))) in areas.iter().zip(panels.iter_mut()).enumerate() {
        let all: Vec<(f64, f64)> = lines
            .values()
            .flatten()
            .map(|(n, us)| (n.log2(), us.log10()))
            .collect();
        let bounds = |values: Vec<f64>, pad: f64| {
            let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (lo - pad, hi + pad)
        };
        let (x_lo, x_hi) = bounds(all.iter().map(|p| p.0).collect(), 0.5);
        let (y_lo, y_hi) = bounds(all.iter().map(|p| p.1).collect(), 0.1);
        let mut chart = ChartBuilder::on(area)
            .caption(format!("B = {b}"), ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)?;
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .x_desc("N")
            .y_desc("µs")
            .x_labels(((x_hi - x_lo).ceil() as usize + 1).max(2))
            .x_label_formatter(&|x| power_of_two_label(*x))
            .y_label_formatter(&|y| three_significant(10f64.powf(*y)))
            .draw()?;
        for (arm_index, points) in lines.iter_mut() {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let colour = Palette99::pick(*arm_index).to_rgba();
            let logged: Vec<(f64, f64)> = points
                .iter()
                .map(|(n, us)| (n.log2(), us.log10()))
                .collect();
            let name = arms[*arm_index].clone();
            chart
                .draw_series(LineSeries::new(
                    logged.iter().copied(),
                    colour.stroke_width(2),
                ))?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(2))
                });
            chart.draw_series(logged.iter().map(|p| Circle::new(*p, 3, colour.filled())))?;
        }
        // One legend is enough: every panel uses the same arm colours.
        if panel == 0 {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperLeft)
                .draw()?;
        }
    }
    root.present()?;
    Ok(true)
}

/// Latency tick label with about three significant digits.
fn three_significant(us: f64) -> String {
    if us >= 100.0 {
        format!("{us:.0}")
    } else if us >= 10.0 {
        format!("{us:.1}")
    } else {
        format!("{us:.2}")
    }
}

/// Tick label of a log2(N) axis position: "4K", "256K", or the plain number.
fn power_of_two_label(log2_n: f64) -> String {
    let n = 2f64.powf(log2_n).round();
    if n >= 1024.0 && (n / 1024.0).fract() == 0.0 {
        format!("{}K", n / 1024.0)
    } else {
        format!("{n}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_scale_is_white_at_parity_and_saturates() {
        assert_eq!(ratio_colour(1.0), RGBColor(255, 255, 255));
        assert_eq!(ratio_colour(4.0), ratio_colour(100.0));
        assert_eq!(ratio_colour(0.25), RGBColor(178, 24, 43));
    }

    #[test]
    fn file_stems_are_safe() {
        assert_eq!(file_stem("radix#2"), "radix_2");
        assert_eq!(file_stem("cpu-ss"), "cpu-ss");
    }

    #[test]
    fn axis_labels_of_powers_of_two() {
        assert_eq!(power_of_two_label(12.0), "4K");
        assert_eq!(power_of_two_label(18.0), "256K");
        assert_eq!(power_of_two_label(9.0), "512");
    }
}
