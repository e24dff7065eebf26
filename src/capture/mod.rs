//! Decode captures: the on-disk format, the validating loader, the realistic
//! synthetic generator, the calibration gates and `capture inspect`.
//! Format reference: docs/captures.md.

pub mod format;
pub mod inspect;
pub mod load;

pub use format::{CellData, CellMeta, Manifest, ManifestCell, Model, Source, FORMAT_VERSION};
pub use load::{write_atomically, CaptureSet};
