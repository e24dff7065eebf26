//! Validating loader and writer for capture sets (captures/FORMAT.md).
//! Owner: capture helper. Every error names the file and the field.

use std::path::{Path, PathBuf};

use super::format::{CellData, Manifest, ManifestCell};
use crate::error::{GvrError, Result};

/// An opened capture set: the manifest is read and checked eagerly, cells are
/// loaded (and validated) on demand so a grid run touches only what it needs.
#[derive(Debug, Clone)]
pub struct CaptureSet {
    pub dir: PathBuf,
    pub manifest: Manifest,
}

impl CaptureSet {
    pub fn open(dir: &Path) -> Result<CaptureSet> {
        Err(GvrError::input(dir, "manifest.json", "loader not implemented yet"))
    }

    pub fn cell(&self, id: &str) -> Option<&ManifestCell> {
        self.manifest.cells.iter().find(|c| c.meta.id == id)
    }

    pub fn load_cell(&self, entry: &ManifestCell) -> Result<CellData> {
        Err(GvrError::input(self.dir.join(&entry.file), "cell", "loader not implemented yet"))
    }
}

/// Write one cell file (`<dir>/<file>`); used by `capture synth` and the importer.
pub fn write_cell(_dir: &Path, _file: &str, _cell: &CellData) -> Result<()> {
    Err(GvrError::Usage("writer not implemented yet".into()))
}

/// Write `<dir>/manifest.json`.
pub fn write_manifest(_dir: &Path, _manifest: &Manifest) -> Result<()> {
    Err(GvrError::Usage("writer not implemented yet".into()))
}
