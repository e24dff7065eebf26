//! The device call scripts' kernel knobs parse as the arms will parse them, so
//! a typo in a knob name or value fails here instead of costing a device call.

use gvr_bench::arms::{ss, ss_clus_stream, ss_reg};

const DEFAULTS_AB: &str = include_str!("../scripts/h200_defaults_ab_call.sh");
const STAGGER: &str = include_str!("../scripts/h200_stagger_call.sh");
const REG_DROP_BUILD: &str = include_str!("../scripts/h200_reg_drop_build_call.sh");
const CLUS_MERGE: &str = include_str!("../scripts/h200_clus_merge_call.sh");

/// The script's `NAME=value` shell variables (one per line, unquoted).
fn variables(script: &str) -> Vec<(String, String)> {
    script
        .lines()
        .filter_map(|line| {
            let (name, value) = line.split_once('=')?;
            let simple = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            (simple && !value.starts_with('"')).then(|| (name.to_string(), value.to_string()))
        })
        .collect()
}

/// `$NAME` replaced by each variable's value, longest names first.
fn expand(text: &str, vars: &[(String, String)]) -> String {
    let mut sorted: Vec<_> = vars.iter().collect();
    sorted.sort_by_key(|(name, _)| std::cmp::Reverse(name.len()));
    let mut out = text.to_string();
    for (name, value) in sorted {
        out = out.replace(&format!("${name}"), value);
    }
    out
}

/// Every knob spec set through `$<env>=` in an experiment line
/// (`label|$M=SPEC|args` or `label|$M=SPEC OTHER=V|args`), expanded.
fn specs(script: &str, env_var: &str) -> Vec<String> {
    let vars = variables(script);
    let marker = format!("|${env_var}=");
    script
        .lines()
        .filter_map(|line| {
            let at = line.find(&marker)?;
            let rest = &line[at + marker.len()..];
            let spec = rest.split(['|', ' ']).next()?;
            Some(expand(spec, &vars))
        })
        .collect()
}

/// Every `$M=` line of `script` sets main knobs that the arm accepts.
fn main_knobs_parse(script: &str, min_lines: usize) {
    let specs = specs(script, "M");
    assert!(specs.len() >= min_lines, "main knob lines found: {specs:?}");
    for spec in &specs {
        let knobs = ss::parse_tuning_defines(spec)
            .unwrap_or_else(|e| panic!("GVR_SS_MAIN_DEFINES={spec}: {e}"));
        assert!(!knobs.is_empty(), "{spec}");
    }
}

#[test]
fn defaults_ab_call_main_knobs_parse() {
    main_knobs_parse(DEFAULTS_AB, 1);
}

#[test]
fn stagger_call_main_knobs_parse() {
    main_knobs_parse(STAGGER, 4);
}

/// Exactly `lines` `$<var>=` lines in `script`, each a knob spec `parse`
/// accepts with at least one knob (`env` names the variable in messages).
fn family_knobs_parse<T, E: std::fmt::Display>(
    script: &str,
    var: &str,
    env: &str,
    lines: usize,
    parse: impl Fn(&str) -> Result<Vec<T>, E>,
) {
    let specs = specs(script, var);
    assert_eq!(specs.len(), lines, "{env} lines found: {specs:?}");
    for spec in &specs {
        let knobs = parse(spec).unwrap_or_else(|e| panic!("{env}={spec}: {e}"));
        assert!(!knobs.is_empty(), "{spec}");
    }
}

#[test]
fn clus_merge_call_clus_knobs_parse() {
    family_knobs_parse(CLUS_MERGE, "C", "GVR_SS_CLUS_DEFINES", 4, |spec| {
        ss_clus_stream::clus_switches(Some(spec))
    });
}

#[test]
fn reg_drop_build_call_reg_knobs_parse() {
    family_knobs_parse(REG_DROP_BUILD, "R", "GVR_SS_REG_DEFINES", 2, |spec| {
        ss_reg::reg_knobs(Some(spec))
    });
}

