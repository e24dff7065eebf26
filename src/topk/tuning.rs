//! Tuning: every knob of the self-sampling kernels and of their plans, with
//! its kind, range and default, in one table ([`KNOBS`]); and [`Tuning`], the
//! typed set of values one arm instance runs with, parsed once from the
//! command line (`--knob NAME=VALUE`, `--tune FILE.toml`) and passed in.
//!
//! Two sorts of knob share the table:
//! - kernel macros (`SS_L2_DIST`, `CL_MERGE_SPREAD`, ...): the `#ifndef`
//!   defaults in `kernels/ss/knobs.cuh` (a test checks both agree); a value
//!   given here is passed as `-DNAME=VALUE` to every build of the sources the
//!   knob belongs to and wins over what the plan would set;
//! - host knobs (`main.r`, `reg.entry`, ...): they change the plan, not the
//!   kernel text.
//!
//! Production knobs are listed for reference only: the plan sets them per
//! launch, and a value given for one is refused.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use crate::error::{GvrError, Result};
use crate::gpu::sources::{Defines, KernelSource};

/// What a knob is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Set by the plan per launch; not settable.
    Production,
    /// A measured choice that an experiment may override.
    Tuning,
    /// Changes what is measured or recorded, never the result.
    Diagnostic,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Production => "production",
            Kind::Tuning => "tuning",
            Kind::Diagnostic => "diagnostic",
        }
    }
}

/// Which code a knob acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every self-sampling kernel source (kernels/ss/common.cuh).
    AllFamilies,
    /// kernels/ss/main.cu and the main family's plan.
    Main,
    /// kernels/ss/reg.cu and the register family's plan.
    Reg,
    /// kernels/ss/clus.cu and the clustered streaming family's plan.
    Clus,
    /// kernels/ss/reg_clus.cu and the clustered register family's plan.
    RegClus,
    /// The `ss` arms as a whole.
    Arm,
    /// The latency floor (`grid --floor`).
    Floor,
}

impl Scope {
    pub fn name(self) -> &'static str {
        match self {
            Scope::AllFamilies => "ss kernels",
            Scope::Main => "main",
            Scope::Reg => "reg",
            Scope::Clus => "clus",
            Scope::RegClus => "reg_clus",
            Scope::Arm => "ss arms",
            Scope::Floor => "floor",
        }
    }

    /// Whether a kernel macro of this scope is compiled into `source`.
    fn builds(self, source: &KernelSource) -> bool {
        match self {
            Scope::AllFamilies => source.name.starts_with("ss/"),
            Scope::Main => source.name == "ss/main.cu",
            Scope::Reg => source.name == "ss/reg.cu",
            Scope::Clus => source.name == "ss/clus.cu",
            Scope::RegClus => source.name == "ss/reg_clus.cu",
            Scope::Arm | Scope::Floor => false,
        }
    }
}

/// The values a knob takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    /// An integer in `[lo, hi]`.
    Int(i64, i64),
    /// One of these words.
    Words(&'static [&'static str]),
    /// Free text, checked by the code that reads it.
    Text,
}

impl fmt::Display for Values {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Values::Int(lo, hi) => write!(f, "{lo}..={hi}"),
            Values::Words(words) => write!(f, "{}", words.join("|")),
            Values::Text => write!(f, "text"),
        }
    }
}

/// One knob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Knob {
    pub name: &'static str,
    pub kind: Kind,
    pub scope: Scope,
    /// Whether the knob is a kernel macro (`-DNAME=VALUE`), else a host knob.
    pub macro_: bool,
    pub values: Values,
    /// The value without the knob: a kernel macro's `#ifndef` default, or
    /// what the plan does (`route`).
    pub default: &'static str,
    pub doc: &'static str,
}

const fn kernel(
    name: &'static str,
    kind: Kind,
    scope: Scope,
    lo: i64,
    hi: i64,
    default: &'static str,
    doc: &'static str,
) -> Knob {
    Knob {
        name,
        kind,
        scope,
        macro_: true,
        values: Values::Int(lo, hi),
        default,
        doc,
    }
}

