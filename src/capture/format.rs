//! In-memory form of a capture set and its cells. The loader (`load`) turns
//! files into these; the synthetic generator and the importer produce them.

use serde::{Deserialize, Serialize};

pub const FORMAT_VERSION: u32 = 1;

/// The three DSA indexer contracts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Model {
    /// DeepSeek-V3.2: K = 2048, cr = 1.
    #[serde(rename = "v32")]
    V32,
    /// DeepSeek-V4 Flash: K = 512, cr = 4.
    #[serde(rename = "flash")]
    Flash,
    /// DeepSeek-V4 Pro: K = 1024, cr = 4.
    #[serde(rename = "pro")]
    Pro,
}

impl Model {
    pub const ALL: [Model; 3] = [Model::V32, Model::Flash, Model::Pro];

    pub fn name(self) -> &'static str {
        match self {
            Model::V32 => "v32",
            Model::Flash => "flash",
            Model::Pro => "pro",
        }
    }

    pub fn k(self) -> usize {
        match self {
            Model::V32 => 2048,
            Model::Flash => 512,
            Model::Pro => 1024,
        }
    }

    pub fn compress_ratio(self) -> u32 {
        match self {
            Model::V32 => 1,
            Model::Flash | Model::Pro => 4,
        }
    }

    pub fn parse(s: &str) -> Option<Model> {
        match s.to_ascii_lowercase().as_str() {
            "v32" | "v3.2" | "deepseek-v3.2" => Some(Model::V32),
            "flash" | "v4_flash" | "v4-flash" => Some(Model::Flash),
            "pro" | "v4_pro" | "v4-pro" => Some(Model::Pro),
            _ => None,
        }
    }
}

impl std::fmt::Display for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One grid shape: (model, ISL rung, layer) with its nominal row width N.
/// This is also one row of `grids/*.csv`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CellMeta {
    /// `v4_flash_64k_L02`, `v4_pro_1024k_L60`, `v32_128k_L07`.
    pub id: String,
    pub model: Model,
    /// ISL rung label, e.g. "64k".
    pub isl: String,
    pub layer: u32,
    /// Nominal valid row width of the grid shape (compressed index space).
    pub n: u32,
    pub k: u32,
    /// KV compression ratio (1 for V3.2, 4 for V4).
    pub cr: u32,
    /// MTP rows per request (1 = MTP off).
    pub next_n: u32,
}

/// Where a capture set came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Synthetic,
    Imported,
}

/// `manifest.json` of a capture set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format_version: u32,
    pub source: Source,
    /// Generator parameters (synthetic) or provenance (imported): free-form.
    #[serde(default)]
    pub provenance: serde_json::Value,
    pub cells: Vec<ManifestCell>,
}

/// One cell entry of the manifest; must agree with the cell file's metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestCell {
    #[serde(flatten)]
    pub meta: CellMeta,
    /// File name relative to the capture directory.
    pub file: String,
    pub steps: u32,
    pub npad: u32,
}

/// One cell: S consecutive decode steps of one (model, ISL rung, layer).
#[derive(Debug, Clone, PartialEq)]
pub struct CellData {
    pub meta: CellMeta,
    /// Row stride in elements; a multiple of 64.
    pub npad: usize,
    /// Value stored in `[n, npad)` of each row. Never read as data.
    pub pad_value: f32,
    /// `[steps, npad]` row-major.
    pub logits: Vec<f32>,
    /// Valid length per step (`n[s] <= npad`).
    pub n: Vec<u32>,
    /// `[steps, k]`: previous step's top-K, raw indices, -1 allowed.
    pub hints: Vec<i32>,
    /// Optional `[steps, k]` reference top-K recorded at capture time.
    pub topk: Option<Vec<i32>>,
    /// Optional per-step KV length in token space (
    /// kv = n·cr + next_n − 1 for V4, = n for V3.2).
    pub kv_lens: Option<Vec<u32>>,
}

impl CellData {
    pub fn steps(&self) -> usize {
        self.n.len()
    }

    pub fn k(&self) -> usize {
        self.meta.k as usize
    }

    /// The valid prefix of step `s`.
    pub fn row(&self, s: usize) -> &[f32] {
        let start = s * self.npad;
        &self.logits[start..start + self.n[s] as usize]
    }

    /// NaN values in the valid prefixes and the rows that hold any:
    /// (values, rows). Such rows have no exact top-K by value.
    pub fn nan_counts(&self) -> (u64, usize) {
        (0..self.steps()).fold((0, 0), |(values, rows), s| {
            let nan = self.row(s).iter().filter(|v| v.is_nan()).count() as u64;
            (values + nan, rows + usize::from(nan > 0))
        })
    }

    /// The whole padded row of step `s` (what a kernel sees).
    pub fn padded_row(&self, s: usize) -> &[f32] {
        let start = s * self.npad;
        &self.logits[start..start + self.npad]
    }

    pub fn hints(&self, s: usize) -> &[i32] {
        let k = self.k();
        &self.hints[s * k..(s + 1) * k]
    }
}

/// Round up to the next multiple of 64 (the row-stride contract).
pub fn npad_for(n: usize) -> usize {
    n.div_ceil(64).max(1) * 64
}
