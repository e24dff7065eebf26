//! `gvr-bench experiment FILE.toml`: one run of a selection × arms × knob
//! variants, then the same-run A/B table of every variant against the base
//! variant (`stats::ab`). The experiment file replaces one-off device scripts:
//! it says what runs, and the run directory keeps what it measured.
//!
//! ```toml
//! base = "route"                 # the variant the others are compared with
//! arms = ["ss-main"]             # each runs once per variant, as ARM@VARIANT
//! also = ["radix"]               # arms run once, without variants (optional)
//! by = ["b", "k"]                # split the table by record fields (optional)
//! floor = true                   # also time each case's latency floor (optional)
//!
//! [selection]                    # the grid's selection flags, by name
//! segment = ["v32"]
//! n_min = 30000
//! batches = "256,512,1024"
//! sample = 450
//!
//! [variants.route]               # no knobs: production
//! [variants.l2d1]
//! SS_L2_DIST = 1
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::campaign::{run_grid, GridConfig, RunOutcome};
use crate::arms::registry::{self, Tunings};
use crate::error::{GvrError, Result};
use crate::grid::{RowsMode, Selection};
use crate::stats::ab::{ab_table, AbTable, FIELDS};
use crate::timing::Protocol;
use crate::topk::Tuning;

/// The selection of an experiment file (the grid's flags, by name).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelectionSpec {
    pub captures: Option<PathBuf>,
    pub grid: Option<PathBuf>,
    #[serde(default)]
    pub segment: Vec<String>,
    pub n_min: Option<u32>,
    pub n_max: Option<u32>,
    pub batches: Option<String>,
    #[serde(default)]
    pub cells: Vec<String>,
    pub limit: Option<usize>,
    pub sample: Option<usize>,
    pub rows: Option<String>,
}

/// An experiment file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentFile {
    pub base: Option<String>,
    pub arms: Vec<String>,
    #[serde(default)]
    pub also: Vec<String>,
    #[serde(default)]
    pub by: Vec<String>,
    /// Also time each case's latency floor in the same run (`grid --floor`),
    /// so `gvr-bench report RUN` sets every variant against it.
    #[serde(default)]
    pub floor: bool,
    #[serde(default)]
    pub selection: SelectionSpec,
    pub variants: BTreeMap<String, toml::Table>,
}

/// A checked experiment: what to run and with which knobs.
#[derive(Debug, Clone)]
pub struct Experiment {
    pub captures: PathBuf,
    pub grid: Option<PathBuf>,
    pub selection: Selection,
    pub base: String,
    /// Every arm instance, `ARM@VARIANT` then the `also` arms.
    pub arms: Vec<String>,
    pub tunings: Tunings,
    pub by: Vec<String>,
    pub floor: bool,
}

fn bad(path: &Path, message: String) -> GvrError {
    GvrError::input(path, "experiment", message)
}

impl Experiment {
    /// Read and check `path`.
    pub fn read(path: &Path) -> Result<Experiment> {
        let text = std::fs::read_to_string(path).map_err(|e| GvrError::io(path, e))?;
        let file: ExperimentFile = toml::from_str(&text).map_err(|e| bad(path, e.to_string()))?;
        Experiment::from_file(path, file)
    }

    fn from_file(path: &Path, file: ExperimentFile) -> Result<Experiment> {
        if file.variants.is_empty() {
            return Err(bad(path, "no [variants.NAME] table".into()));
        }
        if file.arms.is_empty() {
            return Err(bad(path, "`arms` is empty".into()));
        }
        let base = file
            .base
            .clone()
            .unwrap_or_else(|| file.variants.keys().next().cloned().unwrap_or_default());
        if !file.variants.contains_key(&base) {
            return Err(bad(
                path,
                format!("base variant `{base}` has no [variants.{base}] table"),
            ));
        }
        let mut variants = BTreeMap::new();
        for (name, table) in &file.variants {
            let mut tuning = Tuning::default();
            tuning.set_table(table, &format!("{} [variants.{name}]", path.display()))?;
            variants.insert(name.clone(), tuning);
        }
        for f in &file.by {
            if !FIELDS.contains(&f.as_str()) {
                return Err(bad(
                    path,
                    format!("by = `{f}` is not a record field ({})", FIELDS.join(", ")),
                ));
            }
        }
        let mut arms = Vec::new();
        for arm in &file.arms {
            for variant in file.variants.keys() {
                arms.push(format!("{arm}@{variant}"));
            }
        }
        arms.extend(file.also.iter().cloned());
        let arms = registry::parse_arm_list(&arms.join(","))?;
        let s = &file.selection;
        let rows = match s.rows.as_deref() {
            None | Some("replicate") => RowsMode::Replicate,
            Some("independent") => RowsMode::Independent,
            Some(other) => {
                return Err(bad(
                    path,
                    format!("rows = `{other}`: replicate or independent"),
                ))
            }
        };
        let selection = Selection {
            segments: s.segment.clone(),
            n_min: s.n_min,
            n_max: s.n_max,
            batches: s.batches.clone(),
            cell_globs: s.cells.clone(),
            limit: s.limit,
            shard: None,
            rows,
            sample: s.sample,
        };
        Ok(Experiment {
            captures: s
                .captures
                .clone()
                .unwrap_or_else(|| PathBuf::from("captures/sample")),
            grid: s.grid.clone(),
            selection,
            base,
            arms,
            tunings: Tunings {
                base: Tuning::default(),
                variants,
            },
            by: file.by,
            floor: file.floor,
        })
    }

