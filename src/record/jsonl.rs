//! Append-only JSON-lines files of a run directory (`results.jsonl`,
//! `floor.jsonl`): one line per record, written with one call and flushed,
//! so a killed run leaves every finished record readable. A partial last
//! line is cut when the file is reopened for appending and skipped (with a
//! warning) when it is read.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{GvrError, Result};

pub struct JsonlWriter {
    path: PathBuf,
    file: File,
}

impl JsonlWriter {
    /// Open `path` for appending (created if missing), after cutting a
    /// partial last line.
    pub fn open(path: &Path) -> Result<JsonlWriter> {
        cut_torn_tail(path)?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| GvrError::io(path, e))?;
        Ok(JsonlWriter {
            path: path.to_path_buf(),
            file,
        })
    }

    pub fn append<T: Serialize>(&mut self, record: &T) -> Result<()> {
        let mut line = serde_json::to_string(record).map_err(|e| GvrError::Other(e.into()))?;
        line.push('\n');
        // One write call per record keeps lines whole even if two writers raced.
        self.file
            .write_all(line.as_bytes())
            .and_then(|_| self.file.flush())
            .map_err(|e| GvrError::io(&self.path, e))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Cut a partial last line (a run killed mid-write) off `path`, so the next
/// record starts on a fresh line instead of being glued to garbage. A
/// missing file is nothing to repair.
pub fn cut_torn_tail(path: &Path) -> Result<()> {
    let Ok(bytes) = std::fs::read(path) else {
        return Ok(());
    };
    if bytes.is_empty() || bytes.ends_with(b"\n") {
        return Ok(());
    }
    let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| GvrError::io(path, e))?;
    file.set_len(keep as u64)
        .map_err(|e| GvrError::io(path, e))?;
    tracing::warn!("{}: dropped a truncated last record", path.display());
    Ok(())
}

/// Every record of `path`. A truncated last line (a run killed mid-write) is
/// skipped with a warning; any other bad line is an error naming the line.
pub fn read_lines<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let text = std::fs::read_to_string(path).map_err(|e| GvrError::io(path, e))?;
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<T>(line) {
            Ok(r) => out.push(r),
            Err(e) if i + 1 == lines.len() && !text.ends_with('\n') => {
                tracing::warn!("{}: ignoring truncated last line: {e}", path.display());
            }
            Err(e) => {
                return Err(GvrError::input(
                    path,
                    format!("line {}", i + 1),
                    e.to_string(),
                ));
            }
        }
    }
    Ok(out)
}
