//! Validating loader and writer for capture sets (docs/captures.md).
//! Owner: capture helper. Every error names the file and the field.
//!
//! The loader trusts nothing on disk: every shape, dtype, metadata key and
//! index is checked before a `CellData` is handed out, so kernels and the
//! exactness checker may index rows without bounds surprises. The pad tail of
//! a row (`[n, npad)`) is never read as data.

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

use safetensors::tensor::{Dtype, TensorView};
use safetensors::SafeTensors;

use super::format::{CellData, CellMeta, Manifest, ManifestCell, Model, FORMAT_VERSION};
use crate::error::{GvrError, Result};

/// Name of the manifest inside a capture directory.
pub const MANIFEST_FILE: &str = "manifest.json";

/// The K values the kernels under test support.
pub const SUPPORTED_K: [usize; 3] = [512, 1024, 2048];

/// Refuse cell files whose declared tensors add up to more than this. Real
/// cells are ~100 MB; anything near this size is a corrupt header or a
/// mistake, and reading it would exhaust host memory.
pub const MAX_CELL_BYTES: u64 = 16 << 30;

/// Tensor names inside a cell file.
pub mod tensor_names {
    pub const LOGITS: &str = "logits";
    pub const N: &str = "n";
    pub const HINTS: &str = "hints";
    pub const TOPK: &str = "topk";
    pub const KV_LENS: &str = "kv_lens";
}

/// `__metadata__` keys inside a cell file.
pub mod meta_keys {
    pub const FORMAT_VERSION: &str = "format_version";
    pub const ID: &str = "id";
    pub const MODEL: &str = "model";
    pub const ISL: &str = "isl";
    pub const LAYER: &str = "layer";
    /// Optional: the nominal grid width (`CellMeta::n`). When absent the
    /// largest per-step `n` stands in for it.
    pub const NOMINAL_N: &str = "n";
    pub const K: &str = "k";
    pub const CR: &str = "cr";
    pub const NEXT_N: &str = "next_n";
    pub const PAD_VALUE: &str = "pad_value";
}

/// An opened capture set: the manifest is read and checked eagerly, cells are
/// loaded (and validated) on demand so a grid run touches only what it needs.
#[derive(Debug, Clone)]
pub struct CaptureSet {
    pub dir: PathBuf,
    pub manifest: Manifest,
}

impl CaptureSet {
    /// Read and validate `<dir>/manifest.json`. Checks the format version,
    /// duplicate ids, each entry's model/K/cr contract and npad, and that
    /// every cell file exists (cell contents are checked by `load_cell`).
    pub fn open(dir: &Path) -> Result<CaptureSet> {
        if !dir.is_dir() {
            return Err(GvrError::input(
                dir,
                "directory",
                "capture directory does not exist (make one with `gvr-bench capture synth`)",
            ));
        }
        let manifest_path = dir.join(MANIFEST_FILE);
        if !manifest_path.is_file() {
            return Err(GvrError::input(
                &manifest_path,
                MANIFEST_FILE,
                "missing: a capture set needs a manifest.json (see docs/captures.md)",
            ));
        }
        let text =
            std::fs::read_to_string(&manifest_path).map_err(|e| GvrError::io(&manifest_path, e))?;
        let manifest = parse_manifest(&manifest_path, &text)?;
        validate_manifest(dir, &manifest_path, &manifest)?;
        Ok(CaptureSet {
            dir: dir.to_path_buf(),
            manifest,
        })
    }

    pub fn cell(&self, id: &str) -> Option<&ManifestCell> {
        self.manifest.cells.iter().find(|c| c.meta.id == id)
    }

    /// Load one cell and check it fully, including agreement with its
    /// manifest entry.
    pub fn load_cell(&self, entry: &ManifestCell) -> Result<CellData> {
        let path = self.dir.join(&entry.file);
        let cell = read_cell_file(&path)?;
        check_entry_matches_file(&path, entry, &cell)?;
        // The manifest's nominal N is authoritative for the grid (a file
        // without the optional `n` metadata key falls back to max n[s]).
        let mut cell = cell;
        cell.meta.n = entry.meta.n;
        Ok(cell)
    }