    /// Run it into `run_dir` (continuing it with `resume`) and return the run's
    /// outcome with the A/B table of what it recorded.
    pub fn run(
        &self,
        run_dir: &Path,
        resume: bool,
        protocol: Protocol,
        device: usize,
        cpu_only: bool,
    ) -> Result<(RunOutcome, AbTable)> {
        let cfg = GridConfig {
            captures: self.captures.clone(),
            grid: self.grid.clone(),
            selection: self.selection.clone(),
            arms: Some(self.arms.clone()),
            run_dir: run_dir.to_path_buf(),
            resume,
            protocol,
            device,
            cpu_only,
            aa: None,
            bandwidth: false,
            floor: self.floor,
            tunings: self.tunings.clone(),
            timing: crate::timing::gpu::TimingChoice::Auto,
        };
        let outcome = run_grid(&cfg)?;
        let records = crate::record::read_records(&run_dir.join(crate::record::RESULTS_FILE))?;
        let table = ab_table(&records, &self.base, &self.by);
        let text = format!(
            "# Experiment A/B (same run, same inputs): speed of each variant vs `{}`\n\n\
             Speed = base time / variant time per case (mean of the cold reps); above 1\n\
             the variant is faster. Knobs per variant: see manifest.json.\n\n{table}",
            self.base
        );
        let path = run_dir.join("experiment.md");
        std::fs::write(&path, text).map_err(|e| GvrError::io(&path, e))?;
        Ok((outcome, table))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Experiment> {
        let file: ExperimentFile =
            toml::from_str(text).map_err(|e| bad(Path::new("x.toml"), e.to_string()))?;
        Experiment::from_file(Path::new("x.toml"), file)
    }

    #[test]
    fn every_committed_experiment_file_reads() {
        // A knob renamed or a default changed must not leave a worked example
        // that no longer parses or sets a knob that no longer exists.
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments");
        let mut read = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                Experiment::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                read += 1;
            }
        }
        assert!(read >= 4, "{read} experiment files in {}", dir.display());
    }

    #[test]
    fn a_file_names_arm_variants_and_their_knobs() {
        let e = parse(
            "base = \"route\"\narms = [\"ss-main\"]\nalso = [\"radix\"]\nby = [\"b\"]\n\
             [selection]\nbatches = \"1,2\"\nsample = 10\n\
             [variants.route]\n[variants.l2]\nSS_L2_DIST = 1\n\"main.blk\" = \"256\"\n",
        )
        .unwrap();
        assert_eq!(e.arms, ["ss-main@l2", "ss-main@route", "radix"]);
        assert_eq!(e.tunings.variants["l2"].get("SS_L2_DIST"), Some("1"));
        assert!(e.tunings.variants["route"].is_empty());
        assert_eq!(e.selection.batches.as_deref(), Some("1,2"));
        assert_eq!(e.captures, PathBuf::from("captures/sample"));
        assert!(!e.floor, "the floor is timed only when asked");
        let f = parse("floor = true\narms = [\"ss\"]\n[variants.a]\n").unwrap();
        assert!(f.floor);
    }

    #[test]
    fn mistakes_are_refused_with_a_reason() {
        for (text, says) in [
            (
                "arms = [\"ss-main\"]\n[variants.a]\nSS_L2_DIST = 99\n",
                "[0, 8]",
            ),
            (
                "arms = [\"ss-main\"]\nbase = \"b\"\n[variants.a]\n",
                "base variant `b`",
            ),
            ("arms = []\n[variants.a]\n", "`arms` is empty"),
            ("arms = [\"nope\"]\n[variants.a]\n", "unknown arm"),
            (
                "arms = [\"ss\"]\nby = [\"zz\"]\n[variants.a]\n",
                "not a record field",
            ),
            (
                "arms = [\"ss\"]\nbogus = 1\n[variants.a]\n",
                "unknown field",
            ),
            ("arms = [\"ss\"]\n", "variants"),
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.contains(says), "{text}: {err}");
        }
    }
}
