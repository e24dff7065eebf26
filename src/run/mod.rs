//! The campaign loop: cases × arms, progress, streaming results, resume,
//! shards. A run directory holds `manifest.json` (environment) and
//! `results.jsonl` (one `CaseRecord` per line, appended as cases finish).

pub mod record;

pub use record::CaseRecord;