    /// Load a cell by id; an unknown id is an input error naming the manifest.
    pub fn load_cell_by_id(&self, id: &str) -> Result<CellData> {
        let entry = self.cell(id).ok_or_else(|| {
            GvrError::input(
                self.dir.join(MANIFEST_FILE),
                "cells",
                format!("no cell with id {id:?} in this capture set"),
            )
        })?;
        self.load_cell(entry)
    }
}

/// Open a capture set and load every cell (in manifest order).
pub fn load_all(dir: &Path) -> Result<(CaptureSet, Vec<CellData>)> {
    let set = CaptureSet::open(dir)?;
    let cells = set
        .manifest
        .cells
        .iter()
        .map(|entry| set.load_cell(entry))
        .collect::<Result<Vec<_>>>()?;
    Ok((set, cells))
}

/// The manifest entry describing `cell` stored as `file`.
pub fn manifest_entry(cell: &CellData, file: &str) -> ManifestCell {
    ManifestCell {
        meta: cell.meta.clone(),
        file: file.to_string(),
        steps: cell.steps() as u32,
        npad: cell.npad as u32,
    }
}

/// Write one cell file (`<dir>/<file>`); used by `capture synth` and the importer.
/// The cell is validated first with the loader's rules, so nothing is written
/// that the loader would refuse.
pub fn write_cell(dir: &Path, file: &str, cell: &CellData) -> Result<()> {
    let path = dir.join(file);
    validate_cell_data(&path, cell)?;
    let parent = path.parent().unwrap_or(dir);
    std::fs::create_dir_all(parent).map_err(|e| GvrError::io(parent, e))?;

    let steps = cell.steps();
    let k = cell.k();
    let logits_bytes = f32_bytes(&cell.logits);
    let n_bytes = i32_bytes_from_u32(&path, tensor_names::N, &cell.n)?;
    let hints_bytes = i32_bytes(&cell.hints);
    let topk_bytes = cell.topk.as_deref().map(i32_bytes);
    let kv_bytes = match cell.kv_lens.as_deref() {
        Some(kv) => Some(i32_bytes_from_u32(&path, tensor_names::KV_LENS, kv)?),
        None => None,
    };

    let view = |name: &str, dtype: Dtype, shape: Vec<usize>, bytes| {
        tensor_view(&path, name, dtype, shape, bytes)
    };
    let mut tensors: Vec<(&str, TensorView<'_>)> = vec![
        (
            tensor_names::LOGITS,
            view(
                tensor_names::LOGITS,
                Dtype::F32,
                vec![steps, cell.npad],
                &logits_bytes,
            )?,
        ),
        (
            tensor_names::N,
            view(tensor_names::N, Dtype::I32, vec![steps], &n_bytes)?,
        ),
        (
            tensor_names::HINTS,
            view(
                tensor_names::HINTS,
                Dtype::I32,
                vec![steps, k],
                &hints_bytes,
            )?,
        ),
    ];
    if let Some(bytes) = &topk_bytes {
        tensors.push((
            tensor_names::TOPK,
            view(tensor_names::TOPK, Dtype::I32, vec![steps, k], bytes)?,
        ));
    }
    if let Some(bytes) = &kv_bytes {
        tensors.push((
            tensor_names::KV_LENS,
            view(tensor_names::KV_LENS, Dtype::I32, vec![steps], bytes)?,
        ));
    }

    let meta = &cell.meta;
    let metadata: HashMap<String, String> = [
        (meta_keys::FORMAT_VERSION, FORMAT_VERSION.to_string()),
        (meta_keys::ID, meta.id.clone()),
        (meta_keys::MODEL, meta.model.name().to_string()),
        (meta_keys::ISL, meta.isl.clone()),
        (meta_keys::LAYER, meta.layer.to_string()),
        (meta_keys::NOMINAL_N, meta.n.to_string()),
        (meta_keys::K, meta.k.to_string()),
        (meta_keys::CR, meta.cr.to_string()),
        (meta_keys::NEXT_N, meta.next_n.to_string()),
        // Debug formatting of f32 round-trips exactly through `str::parse`.
        (meta_keys::PAD_VALUE, format!("{:?}", cell.pad_value)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();

    let bytes = safetensors::serialize(tensors, Some(metadata))
        .map_err(|e| GvrError::input(&path, "safetensors", format!("cannot serialize: {e}")))?;
    let bytes = with_sorted_header(bytes)
        .map_err(|e| GvrError::input(&path, "safetensors", format!("cannot serialize: {e}")))?;
    write_atomically(&path, &bytes)
}

/// The safetensors crate writes `__metadata__` from a HashMap, so its key
/// order changes from run to run. Rewrite the JSON header with sorted keys
/// (same length, space padded) so the same cell always gives the same bytes.
fn with_sorted_header(mut bytes: Vec<u8>) -> std::result::Result<Vec<u8>, String> {
    let len_bytes: [u8; 8] = bytes
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or("file shorter than its header length")?;
    let header_len = u64::from_le_bytes(len_bytes) as usize;
    let header = bytes
        .get(8..8 + header_len)
        .ok_or("header length past the end of the file")?;
    // serde_json's default Map is a BTreeMap: re-serialising sorts every level.
    let value: serde_json::Value = serde_json::from_slice(header).map_err(|e| e.to_string())?;
    let mut sorted = serde_json::to_vec(&value).map_err(|e| e.to_string())?;
    if sorted.len() > header_len {
        return Err("sorted header longer than the original".into());
    }
    sorted.resize(header_len, b' ');
    bytes[8..8 + header_len].copy_from_slice(&sorted);
    Ok(bytes)
}

/// Write `<dir>/manifest.json`.
pub fn write_manifest(dir: &Path, manifest: &Manifest) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| GvrError::io(dir, e))?;
    let path = dir.join(MANIFEST_FILE);
    let mut text = serde_json::to_string_pretty(manifest)
        .map_err(|e| GvrError::input(&path, "manifest", format!("cannot serialize: {e}")))?;
    text.push('\n');
    write_atomically(&path, text.as_bytes())
}

