//! End-to-end tests of `report`, `aa` and `regress` on fabricated run
//! directories (records built here and written with serde_json) and on the
//! small fixtures under tests/fixtures/runs/.

use std::path::{Path, PathBuf};

use gvr_bench::capture::Model;
use gvr_bench::exact::ExactStatus;
use gvr_bench::grid::RowsMode;
use gvr_bench::record::CaseRecord;
use gvr_bench::report::{aa, regress, report, AaOptions, RegressOptions, ReportOptions};
use gvr_bench::stats::NoiseFloor;
use gvr_bench::timing::TimingMethod;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runs")
        .join(name)
}

#[allow(clippy::too_many_arguments)]
fn record(
    model: Model,
    isl: &str,
    layer: u32,
    n: u32,
    b: u32,
    arm: &str,
    us: f64,
    exact: ExactStatus,
) -> CaseRecord {
    let cell = format!("{}_{isl}_L{layer:02}", model.name());
    let k = model.k() as u32;
    CaseRecord {
        case: format!("{cell}@b{b}"),
        cell,
        model,
        isl: isl.to_string(),
        layer,
        n,
        k,
        cr: model.compress_ratio(),
        next_n: 1,
        b,
        rows: RowsMode::Replicate,
        arm: arm.to_string(),
        variant: None,
        // Two reps around `us` so the mean is exactly `us`.
        cold_us: vec![us * 0.99, us * 1.01],
        warm_us: vec![us * 0.9],
        method: Some(if arm.starts_with("cpu") {
            TimingMethod::HostClock
        } else {
            TimingMethod::Cupti
        }),
        exact,
        bytes: CaseRecord::min_bytes(b as u64, n as u64, k as u64),
    }
}

/// A grid of 3 models × 2 ISL rungs × 3 layers × 2 batch sizes = 36 cases,
/// each for the arms `arms`, with `time(arm, case index)` giving the µs.
fn grid(arms: &[&str], time: impl Fn(&str, usize) -> f64) -> Vec<CaseRecord> {
    let mut out = Vec::new();
    let mut index = 0;
    for model in Model::ALL {
        for (isl, n) in [("8k", 2048u32), ("64k", 16384)] {
            for layer in 1..=3 {
                for b in [1u32, 8] {
                    for arm in arms {
                        out.push(record(
                            model,
                            isl,
                            layer,
                            n + layer,
                            b,
                            arm,
                            time(arm, index),
                            ExactStatus::Exact,
                        ));
                    }
                    index += 1;
                }
            }
        }
    }
    out
}

fn write_run(dir: &Path, records: &[CaseRecord]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let mut text = String::new();
    for r in records {
        text.push_str(&serde_json::to_string(r).unwrap());
        text.push('\n');
    }
    std::fs::write(dir.join("results.jsonl"), text).unwrap();
    dir.to_path_buf()
}

fn report_options(run: &Path, out: &Path) -> ReportOptions {
    ReportOptions {
        run: run.to_path_buf(),
        base: None,
        vs: Vec::new(),
        bandwidth: Some(4.49e12),
        out: Some(out.to_path_buf()),
        no_plots: false,
    }
}

