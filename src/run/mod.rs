//! The campaign loop: cases × arms, progress, streaming results, resume,
//! shards. A run directory holds `manifest.json` (environment) and
//! `results.jsonl` (one `CaseRecord` per line, appended as cases finish).

pub mod bandwidth;
pub mod campaign;
pub mod certify;
pub mod devices;
pub mod experiment;
pub mod merge;
pub mod peer;
pub mod phases;
pub mod prebuild;
pub mod selfcheck;
pub mod signals;

pub use campaign::{run_grid, GridConfig, RunOutcome};
pub use certify::{certify, CertifyConfig, CertifyOutcome};
pub use merge::{merge, MergeOutcome};
pub use phases::{phases, PhaseRecord, PhasesConfig};

use std::path::Path;

use crate::error::{GvrError, Result};

/// Create the output directory `dir` (and its parents) for a command's
/// `--out`; a path that exists as something other than a directory is the
/// user's input error, named as such, not an I/O failure.
pub fn create_out_dir(dir: &Path) -> Result<()> {
    // The nearest existing path of `dir` or its parents must be a directory.
    if let Some(existing) = dir.ancestors().find(|a| a.exists()) {
        if !existing.is_dir() {
            let what = if existing == dir {
                "exists and is not a directory; choose a new directory for the run".to_string()
            } else {
                format!(
                    "{} is not a directory, so --out cannot be created below it",
                    existing.display()
                )
            };
            return Err(GvrError::input(dir, "--out", what));
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| GvrError::io(dir, e))
}