/// Read and fully validate one cell file on its own (no manifest needed).
/// `meta.n` is the file's `n` metadata key, or the largest `n[s]` if absent.
pub fn read_cell_file(path: &Path) -> Result<CellData> {
    let on_disk = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => GvrError::input(
            path,
            "file",
            "cell file is missing (listed in the manifest but not on disk)",
        ),
        _ => GvrError::io(path, e),
    })?;
    if on_disk.len() > MAX_CELL_BYTES + (1 << 20) {
        return Err(GvrError::input(
            path,
            "file",
            format!(
                "file is {} bytes; cells larger than {} bytes (16 GiB) are refused",
                on_disk.len(),
                MAX_CELL_BYTES
            ),
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| GvrError::io(path, e))?;
    check_declared_size(path, &bytes)?;
    let tensors = SafeTensors::deserialize(&bytes).map_err(|e| {
        GvrError::input(
            path,
            "safetensors",
            format!("truncated or corrupt safetensors file: {e}"),
        )
    })?;
    let (_, header) = SafeTensors::read_metadata(&bytes).map_err(|e| {
        GvrError::input(
            path,
            "safetensors",
            format!("corrupt safetensors header: {e}"),
        )
    })?;
    let empty = HashMap::new();
    let metadata = header.metadata().as_ref().unwrap_or(&empty);
    decode_cell(path, &tensors, metadata)
}

/// Check every rule the loader enforces on an in-memory cell. `path` is only
/// used to name the file in errors.
pub fn validate_cell_data(path: &Path, cell: &CellData) -> Result<()> {
    let meta = &cell.meta;
    let k = meta.k as usize;
    check_model_contract(path, meta.model, k, meta.cr)?;
    if meta.next_n == 0 {
        return Err(GvrError::input(
            path,
            meta_keys::NEXT_N,
            "next_n must be >= 1",
        ));
    }
    check_npad(path, tensor_names::LOGITS, cell.npad)?;
    let steps = cell.n.len();
    if steps == 0 {
        return Err(GvrError::input(path, tensor_names::N, "cell has no steps"));
    }
    let want_logits = steps.checked_mul(cell.npad);
    if want_logits != Some(cell.logits.len()) {
        return Err(GvrError::input(
            path,
            tensor_names::LOGITS,
            format!(
                "has {} values, expected steps × npad = {} × {}",
                cell.logits.len(),
                steps,
                cell.npad
            ),
        ));
    }
    check_len(path, tensor_names::HINTS, cell.hints.len(), steps, k)?;
    if let Some(topk) = &cell.topk {
        check_len(path, tensor_names::TOPK, topk.len(), steps, k)?;
    }
    if let Some(kv) = &cell.kv_lens {
        check_len(path, tensor_names::KV_LENS, kv.len(), steps, 1)?;
    }
    for (s, &n) in cell.n.iter().enumerate() {
        if n == 0 {
            return Err(GvrError::input(
                path,
                tensor_names::N,
                format!("step {s}: valid length n is 0"),
            ));
        }
        if n as usize > cell.npad {
            return Err(GvrError::input(
                path,
                tensor_names::N,
                format!(
                    "step {s}: valid length n = {n} exceeds npad = {}",
                    cell.npad
                ),
            ));
        }
    }
    check_indices(path, tensor_names::HINTS, &cell.hints, &cell.n, k)?;
    if let Some(topk) = &cell.topk {
        check_indices(path, tensor_names::TOPK, topk, &cell.n, k)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Manifest

fn parse_manifest(path: &Path, text: &str) -> Result<Manifest> {
    // Check the version before the full schema so an old/new file gets the
    // helpful message instead of a schema error.
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| GvrError::input(path, "json", format!("manifest is not valid JSON: {e}")))?;
    match value.get("format_version").and_then(|v| v.as_u64()) {
        Some(v) if v == u64::from(FORMAT_VERSION) => {}
        Some(v) => {
            return Err(GvrError::input(
                path,
                "format_version",
                format!(
                    "unsupported format_version {v}; this build reads version {FORMAT_VERSION}"
                ),
            ))
        }
        None => {
            return Err(GvrError::input(
                path,
                "format_version",
                "missing or not an unsigned integer",
            ))
        }
    }
    check_manifest_schema(path, &value)?;
    serde_json::from_value(value).map_err(|e| {
        GvrError::input(
            path,
            "manifest",
            format!("does not match the manifest schema: {e}"),
        )
    })
}

/// Keys a manifest and each of its cells may have.
const MANIFEST_KEYS: [&str; 4] = ["format_version", "source", "provenance", "cells"];
const MANIFEST_CELL_KEYS: [&str; 11] = [
    "id", "model", "isl", "layer", "n", "k", "cr", "next_n", "file", "steps", "npad",
];

/// Refuse unknown keys and name the field path of a schema error
/// (`cells[3].npad: missing field`): the cell entry flattens its metadata,
/// which serde's own `deny_unknown_fields` cannot check.
fn check_manifest_schema(path: &Path, value: &serde_json::Value) -> Result<()> {
    let Some(top) = value.as_object() else {
        return Err(GvrError::input(path, "manifest", "not a JSON object"));
    };
    if let Some(key) = top.keys().find(|k| !MANIFEST_KEYS.contains(&k.as_str())) {
        return Err(GvrError::input(
            path,
            key.clone(),
            format!("unknown manifest key (known: {})", MANIFEST_KEYS.join(", ")),
        ));
    }
    for key in ["source", "cells"] {
        if !top.contains_key(key) {
            return Err(GvrError::input(path, key, "missing field"));
        }
    }
    let Some(cells) = top["cells"].as_array() else {
        return Err(GvrError::input(path, "cells", "not an array"));
    };
    for (i, cell) in cells.iter().enumerate() {
        let Some(entry) = cell.as_object() else {
            return Err(GvrError::input(
                path,
                format!("cells[{i}]"),
                "not an object",
            ));
        };
        if let Some(key) = entry
            .keys()
            .find(|k| !MANIFEST_CELL_KEYS.contains(&k.as_str()))
        {
            return Err(GvrError::input(
                path,
                format!("cells[{i}].{key}"),
                "unknown cell key",
            ));
        }
        if let Some(key) = MANIFEST_CELL_KEYS.iter().find(|k| !entry.contains_key(**k)) {
            return Err(GvrError::input(
                path,
                format!("cells[{i}].{key}"),
                "missing field",
            ));
        }
        for key in MANIFEST_CELL_KEYS {
            // Each value alone against its field's type, for the path.
            let ok = match key {
                "id" | "isl" | "file" => entry[key].is_string(),
                "model" => serde_json::from_value::<Model>(entry[key].clone()).is_ok(),
                _ => entry[key]
                    .as_u64()
                    .is_some_and(|v| v <= u64::from(u32::MAX)),
            };
            if !ok {
                let want = match key {
                    "id" | "isl" | "file" => "a string".to_string(),
                    "model" => "a model name".to_string(),
                    _ => "an unsigned 32-bit integer".to_string(),
                };
                return Err(GvrError::input(
                    path,
                    format!("cells[{i}].{key}"),
                    format!("invalid value {}: expected {want}", entry[key]),
                ));
            }
        }
    }
    Ok(())
}

fn validate_manifest(dir: &Path, manifest_path: &Path, manifest: &Manifest) -> Result<()> {
    let mut seen = HashSet::new();
    for (i, entry) in manifest.cells.iter().enumerate() {
        let field = |name: &str| format!("cells[{i}].{name}");
        let id = &entry.meta.id;
        if id.is_empty() {
            return Err(GvrError::input(manifest_path, field("id"), "empty cell id"));
        }
        if !seen.insert(id.as_str()) {
            return Err(GvrError::input(
                manifest_path,
                field("id"),
                format!("duplicate cell id {id:?}"),
            ));
        }
        check_model_contract_field(
            manifest_path,
            &field("k"),
            &field("cr"),
            entry.meta.model,
            entry.meta.k as usize,
            entry.meta.cr,
        )?;
        check_npad(manifest_path, &field("npad"), entry.npad as usize)?;
        if entry.steps == 0 {
            return Err(GvrError::input(
                manifest_path,
                field("steps"),
                "cell has no steps",
            ));
        }
        if !is_plain_relative(&entry.file) {
            return Err(GvrError::input(
                manifest_path,
                field("file"),
                format!(
                    "{:?} must be a relative path inside the capture directory",
                    entry.file
                ),
            ));
        }
        let cell_path = dir.join(&entry.file);
        if !cell_path.is_file() {
            return Err(GvrError::input(
                &cell_path,
                field("file"),
                format!("cell file for {id:?} is missing"),
            ));
        }
    }
    Ok(())
}

/// Relative, no `..`: a manifest must not point outside its directory.
fn is_plain_relative(file: &str) -> bool {
    let p = Path::new(file);
    !file.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)))
}