#[test]
fn report_writes_every_file_and_the_expected_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    // radix is 3x ss everywhere; filtered is 1.5x; one radix case is WRONG.
    let mut records = grid(&["ss", "radix", "filtered"], |arm, _| match arm {
        "ss" => 10.0,
        "radix" => 30.0,
        _ => 15.0,
    });
    let wrong = records.iter_mut().find(|r| r.arm == "radix").unwrap();
    wrong.exact = ExactStatus::Wrong {
        row: 3,
        reason: "value multiset differs".into(),
    };
    let run = write_run(&tmp.path().join("run"), &records);
    let out = tmp.path().join("report");
    let summary = report(&report_options(&run, &out)).unwrap();

    assert_eq!(summary.base_arm, "ss");
    assert_eq!(summary.comparisons.len(), 2);
    let radix = &summary.comparisons[0];
    assert_eq!(radix.other_arm, "radix");
    let s = radix.summary.unwrap();
    assert_eq!(
        s.count, 35,
        "the WRONG case is excluded from speed statistics"
    );
    assert!((s.geomean - 3.0).abs() < 1e-9);
    assert_eq!(radix.not_comparable, 1);
    assert_eq!(radix.buckets[7], 35, "3.0 falls in >=3.0");
    assert_eq!(
        summary.comparisons[1].buckets[5], 36,
        "1.5 falls in 1.5-2.0"
    );
    let radix_exact = summary.exactness.iter().find(|e| e.arm == "radix").unwrap();
    assert_eq!((radix_exact.exact, radix_exact.wrong), (35, 1));

    for file in [
        "summary.md",
        "cases.csv",
        "summary.json",
        "ratio_hist_radix.svg",
        "heatmap_radix.svg",
        "ratio_hist_filtered.svg",
        "latency_flash.svg",
        "latency_pro.svg",
        "latency_v32.svg",
    ] {
        let path = out.join(file);
        let meta = std::fs::metadata(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(meta.len() > 0, "{file} is empty");
    }
    let svg = std::fs::read_to_string(out.join("heatmap_radix.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("3.00"));

    let csv = std::fs::read_to_string(out.join("cases.csv")).unwrap();
    assert_eq!(csv.lines().count(), records.len() + 1);
    assert!(csv.lines().next().unwrap().starts_with("case,cell,model"));
    assert!(csv.contains("WRONG,row 3: value multiset differs"));

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(json["base_arm"], "ss");
    assert_eq!(json["comparisons"][0]["summary"]["count"], 35);
    assert_eq!(json["bucket_labels"][7], ">=3.0");
    assert_eq!(json["cases"].as_array().unwrap().len(), records.len());

    let markdown = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert_eq!(markdown, summary.to_string());
    assert!(markdown.contains(
        "| Comparison arm | Cases | Geometric mean | Min | P5 | P95 | Max | ss faster |"
    ));
    assert!(
        markdown.contains("| radix | 35 | 3.00x | 3.00 | 3.00 | 3.00 | 3.00 | 100% |"),
        "{markdown}"
    );
    assert!(
        markdown.contains("| radix | 36 | 35 | 1 | 0 | 0 | 0 |"),
        "exactness row: {markdown}"
    );
    assert!(markdown.contains("cupti"));
}

/// The lead of the report: ss against the fastest same-method baseline of
/// each case; radix per tier; ratios only between records timed alike; the
/// bandwidth the run measured, with its source.
#[test]
fn headline_is_the_best_baseline_per_case_then_tiers() {
    let tmp = tempfile::tempdir().unwrap();
    // ss 10 µs; radix 30 (B = 1) or 50 (B = 8); fi-cub 20 everywhere but
    // timed by graph replay on B = 8; ss-main and the radix twin are faster
    // than everyone and must not count.
    let mut records = grid(
        &["ss", "radix", "fi-cub", "ss-main", "radix#2"],
        |arm, _| match arm {
            "ss" => 10.0,
            "radix" => 30.0,
            "fi-cub" => 20.0,
            _ => 1.0,
        },
    );
    for r in records.iter_mut() {
        match r.arm.as_str() {
            "radix" if r.b == 8 => {
                r.cold_us = vec![50.0, 50.0];
                r.variant = Some(format!("split (4 CTAs/row, grid {})", 4 * r.b));
            }
            "radix" => r.variant = Some("per-row (grid 1)".into()),
            "fi-cub" if r.b == 8 => r.method = Some(TimingMethod::GraphReplay),
            _ => {}
        }
    }
    let run = write_run(&tmp.path().join("run"), &records);
    let mut manifest = gvr_bench::env_manifest::EnvManifest::without_hashes(
        Path::new("caps"),
        gvr_bench::timing::Protocol::default(),
        RowsMode::Replicate,
    );
    manifest.notes.insert(
        "device_read_bandwidth".into(),
        serde_json::json!({
            "bytes_per_s": 3.0e12, "buffer_bytes": 2147483648u64,
            "shape": "528 CTAs x 512 threads", "method": "cupti", "cold_reps": 5,
            "shapes": [["528 CTAs x 512 threads", 3.0e12]]
        }),
    );
    manifest.write(&run).unwrap();
    let out = tmp.path().join("report");
    let mut opts = report_options(&run, &out);
    opts.bandwidth = None;
    let summary = report(&opts).unwrap();

    assert_eq!(summary.bandwidth, 3.0e12);
    assert!(
        summary.bandwidth_source.contains("measured")
            && summary.bandwidth_source.contains("3.000 TB/s"),
        "{}",
        summary.bandwidth_source
    );
    let best = summary.best_baseline.as_ref().unwrap();
    assert_eq!(best.candidates, ["radix", "fi-cub"]);
    assert_eq!(best.excluded, ["ss-main", "radix#2"]);
    let s = best.summary.unwrap();
    // B = 1: fi-cub (20/10); B = 8: fi-cub was graph-timed, so radix (50/10).
    assert_eq!(s.count, 36);
    assert!(
        (s.geomean - (2.0f64 * 5.0).sqrt()).abs() < 1e-9,
        "{}",
        s.geomean
    );
    assert_eq!(s.base_faster, 36);
    let wins: Vec<(&str, usize)> = best
        .wins
        .iter()
        .map(|w| (w.arm.as_str(), w.cases))
        .collect();
    assert_eq!(wins, [("fi-cub", 18), ("radix", 18)]);
    assert!((best.closest.as_ref().unwrap().ratio - 2.0).abs() < 1e-9);

    let fi = summary
        .comparisons
        .iter()
        .find(|c| c.other_arm == "fi-cub")
        .unwrap();
    assert_eq!((fi.summary.unwrap().count, fi.method_differs), (18, 18));

    let radix_tiers = summary.tiers.iter().find(|t| t.arm == "radix").unwrap();
    let tiers: Vec<(&str, usize)> = radix_tiers
        .rows
        .iter()
        .map(|r| (r.tier.as_str(), r.summary.unwrap().count))
        .collect();
    assert_eq!(tiers, [("per-row", 18), ("split", 18)]);

    let markdown = summary.to_string();
    let headline = markdown
        .find("## Headline: ss vs the best baseline")
        .unwrap();
    let per_arm = markdown.find("## Performance comparison").unwrap();
    assert!(headline < per_arm, "{markdown}");
    assert!(markdown.contains("### radix per tier"), "{markdown}");
    assert!(markdown.contains("kernel time (CUPTI"), "{markdown}");
    assert!(
        markdown.contains("Read bandwidth 3.000 TB/s: measured"),
        "{markdown}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(json["best_baseline"]["summary"]["count"], 36);
}

#[test]
fn a_run_without_a_probe_says_its_bandwidth_is_nominal() {
    let tmp = tempfile::tempdir().unwrap();
    let records = grid(
        &["ss", "radix"],
        |arm, _| if arm == "ss" { 1.0 } else { 2.0 },
    );
    let run = write_run(&tmp.path().join("run"), &records);
    let mut opts = report_options(&run, &tmp.path().join("report"));
    opts.bandwidth = None;
    let summary = report(&opts).unwrap();
    assert_eq!(summary.bandwidth, 4.49e12);
    assert!(
        summary.bandwidth_source.starts_with("nominal"),
        "{}",
        summary.bandwidth_source
    );
}

#[test]
fn no_plots_and_explicit_base_and_vs() {
    let tmp = tempfile::tempdir().unwrap();
    let records = grid(&["ss", "radix", "filtered"], |arm, i| {
        if arm == "ss" {
            10.0 + i as f64
        } else {
            20.0
        }
    });
    let run = write_run(&tmp.path().join("run"), &records);
    let out = tmp.path().join("r");
    let mut opts = report_options(&run.join("results.jsonl"), &out);
    opts.base = Some("radix".into());
    opts.vs = vec!["ss".into()];
    opts.no_plots = true;
    let summary = report(&opts).unwrap();
    assert_eq!(summary.comparisons.len(), 1);
    assert_eq!(summary.comparisons[0].other_arm, "ss");
    assert!(out.join("summary.md").exists());
    assert!(!out.join("ratio_hist_ss.svg").exists());
}

#[test]
fn default_base_is_the_first_gpu_arm_without_ss() {
    let tmp = tempfile::tempdir().unwrap();
    let records = grid(&["cpu-ref", "radix", "filtered"], |_, _| 5.0);
    let run = write_run(&tmp.path().join("run"), &records);
    let mut opts = report_options(&run, &tmp.path().join("r"));
    opts.no_plots = true;
    assert_eq!(report(&opts).unwrap().base_arm, "radix");
}

#[test]
fn bad_arguments_are_input_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let run = write_run(&tmp.path().join("run"), &grid(&["ss", "radix"], |_, _| 5.0));
    let mut opts = report_options(&run, &tmp.path().join("r"));
    opts.base = Some("nope".into());
    let err = report(&opts).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(err.to_string().contains("nope"));

    let missing = tmp.path().join("no-such-run");
    let err = report(&report_options(&missing, &tmp.path().join("r"))).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(err.to_string().contains("no-such-run"), "{err}");

    let err = report(&report_options(&fixture("bad_line"), &tmp.path().join("r"))).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(err.to_string().contains("line 2"), "{err}");
}

#[test]
fn fixture_run_echoes_environment_and_blank_means_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let summary = report(&report_options(&fixture("tiny"), &tmp.path().join("r"))).unwrap();
    let md = summary.to_string();
    assert!(md.contains("- gpu: NVIDIA H200"), "{md}");
    assert!(md.contains("- cuda.runtime: 13.0"), "{md}");
    // cpu-ref and ss share one usable case (the 8k one), but cpu-ref is
    // host-clock timed and ss CUPTI timed: no ratio between them.
    let cpu = summary
        .comparisons
        .iter()
        .find(|c| c.other_arm == "cpu-ref")
        .unwrap();
    assert!(cpu.summary.is_none());
    assert_eq!(cpu.method_differs, 1);
    // radix pairs only on the 64k case (the 8k one is WRONG): 30/11.
    let radix = summary
        .comparisons
        .iter()
        .find(|c| c.other_arm == "radix")
        .unwrap();
    assert!((radix.summary.unwrap().geomean - 30.0 / 11.0).abs() < 1e-9);
    // No pro/v32 data: the per-model cells are blank, not zero.
    assert!(md.contains("| radix | 2.73 (1) |  |  |"), "{md}");
}

#[test]
fn aa_on_two_arms_of_one_run_and_on_two_runs() {
    let tmp = tempfile::tempdir().unwrap();
    // radix#2 is radix with ±1% alternating jitter.
    let records = grid(&["radix", "radix#2"], |arm, i| {
        let jitter = if i % 2 == 0 { 1.01 } else { 0.99 };
        if arm == "radix" {
            20.0
        } else {
            20.0 * jitter
        }
    });
    let run = write_run(&tmp.path().join("run"), &records);
    let out = tmp.path().join("noise.json");
    let floor = aa(&AaOptions {
        run_a: run.clone(),
        run_b: None,
        arm: Some("radix".into()),
        arm_b: Some("radix#2".into()),
        out: Some(out.clone()),
        min_common: gvr_bench::report::DEFAULT_MIN_COMMON,
    })
    .unwrap();
    assert_eq!(floor.cases, 36);
    assert!((floor.p99 - 1.01).abs() < 1e-9);
    assert!((floor.p1 - 0.99).abs() < 1e-9);
    let back: NoiseFloor = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(back, floor);
    assert!(floor.to_string().contains("| 36 |"));

    // Two runs, every common arm pooled: 2 arms × 36 cases.
    let run_b = write_run(&tmp.path().join("run_b"), &records);
    let floor = aa(&AaOptions {
        run_a: run.clone(),
        run_b: Some(run_b),
        arm: None,
        arm_b: None,
        out: None,
        min_common: gvr_bench::report::DEFAULT_MIN_COMMON,
    })
    .unwrap();
    assert_eq!(floor.cases, 72);
    assert!((floor.geomean - 1.0).abs() < 1e-12);

    // One run needs two arms.
    let err = aa(&AaOptions {
        run_a: run,
        run_b: None,
        arm: Some("radix".into()),
        arm_b: None,
        out: None,
        min_common: gvr_bench::report::DEFAULT_MIN_COMMON,
    })
    .unwrap_err();
    assert_eq!(err.exit_code(), 2);
}

fn regress_options(baseline: &Path, current: &Path) -> RegressOptions {
    RegressOptions {
        baseline: baseline.to_path_buf(),
        current: current.to_path_buf(),
        noise: None,
        arm: None,
        abs_floor_us: 0.5,
        geomean_threshold: 1.02,
        max_slower_fraction: 0.01,
        min_common: gvr_bench::report::DEFAULT_MIN_COMMON,
        out: None,
    }
}

#[test]
fn regress_flags_an_injected_slowdown() {
    let tmp = tempfile::tempdir().unwrap();
    let base = grid(&["ss", "radix"], |_, i| 10.0 + i as f64);
    let baseline = write_run(&tmp.path().join("base"), &base);
    // 20% slower on three ss cases.
    let current = write_run(
        &tmp.path().join("cur"),
        &grid(&["ss", "radix"], |arm, i| {
            let t = 10.0 + i as f64;
            if arm == "ss" && i < 3 {
                t * 1.2
            } else {
                t
            }
        }),
    );
    let md_path = tmp.path().join("regress.md");
    let mut opts = regress_options(&baseline, &current);
    opts.out = Some(md_path.clone());
    let verdict = regress(&opts).unwrap();
    assert!(verdict.regressed);
    let ss = verdict
        .analysis
        .arms
        .iter()
        .find(|a| a.arm == "ss")
        .unwrap();
    assert_eq!(ss.slower(), 3);
    let radix = verdict
        .analysis
        .arms
        .iter()
        .find(|a| a.arm == "radix")
        .unwrap();
    assert!(!radix.regressed());
    assert!(verdict.markdown.contains("**Verdict: REGRESSED**"));
    assert!(verdict.markdown.contains("## Worst cases (3 of 3)"));
    assert_eq!(std::fs::read_to_string(md_path).unwrap(), verdict.markdown);

    // Restricted to radix, the same pair of runs passes.
    let mut opts = regress_options(&baseline, &current);
    opts.arm = Some("radix".into());
    assert!(!regress(&opts).unwrap().regressed);
}

#[test]
fn regress_passes_aa_like_jitter_within_two_percent() {
    let tmp = tempfile::tempdir().unwrap();
    let baseline = write_run(
        &tmp.path().join("base"),
        &grid(&["ss"], |_, i| 10.0 + i as f64),
    );
    let current = write_run(
        &tmp.path().join("cur"),
        &grid(&["ss"], |_, i| {
            (10.0 + i as f64) * if i % 3 == 0 { 1.02 } else { 0.985 }
        }),
    );
    let verdict = regress(&regress_options(&baseline, &current)).unwrap();
    assert!(!verdict.regressed, "{}", verdict.markdown);
    assert!(verdict.markdown.contains("**Verdict: OK"));
}

#[test]
fn regress_flags_exact_to_wrong_and_reads_a_summary_json() {
    let tmp = tempfile::tempdir().unwrap();
    let base = grid(&["ss"], |_, _| 10.0);
    let baseline = write_run(&tmp.path().join("base"), &base);
    // Baseline given as a report's summary.json.
    let mut opts = report_options(&baseline, &tmp.path().join("base_report"));
    opts.no_plots = true;
    report(&opts).unwrap();
    let summary_json = tmp.path().join("base_report/summary.json");

    let mut cur = base.clone();
    cur[5].exact = ExactStatus::Unwritten { row: 0, slot: 7 };
    let current = write_run(&tmp.path().join("cur"), &cur);
    let verdict = regress(&regress_options(
        &summary_json,
        &current.join("results.jsonl"),
    ))
    .unwrap();
    assert!(verdict.regressed);
    assert_eq!(verdict.analysis.arms[0].lost_exactness(), 1);
    assert!(verdict.markdown.contains("UNWRITTEN"));
}

#[test]
fn regress_uses_the_noise_floor_and_rejects_a_bad_one() {
    let tmp = tempfile::tempdir().unwrap();
    let baseline = write_run(&tmp.path().join("base"), &grid(&["ss"], |_, _| 20.0));
    // Every case 4% (0.8 µs) slower: inside the default 1.05 band.
    let current = write_run(&tmp.path().join("cur"), &grid(&["ss"], |_, _| 20.8));
    let mut opts = regress_options(&baseline, &current);
    opts.geomean_threshold = 1.10;
    assert!(!regress(&opts).unwrap().regressed);
    // A tight A/A band (P99 1.01) turns every case into a regression.
    let noise = tmp.path().join("noise.json");
    std::fs::write(
        &noise,
        r#"{"p1":0.99,"p99":1.01,"geomean":1.0,"cases":100}"#,
    )
    .unwrap();
    opts.noise = Some(noise.clone());
    let verdict = regress(&opts).unwrap();
    assert!(verdict.regressed);
    assert_eq!(verdict.analysis.arms[0].slower(), 36);

    std::fs::write(&noise, r#"{"p1":0.99}"#).unwrap();
    let err = regress(&opts).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(err.to_string().contains("noise.json"), "{err}");
}

#[test]
fn single_arm_run_reports_without_comparisons() {
    let tmp = tempfile::tempdir().unwrap();
    let run = write_run(&tmp.path().join("run"), &grid(&["ss"], |_, _| 7.0));
    // A manifest in the layout `env_manifest` writes (no `environment` key).
    let manifest = serde_json::json!({
        "tool_version": "0.1.0",
        "gpu": {"name": "NVIDIA H200", "sms": 132},
        "kernel_hashes": {"ss_main.cu": "abc123"},
        "command_line": ["gvr-bench", "run"],
    });
    std::fs::write(run.join("manifest.json"), manifest.to_string()).unwrap();
    let out = tmp.path().join("r");
    let summary = report(&report_options(&run, &out)).unwrap();
    assert!(summary.comparisons.is_empty());
    assert!(out.join("summary.md").exists() && out.join("latency_v32.svg").exists());
    let md = summary.to_string();
    assert!(md.contains("- gpu.name: NVIDIA H200"), "{md}");
    assert!(md.contains("- tool_version: 0.1.0"), "{md}");
    assert!(
        !md.contains("abc123"),
        "kernel hashes stay out of the header"
    );
}

#[test]
fn a_run_with_floors_reports_every_arm_over_them() {
    use gvr_bench::floor::{FloorRecord, FloorShape, FloorWriter};
    let tmp = tempfile::tempdir().unwrap();
    // ss takes 10 µs, radix 30 µs, the floor 4 µs everywhere but one case
    // whose every floor shape failed.
    let records = grid(
        &["ss", "radix"],
        |arm, _| if arm == "ss" { 10.0 } else { 30.0 },
    );
    let run = write_run(&tmp.path().join("run"), &records);
    let mut writer = FloorWriter::open(&run).unwrap();
    for (i, r) in records.iter().filter(|r| r.arm == "ss").enumerate() {
        let mut floor = FloorRecord::for_case(r);
        if i > 0 {
            floor.best = Some(FloorShape::rows(256));
            floor.cold_us = vec![3.96, 4.04];
        }
        writer.append(&floor).unwrap();
    }
    let out = tmp.path().join("report");
    let summary = report(&report_options(&run, &out)).unwrap();
    let floor = summary.floor.as_ref().expect("a floor section");
    assert_eq!((floor.cases, floor.failed), (35, 1));
    let by_arm = |arm: &str| {
        floor
            .vs
            .iter()
            .find(|c| c.other_arm == arm)
            .and_then(|c| c.summary)
            .unwrap()
    };
    assert!((by_arm("ss").geomean - 2.5).abs() < 1e-9);
    assert!((by_arm("radix").geomean - 7.5).abs() < 1e-9);
    assert_eq!(by_arm("ss").count, 35);
    // Only the floor's failed case is missing; ss vs radix is untouched.
    assert_eq!(summary.comparisons[0].summary.unwrap().count, 36);
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("## Latency floor"), "{md}");
    assert!(md.contains("Floors: 35 cases (1 failed)"), "{md}");
    assert!(md.contains("| ss | 35 | 2.50x"), "{md}");
    assert!(md.contains("Fastest floor shape: b256 (35)."), "{md}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(json["floor"]["cases"], 35);

    // A run without floors has no section.
    let plain = write_run(&tmp.path().join("plain"), &records);
    let summary = report(&report_options(&plain, &tmp.path().join("r2"))).unwrap();
    assert!(summary.floor.is_none());
    let md = std::fs::read_to_string(tmp.path().join("r2/summary.md")).unwrap();
    assert!(!md.contains("Latency floor"));
}
