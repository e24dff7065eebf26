//! Reading and writing grid files (`grids/*.csv`): one [`CellMeta`] per line
//! under the header `cell,model,isl,layer,n,k,cr,next_n`.

use std::collections::HashMap;
use std::path::Path;

use crate::capture::{CellMeta, Model};
use crate::error::{GvrError, Result};

/// The exact header every grid file starts with.
pub const GRID_HEADER: [&str; 8] = ["cell", "model", "isl", "layer", "n", "k", "cr", "next_n"];

/// Largest MTP depth accepted in a grid file (upstream uses 1–4).
const MAX_NEXT_N: u32 = 16;

/// Load and validate a grid file. Every error names the file, the line and
/// the field (exit code 2).
pub fn load_grid(path: &Path) -> Result<Vec<CellMeta>> {
    let text = std::fs::read_to_string(path).map_err(|e| GvrError::io(path, e))?;
    parse_grid(path, &text)
}

/// Parse grid-file text; `path` is only used in error messages.
pub fn parse_grid(path: &Path, text: &str) -> Result<Vec<CellMeta>> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut records = reader.records();
    let header = match records.next() {
        Some(rec) => rec.map_err(|e| csv_error(path, e))?,
        None => return Err(GvrError::input(path, "header", "empty grid file")),
    };
    if header.iter().ne(GRID_HEADER.iter().copied()) {
        return Err(GvrError::input(
            path,
            "line 1: header",
            format!(
                "expected `{}`, found `{}`",
                GRID_HEADER.join(","),
                header.iter().collect::<Vec<_>>().join(",")
            ),
        ));
    }

    let mut cells = Vec::new();
    let mut first_line_of_id: HashMap<String, u64> = HashMap::new();
    for rec in records {
        let rec = rec.map_err(|e| csv_error(path, e))?;
        let line = rec.position().map(|p| p.line()).unwrap_or(0);
        let field_err = |field: &str, message: String| {
            GvrError::input(path, format!("line {line}: {field}"), message)
        };
        if rec.len() != GRID_HEADER.len() {
            return Err(field_err(
                "record",
                format!("expected {} fields, found {}", GRID_HEADER.len(), rec.len()),
            ));
        }
        let get = |i: usize| rec.get(i).unwrap_or("");
        let parse_u32 = |i: usize| -> Result<u32> {
            get(i).parse::<u32>().map_err(|_| {
                field_err(
                    GRID_HEADER[i],
                    format!("`{}` is not a non-negative integer", get(i)),
                )
            })
        };

        let id = get(0).to_string();
        if id.is_empty() {
            return Err(field_err("cell", "empty cell id".into()));
        }
        let model = Model::parse(get(1)).ok_or_else(|| {
            field_err(
                "model",
                format!("unknown model `{}` (expected v32, flash or pro)", get(1)),
            )
        })?;
        let isl = get(2).to_string();
        if isl.is_empty() {
            return Err(field_err("isl", "empty ISL rung label".into()));
        }
        let layer = parse_u32(3)?;
        let n = parse_u32(4)?;
        if n == 0 {
            return Err(field_err("n", "row width must be at least 1".into()));
        }
        let k = parse_u32(5)?;
        if ![512, 1024, 2048].contains(&k) {
            return Err(field_err(
                "k",
                format!("K = {k} is not one of 512, 1024, 2048"),
            ));
        }
        if k as usize != model.k() {
            return Err(field_err(
                "k",
                format!("K = {k} does not match model {model} (K = {})", model.k()),
            ));
        }
        let cr = parse_u32(6)?;
        if cr != model.compress_ratio() {
            return Err(field_err(
                "cr",
                format!(
                    "cr = {cr} does not match model {model} (cr = {})",
                    model.compress_ratio()
                ),
            ));
        }
        let next_n = parse_u32(7)?;
        if next_n == 0 || next_n > MAX_NEXT_N {
            return Err(field_err(
                "next_n",
                format!("next_n = {next_n} is not in [1, {MAX_NEXT_N}]"),
            ));
        }
        if let Some(first) = first_line_of_id.insert(id.clone(), line) {
            return Err(field_err(
                "cell",
                format!("duplicate cell id `{id}` (first on line {first})"),
            ));
        }
        cells.push(CellMeta {
            id,
            model,
            isl,
            layer,
            n,
            k,
            cr,
            next_n,
        });
    }
    if cells.is_empty() {
        return Err(GvrError::input(
            path,
            "cells",
            "grid file has a header but no cells",
        ));
    }
    Ok(cells)
}

/// The grid-file text for `cells` (header + one line per cell, `\n` endings).
pub fn grid_csv_string(cells: &[CellMeta]) -> String {
    let mut s = GRID_HEADER.join(",");
    s.push('\n');
    for c in cells {
        s.push_str(&format!(
            "{},{},{},{},{},{},{},{}\n",
            c.id,
            c.model.name(),
            c.isl,
            c.layer,
            c.n,
            c.k,
            c.cr,
            c.next_n
        ));
    }
    s
}

/// Write `cells` as a grid file.
pub fn write_grid(path: &Path, cells: &[CellMeta]) -> Result<()> {
    std::fs::write(path, grid_csv_string(cells)).map_err(|e| GvrError::io(path, e))
}

fn csv_error(path: &Path, e: csv::Error) -> GvrError {
    let field = match e.position() {
        Some(p) => format!("line {}", p.line()),
        None => "csv".to_string(),
    };
    GvrError::input(path, field, e.to_string())
}