#[test]
fn a_misspelt_knob_is_caught() {
    // The spec ends at the line's next field or at another variable of its environment.
    let script =
        "M=GVR_SS_MAIN_DEFINES\nX=SS_SCAN_FROM=1\nx|$M=$X|grid\ny|$M=$X GVR_SS_MAIN_BLK=512|grid\n";
    let found = specs(script, "M");
    assert_eq!(found, ["SS_SCAN_FROM=1", "SS_SCAN_FROM=1"]);
    assert!(ss::parse_tuning_defines(&found[0]).is_err());
}

/// `scripts/h200_campaign_calls.sh` on a card other than `NEED_GPU` skips
/// the campaign and runs `THEN_ELSE` (or `THEN` without it) at once, each
/// script with its own `OUT` and a budget.
#[test]
fn campaign_calls_run_then_else_on_another_card() {
    let dir = std::env::temp_dir().join(format!("gvr-campaign-calls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let script = |name: &str| {
        let path = dir.join(format!("{name}.sh"));
        std::fs::write(
            &path,
            format!("echo \"{name} ran, budget $BUDGET_S\" > \"$OUT/ran\"\n"),
        )
        .expect("write script");
        path
    };
    let (then, then_else) = (script("then_call"), script("else_call"));
    let run = |with_else: bool| {
        let out = dir.join(if with_else { "out_else" } else { "out_then" });
        let mut cmd = std::process::Command::new("bash");
        cmd.arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/h200_campaign_calls.sh"
        ))
        .env("OUT", &out)
        .env("NEED_GPU", "no-such-gpu")
        .env("CALL_S", "200")
        .env("THEN", &then);
        if with_else {
            cmd.env("THEN_ELSE", &then_else);
        }
        let status = cmd.status().expect("run bash");
        assert!(status.success(), "{status}");
        out
    };
    let out = run(true);
    let ran = std::fs::read_to_string(out.join("else_call/ran")).expect("THEN_ELSE ran");
    assert!(ran.starts_with("else_call ran, budget 1"), "{ran}");
    assert!(!out.join("then_call").exists(), "THEN ran too");
    let out = run(false);
    assert!(out.join("then_call/ran").exists(), "THEN did not run");
    std::fs::remove_dir_all(&dir).ok();
}

/// Cell names written out in the device call scripts (`--cells NAME`, and
/// `for cell in A B; do` lists) are cells of grids/dsa886.csv: a typo would
/// cost a device call.
#[test]
fn cells_named_in_call_scripts_exist() {
    let grid = include_str!("../grids/dsa886.csv");
    let cells: std::collections::HashSet<&str> = grid
        .lines()
        .skip(1)
        .filter_map(|line| line.split(',').next())
        .collect();
    assert!(cells.len() > 800, "{} cells", cells.len());
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts");
    let mut named = Vec::new();
    for entry in std::fs::read_dir(dir).expect("scripts dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "sh") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read script");
        for line in text.lines() {
            let mut words = line.split_whitespace().peekable();
            while let Some(word) = words.next() {
                if word == "--cells" {
                    if let Some(next) = words.peek() {
                        named.push((path.clone(), next.to_string()));
                    }
                }
            }
            if let Some(list) = line.trim().strip_prefix("for cell in ") {
                let list = list.split(';').next().unwrap_or("");
                named.extend(
                    list.split_whitespace()
                        .map(|c| (path.clone(), c.to_string())),
                );
            }
        }
    }
    let literal: Vec<_> = named
        .iter()
        .filter(|(_, cell)| !cell.starts_with(['$', '"']))
        .collect();
    assert!(!literal.is_empty(), "no literal cell found: {named:?}");
    for (path, cell) in literal {
        assert!(
            cells.contains(cell.as_str()),
            "{}: cell `{cell}` is not in grids/dsa886.csv",
            path.display()
        );
    }
}