const fn host(
    name: &'static str,
    kind: Kind,
    scope: Scope,
    values: Values,
    default: &'static str,
    doc: &'static str,
) -> Knob {
    Knob {
        name,
        kind,
        scope,
        macro_: false,
        values,
        default,
        doc,
    }
}

use Kind::{Diagnostic, Production, Tuning as Tune};
use Scope::{AllFamilies, Arm, Clus, Floor, Main, Reg, RegClus};

/// Compiled register entries `reg.entry` may name (`ss_reg_b<BLK>_v<VPT>`,
/// `ss_regimg_b1024_v1`).
pub const REG_ENTRY_NAMES: &[&str] = &[
    "ss_reg_b256_v1",
    "ss_reg_b512_v1",
    "ss_reg_b1024_v1",
    "ss_reg_b512_v2",
    "ss_reg_b1024_v4",
    "ss_reg_b512_v4",
    "ss_reg_b1024_v2",
    "ss_regimg_b1024_v1",
];

/// Every knob, kernel macros first (in kernels/ss/knobs.cuh order).
pub static KNOBS: &[Knob] = &[
    kernel("SS_PHASE_PROBE", Diagnostic, AllFamilies, 0, 1, "0", "SM clock stamps at every phase mark (set by `gvr-bench phases`)"),
    kernel("SS_WALK_SYNC", Tune, AllFamilies, 0, 1, "1", "reconverge the warp after a survivor walk"),
    kernel("SS_L2_DIST", Tune, Main, 0, 8, "0", "tiles ahead of the classified tile bulk-prefetched into L2 (0: none)"),
    kernel("SS_L2_START", Tune, Main, 0, 8, "1", "tiles of the slice prefetched into L2 once the sample arrived"),
    kernel("SS_L2_START_SPLIT", Tune, Main, 0, 1, "1", "SPLIT parts also prefetch their first tile(s)"),
    kernel("SS_PFD", Tune, Main, -1, 8, "-1", "float4 per thread of the next tile issued before the walk (-1: per entry)"),
    kernel("SS_MAIN_STAGE_OUT", Tune, Main, 0, 2, "2", "indices: 0 direct, 1 staged, 2 staged where k >= 2048 or k >= 4*BLK"),
    kernel("SS_MAIN_SAMPLE_AHEAD", Tune, Main, 0, 1, "1", "first sample unit loaded before the row length arrives"),
    kernel("SS_SLAB_WAIT_BATCH", Tune, Main, 1, 8, "4", "slab words per thread the SPLIT finisher loads together"),
    kernel("SS_THRESHOLD_TRIM", Tune, Main, 0, 3, "2", "bit 1 one-CTA / bit 2 SPLIT: exact 1/256 ladder width, one barrier fewer"),
    kernel("SS_SCAN_FORM", Tune, Main, 0, 3, "2", "bit 1 one-CTA / bit 2 SPLIT: the 256-bin scan finds crossings by counting"),
    kernel("SS_WAVE_STAGGER", Tune, Main, 0, 200_000, "36000", "wave stagger of the BLK 512 many-rows entry, SM cycles (0: off)"),
    kernel("SS_WAVE_STAGGER_256", Tune, Main, 0, 200_000, "0", "wave stagger of the BLK 256 many-rows entry, SM cycles"),
    kernel("SS_WAVE_SMS", Production, Main, 1, 1024, "132", "the device's SM count (the host sets it)"),
    kernel("SS_WAVE_MIN_TENTHS", Tune, Main, 10, 100, "19", "fewest waves (tenths) a launch staggers at"),
    kernel("SS_WAVE_FULL_N", Tune, Main, 0, 1 << 20, "65536", "rows shorter than this wait in proportion to their length"),
    kernel("SS_ROW_U", Tune, Main, 1, 8, "8", "float4 per thread and tile of the many-rows entries"),
    kernel("SS_NEXT_WAVE_PREFETCH", Production, Reg, 0, 1, "1", "next-wave L2 prefetch compiled in (the plan builds 0 where it prefetches nothing)"),
    kernel("SS_REG_EMIT_FORM", Production, Reg, 0, 2, "2", "emit forms compiled: 0 slots, 1 cursors, 2 both (the plan builds the launch's own)"),
    kernel("SS_REG_HINTS_FIRST", Tune, Reg, 0, 1, "0", "VPT 4 entries load their first hints before the row (the plan's per launch); a value replaces the plan's"),
    kernel("SS_REG_ROW_AHEAD", Tune, Reg, 0, 1, "0", "row loads issued before the row length arrives (the plan's per launch); a value replaces the plan's"),
    kernel("SS_REG_HINT_NC", Tune, Reg, 0, 1, "0", "hint index loads through the read-only path"),
    kernel("SS_REG_EMIT_MASK", Tune, Reg, 0, 2, "1", "slots emit from bit masks (1: 64-register entries, 2: also 512/2); a value replaces the plan's"),
    kernel("SS_REG_STAGE_OUT", Production, Reg, 0, 2, "0", "slots emit staged in shared memory: 0 direct, 1 histogram, 2 extra words"),
    kernel("SS_REG_DROP_MAX", Tune, Reg, 0, 8, "4", "rows of n <= k + this drop their n - k smallest (0: never); a value replaces the plan's"),
    kernel("SS_REG_KEEP_BIN", Tune, Reg, 0, 1, "0", "the histogram keeps bins in the registers, the emit reads them, later values come again from global memory (the plan's per launch); a value replaces the plan's"),
    kernel("SS_NEXT_WAVE_ONE", Tune, Reg, 0, 1, "1", "the next-wave prefetch of the one-CTA-per-SM entries as one request from thread 0 (row, then hints); 0: one share per warp"),
    kernel("SS_REG_MASK_PACKED", Tune, Reg, 0, 1, "1", "with kept bins, the mask-slots emit keeps two bins per register and classifies a pair with one add per mask, no per-float4 guard"),
    kernel("SS_REG_RANK_WARP", Tune, Reg, 0, 1, "0", "reg ranks a small crossing bin with one warp per candidate (a ballot per 32 others), not one thread per candidate (not in 1024/1)"),
    kernel("CL_L2_NEXT", Tune, Clus, 0, 1, "1", "each warp prefetches its share of the next chunk into L2"),
    kernel("CL_L2_FIRST", Tune, Clus, 0, 1, "1", "the first chunk prefetched at kernel start"),
    kernel("CL_SAMPLE_AHEAD", Tune, Clus, 0, 1, "1", "first sample half-unit loaded before the row length arrives"),
    kernel("CL_THRESHOLD_TRIM", Tune, Clus, 0, 1, "1", "exact 1/256 ladder width, one barrier fewer"),
    kernel("CL_SCAN_FORM", Tune, Clus, 0, 1, "1", "the 256-bin scan finds crossings by counting"),
    kernel("CL_MERGE_SPREAD", Tune, Clus, 0, 1, "0", "cross-rank merge reads spread over the CTA (the plan sets 1 for CS 8); a value replaces the plan's"),
    kernel("RC_LOCAL_REFINE", Tune, RegClus, 0, 1, "1", "rank 0 refines candidates that all sit in its own shared memory with plain loads; the peers leave at (C), no final barrier"),
    kernel("RC_COARSE_MERGE", Tune, RegClus, 0, 1, "0", "the crossing from two small DSMEM rounds (group counts, then the crossing group's bins) instead of merging every bin; winners placed by rank (the plan sets 1 for CS 8); a value replaces the plan's"),
    host("main.r", Tune, Main, Values::Int(1, 1024), "route", "CTAs per row of every main launch (above 1 only for <= 160 rows)"),
    host("main.blk", Tune, Main, Values::Words(&["256", "512"]), "route", "block of one-CTA-per-row U 8 main launches"),
    host("main.aim8", Tune, Main, Values::Int(8, 64), "route", "main survivor aim in eighths of k"),
    host("main.amin8", Tune, Main, Values::Int(8, 64), "route", "main SPLIT aim floor in eighths of k"),
    host("main.sfac", Tune, Main, Values::Int(8, 512), "route", "main sample points expected above the rung"),
    host("main.floor", Tune, Main, Values::Int(1, 1024), "route", "C of the main aim floor round(sqrt(C*n))"),
    host("main.unit", Tune, Main, Values::Words(&["8", "16"]), "route", "values per scattered main sample read"),
    host("clus.aim8", Tune, Clus, Values::Int(8, 64), "route", "clus survivor aim in eighths of k"),
    host("clus.amin8", Tune, Clus, Values::Int(8, 64), "route", "clus aim floor in eighths of k"),
    host("clus.sfac", Tune, Clus, Values::Int(8, 512), "route", "clus sample points expected above the rung"),
    host("reg.entry", Tune, Reg, Values::Words(REG_ENTRY_NAMES), "route", "register entry: `ss-reg` every shape it holds, `ss` every shape the route gives reg"),
    host("reg.emit", Tune, Reg, Values::Words(&["slots", "cur"]), "route", "emit form of every register launch"),
    host("ss.slowdown", Diagnostic, Arm, Values::Words(&["0", "1"]), "0", "a wasted read pass before every ss launch (proves the nightly gate catches a regression)"),
    host("floor.extra", Diagnostic, Floor, Values::Text, "", "extra floor shapes: b<BLOCK> or b<BLOCK>:<STAGES>x<CHUNK>, comma separated"),
    host("floor.screen", Tune, Floor, Values::Int(0, 64), "3", "cold reps of the floor's screen of every shape; the fastest few then get the full protocol (0: every shape gets it)"),
];