fn check_entry_matches_file(path: &Path, entry: &ManifestCell, cell: &CellData) -> Result<()> {
    let m = &entry.meta;
    let f = &cell.meta;
    let mismatch = |field: &str, manifest: String, file: String| {
        Err(GvrError::input(
            path,
            field,
            format!("manifest says {manifest} but the cell file says {file}"),
        ))
    };
    if m.id != f.id {
        return mismatch(meta_keys::ID, m.id.clone(), f.id.clone());
    }
    if m.model != f.model {
        return mismatch(meta_keys::MODEL, m.model.to_string(), f.model.to_string());
    }
    if m.isl != f.isl {
        return mismatch(meta_keys::ISL, m.isl.clone(), f.isl.clone());
    }
    if m.layer != f.layer {
        return mismatch(meta_keys::LAYER, m.layer.to_string(), f.layer.to_string());
    }
    if m.k != f.k {
        return mismatch(meta_keys::K, m.k.to_string(), f.k.to_string());
    }
    if m.cr != f.cr {
        return mismatch(meta_keys::CR, m.cr.to_string(), f.cr.to_string());
    }
    if m.next_n != f.next_n {
        return mismatch(
            meta_keys::NEXT_N,
            m.next_n.to_string(),
            f.next_n.to_string(),
        );
    }
    if entry.steps as usize != cell.steps() {
        return mismatch("steps", entry.steps.to_string(), cell.steps().to_string());
    }
    if entry.npad as usize != cell.npad {
        return mismatch("npad", entry.npad.to_string(), cell.npad.to_string());
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Cell file decoding

/// Parse the raw header ourselves before `safetensors` validates offsets, so
/// an absurd declared shape is refused by size, with the tensor named.
fn check_declared_size(path: &Path, bytes: &[u8]) -> Result<()> {
    let corrupt = |msg: String| GvrError::input(path, "safetensors", msg);
    let Some(len_bytes) = bytes.get(..8) else {
        return Err(corrupt(format!(
            "truncated or corrupt safetensors file: only {} bytes",
            bytes.len()
        )));
    };
    let mut arr = [0u8; 8];
    arr.copy_from_slice(len_bytes);
    let header_len = u64::from_le_bytes(arr);
    let header = usize::try_from(header_len)
        .ok()
        .and_then(|h| h.checked_add(8))
        .and_then(|end| bytes.get(8..end))
        .ok_or_else(|| {
            corrupt(format!(
                "truncated or corrupt safetensors file: header length {header_len} exceeds the file"
            ))
        })?;
    let parsed: serde_json::Value = serde_json::from_slice(header).map_err(|e| {
        corrupt(format!(
            "truncated or corrupt safetensors file: header is not JSON: {e}"
        ))
    })?;
    let Some(entries) = parsed.as_object() else {
        return Err(corrupt(
            "truncated or corrupt safetensors file: header is not an object".into(),
        ));
    };
    let mut total: u128 = 0;
    for (name, info) in entries {
        if name == "__metadata__" {
            continue;
        }
        let Some(shape) = info.get("shape").and_then(|s| s.as_array()) else {
            continue; // safetensors itself reports malformed entries
        };
        let mut elems: u128 = 1;
        for dim in shape {
            let d = u128::from(dim.as_u64().unwrap_or(0));
            elems = elems.saturating_mul(d);
        }
        // Unknown dtype names count as 8 bytes (the widest safetensors
        // type we might meet); they are refused later by the dtype check.
        let dtype_bytes: u128 = match info.get("dtype").and_then(|d| d.as_str()) {
            Some("BOOL" | "U8" | "I8" | "F8_E4M3" | "F8_E5M2") => 1,
            Some("F16" | "BF16" | "I16" | "U16") => 2,
            Some("F32" | "I32" | "U32") => 4,
            _ => 8,
        };
        let tensor_bytes = elems.saturating_mul(dtype_bytes);
        total = total.saturating_add(tensor_bytes);
        if total > u128::from(MAX_CELL_BYTES) {
            return Err(GvrError::input(
                path,
                name.as_str(),
                format!(
                    "declared shapes imply more than {MAX_CELL_BYTES} bytes (16 GiB); refusing to load"
                ),
            ));
        }
    }
    Ok(())
}

fn decode_cell(
    path: &Path,
    tensors: &SafeTensors<'_>,
    metadata: &HashMap<String, String>,
) -> Result<CellData> {
    let format_version: u32 = meta_parse(path, metadata, meta_keys::FORMAT_VERSION)?;
    if format_version != FORMAT_VERSION {
        return Err(GvrError::input(
            path,
            meta_keys::FORMAT_VERSION,
            format!(
                "unsupported format_version {format_version}; this build reads version {FORMAT_VERSION}"
            ),
        ));
    }
    let id = meta_str(path, metadata, meta_keys::ID)?.to_string();
    let model_name = meta_str(path, metadata, meta_keys::MODEL)?;
    let model = Model::parse(model_name).ok_or_else(|| {
        GvrError::input(
            path,
            meta_keys::MODEL,
            format!("unknown model {model_name:?}; expected v32, flash or pro"),
        )
    })?;
    let isl = meta_str(path, metadata, meta_keys::ISL)?.to_string();
    let layer: u32 = meta_parse(path, metadata, meta_keys::LAYER)?;
    let k: u32 = meta_parse(path, metadata, meta_keys::K)?;
    let cr: u32 = meta_parse(path, metadata, meta_keys::CR)?;
    let next_n: u32 = meta_parse(path, metadata, meta_keys::NEXT_N)?;
    let pad_value: f32 = meta_parse(path, metadata, meta_keys::PAD_VALUE)?;
    check_model_contract(path, model, k as usize, cr)?;
    let k = k as usize;

    let logits_view = required(path, tensors, tensor_names::LOGITS)?;
    let [steps, npad] = shape2(path, tensor_names::LOGITS, &logits_view)?;
    check_npad(path, tensor_names::LOGITS, npad)?;
    let logits = f32_values(path, tensor_names::LOGITS, &logits_view)?;

    let n_view = required(path, tensors, tensor_names::N)?;
    expect_shape(path, tensor_names::N, &n_view, &[steps])?;
    let n = u32_values(path, tensor_names::N, &n_view)?;

    let hints_view = required(path, tensors, tensor_names::HINTS)?;
    expect_shape(path, tensor_names::HINTS, &hints_view, &[steps, k])?;
    let hints = i32_values(path, tensor_names::HINTS, &hints_view)?;

    let topk = match optional(tensors, tensor_names::TOPK) {
        Some(view) => {
            expect_shape(path, tensor_names::TOPK, &view, &[steps, k])?;
            Some(i32_values(path, tensor_names::TOPK, &view)?)
        }
        None => None,
    };
    let kv_lens = match optional(tensors, tensor_names::KV_LENS) {
        Some(view) => {
            expect_shape(path, tensor_names::KV_LENS, &view, &[steps])?;
            Some(u32_values(path, tensor_names::KV_LENS, &view)?)
        }
        None => None,
    };

    let nominal_n = match metadata.get(meta_keys::NOMINAL_N) {
        Some(_) => meta_parse(path, metadata, meta_keys::NOMINAL_N)?,
        None => n.iter().copied().max().unwrap_or(0),
    };
    let cell = CellData {
        meta: CellMeta {
            id,
            model,
            isl,
            layer,
            n: nominal_n,
            k: k as u32,
            cr,
            next_n,
        },
        npad,
        pad_value,
        logits,
        n,
        hints,
        topk,
        kv_lens,
    };
    validate_cell_data(path, &cell)?;
    Ok(cell)
}

fn meta_str<'a>(path: &Path, metadata: &'a HashMap<String, String>, key: &str) -> Result<&'a str> {
    metadata
        .get(key)
        .map(String::as_str)
        .ok_or_else(|| GvrError::input(path, key, "missing from the safetensors __metadata__"))
}

