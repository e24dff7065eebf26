//! The campaign loop: cases × arms, progress, streaming results, resume,
//! shards. A run directory holds `manifest.json` (environment) and
//! `results.jsonl` (one `CaseRecord` per line, appended as cases finish).

pub mod bandwidth;
pub mod campaign;
pub mod certify;
pub mod deps;
pub mod devices;
pub mod jsonl;
pub mod merge;
pub mod peer;
pub mod phases;
pub mod record;
pub mod results;

pub use campaign::{run_grid, GridConfig, RunOutcome};
pub use certify::{certify, CertifyConfig, CertifyOutcome};
pub use merge::{merge, MergeOutcome};
pub use phases::{phases, PhaseRecord, PhasesConfig};
pub use record::CaseRecord;
pub use results::{completed_pairs, ResultsWriter, RESULTS_FILE};