/// The knob called `name`.
pub fn knob(name: &str) -> Option<&'static Knob> {
    KNOBS.iter().find(|k| k.name == name)
}

/// `gvr-bench knobs`: the table, one knob per line.
pub fn knobs_table() -> String {
    let mut out = String::from(
        "| knob | kind | acts on | values | default | what |\n|---|---|---|---|---|---|\n",
    );
    for k in KNOBS {
        let name = if k.macro_ {
            format!("`{}` (macro)", k.name)
        } else {
            format!("`{}`", k.name)
        };
        out.push_str(&format!(
            "| {name} | {} | {} | {} | {} | {} |\n",
            k.kind.name(),
            k.scope.name(),
            k.values,
            if k.default.is_empty() { "-" } else { k.default },
            k.doc
        ));
    }
    out
}

/// The knob values one arm instance runs with (none: production).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tuning {
    values: BTreeMap<&'static str, String>,
}

fn usage(message: String) -> GvrError {
    GvrError::Usage(message)
}

impl Tuning {
    /// No knob set: what production runs.
    pub fn production() -> Tuning {
        Tuning::default()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Set knob `name` to `value`, checked against the table.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        let knob = knob(name).ok_or_else(|| {
            usage(format!(
                "`{name}` is not a knob (`gvr-bench knobs` lists them)"
            ))
        })?;
        if knob.kind == Kind::Production {
            return Err(usage(format!(
                "{name} is set by the plan for every launch and cannot be given (`gvr-bench knobs`)"
            )));
        }
        if name == "SS_PHASE_PROBE" {
            return Err(usage(
                "SS_PHASE_PROBE is set by `gvr-bench phases`, not by a knob".into(),
            ));
        }
        let value = value.trim();
        let ok = match knob.values {
            Values::Int(lo, hi) => value.parse::<i64>().is_ok_and(|v| (lo..=hi).contains(&v)),
            Values::Words(words) => words.contains(&value),
            Values::Text => true,
        };
        if !ok {
            return Err(usage(format!(
                "{name} takes {}, got `{value}`",
                match knob.values {
                    Values::Int(lo, hi) => format!("an integer in [{lo}, {hi}]"),
                    Values::Words(words) => format!("one of {}", words.join(", ")),
                    Values::Text => "text".into(),
                }
            )));
        }
        self.values.insert(knob.name, value.to_string());
        Ok(())
    }