fn meta_parse<T: std::str::FromStr>(
    path: &Path,
    metadata: &HashMap<String, String>,
    key: &str,
) -> Result<T>
where
    T::Err: std::fmt::Display,
{
    let raw = meta_str(path, metadata, key)?;
    raw.trim()
        .parse()
        .map_err(|e| GvrError::input(path, key, format!("cannot parse {raw:?}: {e}")))
}

fn required<'a>(path: &Path, tensors: &SafeTensors<'a>, name: &str) -> Result<TensorView<'a>> {
    tensors
        .tensor(name)
        .map_err(|_| GvrError::input(path, name, "required tensor is missing"))
}

fn optional<'a>(tensors: &SafeTensors<'a>, name: &str) -> Option<TensorView<'a>> {
    tensors.tensor(name).ok()
}

fn shape2(path: &Path, name: &str, view: &TensorView<'_>) -> Result<[usize; 2]> {
    match view.shape() {
        &[a, b] => Ok([a, b]),
        other => Err(GvrError::input(
            path,
            name,
            format!("expected rank 2 [steps, npad], got shape {other:?}"),
        )),
    }
}

fn expect_shape(path: &Path, name: &str, view: &TensorView<'_>, want: &[usize]) -> Result<()> {
    if view.shape() == want {
        Ok(())
    } else {
        Err(GvrError::input(
            path,
            name,
            format!(
                "shape {:?} does not match expected {:?} (steps taken from logits, K from metadata)",
                view.shape(),
                want
            ),
        ))
    }
}

fn expect_dtype(path: &Path, name: &str, view: &TensorView<'_>, want: Dtype) -> Result<()> {
    if view.dtype() == want {
        Ok(())
    } else {
        Err(GvrError::input(
            path,
            name,
            format!(
                "dtype {:?} is not supported; expected {want:?}",
                view.dtype()
            ),
        ))
    }
}

fn f32_values(path: &Path, name: &str, view: &TensorView<'_>) -> Result<Vec<f32>> {
    expect_dtype(path, name, view, Dtype::F32)?;
    Ok(view
        .data()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

fn i32_values(path: &Path, name: &str, view: &TensorView<'_>) -> Result<Vec<i32>> {
    expect_dtype(path, name, view, Dtype::I32)?;
    Ok(view
        .data()
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// Lengths are stored as I32 (what numpy/torch write naturally); negative
/// values are refused here with the step named.
fn u32_values(path: &Path, name: &str, view: &TensorView<'_>) -> Result<Vec<u32>> {
    i32_values(path, name, view)?
        .into_iter()
        .enumerate()
        .map(|(s, v)| {
            u32::try_from(v)
                .map_err(|_| GvrError::input(path, name, format!("step {s}: negative length {v}")))
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Shared checks

fn check_model_contract(path: &Path, model: Model, k: usize, cr: u32) -> Result<()> {
    check_model_contract_field(path, meta_keys::K, meta_keys::CR, model, k, cr)
}

fn check_model_contract_field(
    path: &Path,
    k_field: &str,
    cr_field: &str,
    model: Model,
    k: usize,
    cr: u32,
) -> Result<()> {
    if !SUPPORTED_K.contains(&k) {
        return Err(GvrError::input(
            path,
            k_field,
            format!("K = {k} is not supported; supported K values are {SUPPORTED_K:?}"),
        ));
    }
    if model.k() != k {
        return Err(GvrError::input(
            path,
            k_field,
            format!(
                "K = {k} does not match model {model} (which uses K = {})",
                model.k()
            ),
        ));
    }
    if model.compress_ratio() != cr {
        return Err(GvrError::input(
            path,
            cr_field,
            format!(
                "cr = {cr} does not match model {model} (which uses cr = {})",
                model.compress_ratio()
            ),
        ));
    }
    Ok(())
}

fn check_npad(path: &Path, field: &str, npad: usize) -> Result<()> {
    if npad == 0 || !npad.is_multiple_of(64) {
        return Err(GvrError::input(
            path,
            field,
            format!("npad = {npad} must be a positive multiple of 64"),
        ));
    }
    Ok(())
}

fn check_len(path: &Path, name: &str, len: usize, steps: usize, per_step: usize) -> Result<()> {
    if steps.checked_mul(per_step) != Some(len) {
        return Err(GvrError::input(
            path,
            name,
            format!("has {len} values, expected steps × {per_step} = {steps} × {per_step}"),
        ));
    }
    Ok(())
}

/// Index rows (hints, topk) hold -1 or a position inside the step's valid prefix.
fn check_indices(path: &Path, name: &str, values: &[i32], n: &[u32], k: usize) -> Result<()> {
    for (s, (row, &n_s)) in values.chunks_exact(k).zip(n).enumerate() {
        for (slot, &v) in row.iter().enumerate() {
            if v != -1 && (v < 0 || v as u32 >= n_s) {
                return Err(GvrError::input(
                    path,
                    name,
                    format!("step {s}, slot {slot}: index {v} is out of range (must be -1 or in [0, {n_s}))"),
                ));
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Byte helpers

fn tensor_view<'a>(
    path: &Path,
    name: &str,
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: &'a [u8],
) -> Result<TensorView<'a>> {
    TensorView::new(dtype, shape, bytes)
        .map_err(|e| GvrError::input(path, name, format!("cannot build tensor: {e}")))
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn i32_bytes(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn i32_bytes_from_u32(path: &Path, name: &str, values: &[u32]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(values.len() * 4);
    for (s, &v) in values.iter().enumerate() {
        let v = i32::try_from(v).map_err(|_| {
            GvrError::input(
                path,
                name,
                format!("step {s}: value {v} does not fit in I32"),
            )
        })?;
        out.extend_from_slice(&v.to_le_bytes());
    }
    Ok(out)
}

/// Write to a temp file in `path`'s directory, fsync it, then rename it over
/// `path`, so a crash never leaves a half-written file that looks complete
/// and concurrent readers see the old or the new file, never a torn one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write as _;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| GvrError::io(dir, e))?;
    tmp.write_all(bytes)
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(|e| GvrError::io(tmp.path(), e))?;
    tmp.persist(path).map_err(|e| GvrError::io(path, e.error))?;
    Ok(())
}