    /// Apply `NAME=VALUE` (a `--knob` argument).
    pub fn set_assignment(&mut self, item: &str) -> Result<()> {
        let (name, value) = item
            .split_once('=')
            .ok_or_else(|| usage(format!("--knob `{item}` is not NAME=VALUE")))?;
        self.set(name.trim(), value)
    }

    /// Apply every `name = value` of a TOML table (a `--tune` file, or one
    /// variant of an experiment).
    pub fn set_table(&mut self, table: &toml::Table, origin: &str) -> Result<()> {
        for (name, value) in table {
            let text = match value {
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::String(s) => s.clone(),
                toml::Value::Boolean(b) => u32::from(*b).to_string(),
                other => {
                    return Err(usage(format!(
                        "{origin}: {name} = {other} is not an integer, a word or a boolean"
                    )))
                }
            };
            self.set(name, &text)
                .map_err(|e| usage(format!("{origin}: {e}")))?;
        }
        Ok(())
    }

    /// Read a `--tune` file: a TOML table of `KNOB = value` lines.
    pub fn from_file(path: &Path) -> Result<Tuning> {
        let text = std::fs::read_to_string(path).map_err(|e| GvrError::io(path, e))?;
        let table: toml::Table = text
            .parse()
            .map_err(|e| GvrError::input(path, "--tune", format!("not TOML: {e}")))?;
        let mut tuning = Tuning::default();
        tuning.set_table(&table, &path.display().to_string())?;
        Ok(tuning)
    }

    /// The tuning of `--tune FILE` (if any) then every `--knob` over it.
    pub fn from_args(file: Option<&Path>, knobs: &[String]) -> Result<Tuning> {
        let mut tuning = match file {
            Some(path) => Tuning::from_file(path)?,
            None => Tuning::default(),
        };
        for item in knobs {
            tuning.set_assignment(item)?;
        }
        Ok(tuning)
    }

    /// The value of knob `name`, if set.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// An integer knob's value, if set.
    pub fn int(&self, name: &str) -> Option<i64> {
        self.get(name).and_then(|v| v.parse().ok())
    }

    /// The kernel macros set for `source`: appended to a build's defines,
    /// each replacing what the plan would set under the same name.
    pub fn macros_for(&self, source: &KernelSource) -> Defines {
        self.values
            .iter()
            .filter_map(|(name, value)| {
                let k = knob(name)?;
                (k.macro_ && k.scope.builds(source)).then(|| (k.name, value.clone()))
            })
            .collect()
    }

    /// `defines` (a plan's) with this tuning's macros for `source` on top.
    pub fn over(&self, source: &KernelSource, mut defines: Defines) -> Defines {
        let mine = self.macros_for(source);
        defines.retain(|(name, _)| !mine.iter().any(|(m, _)| m == name));
        defines.extend(mine);
        defines
    }

    /// Whether macro `name` is set (the plan then leaves it alone).
    pub fn sets(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }

    /// The knobs that act on `scope`, as a variant suffix ` +NAME=VALUE...`.
    pub fn label(&self, scopes: &[Scope]) -> String {
        self.values
            .iter()
            .filter(|(name, _)| knob(name).is_some_and(|k| scopes.contains(&k.scope)))
            .map(|(name, value)| format!(" +{name}={value}"))
            .collect()
    }

    /// Every knob set, `NAME=VALUE` (for manifests).
    pub fn assignments(&self) -> Vec<String> {
        self.values
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::sources::{SS_KNOBS, SS_MAIN, SS_REG};

    #[test]
    fn every_kernel_knob_matches_its_ifndef_default_and_back() {
        for k in KNOBS.iter().filter(|k| k.macro_) {
            let line = format!("#ifndef {}\n#define {} {}", k.name, k.name, k.default);
            let found =
                SS_KNOBS.contains(&format!("{line}\n")) || SS_KNOBS.contains(&format!("{line}u\n"));
            assert!(found, "knobs.cuh lacks `{line}`");
        }
        for line in SS_KNOBS.lines() {
            if let Some(name) = line.strip_prefix("#ifndef ") {
                assert!(
                    knob(name.trim()).is_some_and(|k| k.macro_),
                    "{name} of knobs.cuh is not in KNOBS"
                );
            }
        }
    }

    #[test]
    fn no_kernel_file_defaults_a_knob_itself() {
        for source in crate::gpu::sources::ALL {
            for k in KNOBS.iter().filter(|k| k.macro_) {
                assert!(
                    !source.code.contains(&format!("#ifndef {}\n", k.name)),
                    "{} defaults {} itself; defaults live in kernels/ss/knobs.cuh",
                    source.name,
                    k.name
                );
            }
        }
    }

    #[test]
    fn values_are_checked_and_production_knobs_refused() {
        let mut t = Tuning::default();
        t.set("SS_L2_DIST", "1").unwrap();
        assert!(t
            .set("SS_L2_DIST", "9")
            .unwrap_err()
            .to_string()
            .contains("[0, 8]"));
        assert!(t
            .set("SS_WAVE_SMS", "8")
            .unwrap_err()
            .to_string()
            .contains("set by the plan"));
        assert!(t
            .set("SS_BINS", "1")
            .unwrap_err()
            .to_string()
            .contains("not a knob"));
        assert!(t
            .set("reg.emit", "both")
            .unwrap_err()
            .to_string()
            .contains("slots, cur"));
        assert!(t
            .set_assignment("SS_PFD")
            .unwrap_err()
            .to_string()
            .contains("NAME=VALUE"));
        t.set("reg.emit", "cur").unwrap();
        assert_eq!(t.get("reg.emit"), Some("cur"));
        assert_eq!(t.int("SS_L2_DIST"), Some(1));
    }

    #[test]
    fn macros_reach_only_their_sources_and_replace_the_plans() {
        let mut t = Tuning::default();
        t.set("SS_L2_DIST", "2").unwrap();
        t.set("SS_REG_DROP_MAX", "0").unwrap();
        t.set("SS_WALK_SYNC", "0").unwrap();
        t.set("main.r", "4").unwrap();
        assert_eq!(
            t.macros_for(&SS_MAIN),
            vec![
                ("SS_L2_DIST", "2".to_string()),
                ("SS_WALK_SYNC", "0".to_string())
            ]
        );
        let plan = vec![
            ("SS_REG_DROP_MAX", "4".to_string()),
            ("SS_REG_EMIT_FORM", "1".to_string()),
        ];
        assert_eq!(
            t.over(&SS_REG, plan),
            vec![
                ("SS_REG_EMIT_FORM", "1".to_string()),
                ("SS_REG_DROP_MAX", "0".to_string()),
                ("SS_WALK_SYNC", "0".to_string())
            ]
        );
        assert_eq!(t.label(&[Scope::Main]), " +SS_L2_DIST=2 +main.r=4");
    }

    #[test]
    fn a_tune_file_is_read_and_its_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("t.toml");
        std::fs::write(&good, "SS_L2_DIST = 1\n\"reg.emit\" = \"cur\"\n").unwrap();
        let t = Tuning::from_args(Some(&good), &["SS_L2_DIST=3".into()]).unwrap();
        assert_eq!(t.get("SS_L2_DIST"), Some("3"));
        assert_eq!(t.get("reg.emit"), Some("cur"));
        let bad = dir.path().join("b.toml");
        std::fs::write(&bad, "SS_L2_DIST = 99\n").unwrap();
        let err = Tuning::from_file(&bad).unwrap_err().to_string();
        assert!(err.contains("b.toml") && err.contains("[0, 8]"), "{err}");
        std::fs::write(&bad, "SS_L2_DIST = [1]\n").unwrap();
        assert!(Tuning::from_file(&bad).is_err());
        std::fs::write(&bad, "not toml at all =\n").unwrap();
        assert_eq!(Tuning::from_file(&bad).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn the_table_lists_every_knob() {
        let table = knobs_table();
        for k in KNOBS {
            assert!(table.contains(k.name), "{}", k.name);
        }
        assert!(table.contains("production") && table.contains("diagnostic"));
    }
}
