//! The canonical 886-cell DSA grid (docs/method.md, "Cases"), built from the
//! per-model contract rather than read from a file so that `grids/dsa886.csv`
//! can be checked against it by a test.

use crate::capture::{CellMeta, Model};

/// ISL rung labels of the V4 models (Flash, Pro): 4k … 1024k.
pub const V4_ISL_RUNGS: [&str; 9] = [
    "4k", "8k", "16k", "32k", "64k", "128k", "256k", "512k", "1024k",
];
/// ISL rung labels of V3.2: 4k … 256k (256k is capped by the physical kv_len).
pub const V32_ISL_RUNGS: [&str; 7] = ["4k", "8k", "16k", "32k", "64k", "128k", "256k"];

/// Compressed row width N per rung.
pub const V32_N: [u32; 7] = [4111, 8207, 16399, 32783, 65551, 131087, 163775];
pub const FLASH_N: [u32; 9] = [1027, 2051, 4099, 8195, 16387, 32771, 65538, 131075, 262127];
pub const PRO_N: [u32; 9] = [1027, 2051, 4099, 8195, 16387, 32771, 65539, 131075, 262127];

/// Number of cells of the canonical grid (427 V3.2 + 189 Flash + 270 Pro).
pub const DSA886_CELL_COUNT: usize = 886;

/// Prefix of a cell id for each model (`v32_`, `v4_flash_`, `v4_pro_`).
pub fn cell_id_prefix(model: Model) -> &'static str {
    match model {
        Model::V32 => "v32",
        Model::Flash => "v4_flash",
        Model::Pro => "v4_pro",
    }
}

/// Canonical cell id, e.g. `v4_flash_64k_L02`, `v32_128k_L07`.
pub fn cell_id(model: Model, isl: &str, layer: u32) -> String {
    format!("{}_{}_L{:02}", cell_id_prefix(model), isl, layer)
}

/// Layers of each model that appear in the grid.
pub fn grid_layers(model: Model) -> Vec<u32> {
    match model {
        Model::V32 => (0..=60).collect(),
        Model::Flash => (2..=42).step_by(2).collect(),
        Model::Pro => (2..=60).step_by(2).collect(),
    }
}

/// (ISL label, N) pairs of each model's rungs, in increasing N.
pub fn grid_rungs(model: Model) -> Vec<(&'static str, u32)> {
    match model {
        Model::V32 => V32_ISL_RUNGS.iter().copied().zip(V32_N).collect(),
        Model::Flash => V4_ISL_RUNGS.iter().copied().zip(FLASH_N).collect(),
        Model::Pro => V4_ISL_RUNGS.iter().copied().zip(PRO_N).collect(),
    }
}

/// The 886 cells of the canonical grid, ordered V3.2, Flash, Pro; within a
/// model by rung, then layer (the order of `grids/dsa886.csv`).
pub fn dsa886_cells() -> Vec<CellMeta> {
    let mut cells = Vec::with_capacity(DSA886_CELL_COUNT);
    for model in [Model::V32, Model::Flash, Model::Pro] {
        let layers = grid_layers(model);
        for (isl, n) in grid_rungs(model) {
            for &layer in &layers {
                cells.push(CellMeta {
                    id: cell_id(model, isl, layer),
                    model,
                    isl: isl.to_string(),
                    layer,
                    n,
                    k: model.k() as u32,
                    cr: model.compress_ratio(),
                    next_n: 1,
                });
            }
        }
    }
    cells
}

/// Cells of `grids/smoke.csv`: four per model, spanning N from 1027 to
/// 262127 and early, middle and late layers, for quick end-to-end runs.
pub const SMOKE_CELL_IDS: [&str; 12] = [
    "v32_4k_L00",
    "v32_16k_L20",
    "v32_64k_L40",
    "v32_256k_L60",
    "v4_flash_4k_L02",
    "v4_flash_32k_L10",
    "v4_flash_256k_L22",
    "v4_flash_1024k_L42",
    "v4_pro_8k_L04",
    "v4_pro_64k_L30",
    "v4_pro_512k_L44",
    "v4_pro_1024k_L60",
];

/// The smoke grid: [`SMOKE_CELL_IDS`] taken from [`dsa886_cells`], in grid order.
pub fn smoke_cells() -> Vec<CellMeta> {
    dsa886_cells()
        .into_iter()
        .filter(|c| SMOKE_CELL_IDS.contains(&c.id.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn grid_has_886_unique_cells_with_expected_per_model_counts() {
        let cells = dsa886_cells();
        assert_eq!(cells.len(), DSA886_CELL_COUNT);
        let ids: HashSet<_> = cells.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids.len(), cells.len(), "cell ids must be unique");
        let count = |m: Model| cells.iter().filter(|c| c.model == m).count();
        assert_eq!(count(Model::V32), 427);
        assert_eq!(count(Model::Flash), 189);
        assert_eq!(count(Model::Pro), 270);
        // 886 × 11 batch sizes = 9,746 cases (docs/method.md, "Cases").
        assert_eq!(cells.len() * crate::grid::BATCH_SIZES.len(), 9746);
    }

    #[test]
    fn smoke_grid_spans_models_and_widths() {
        let smoke = smoke_cells();
        assert_eq!(
            smoke.len(),
            SMOKE_CELL_IDS.len(),
            "every smoke id must exist"
        );
        for m in Model::ALL {
            assert!(smoke.iter().any(|c| c.model == m), "{m} missing");
        }
        assert_eq!(smoke.iter().map(|c| c.n).min(), Some(1027));
        assert_eq!(smoke.iter().map(|c| c.n).max(), Some(262127));
    }

    #[test]
    fn ids_and_contract_match_the_model() {
        let cells = dsa886_cells();
        let find = |id: &str| {
            cells
                .iter()
                .find(|c| c.id == id)
                .unwrap_or_else(|| panic!("missing {id}"))
        };
        let c = find("v4_flash_64k_L02");
        assert_eq!((c.n, c.k, c.cr, c.layer), (16387, 512, 4, 2));
        assert_eq!(find("v4_flash_256k_L42").n, 65538);
        assert_eq!(find("v4_pro_256k_L02").n, 65539);
        let c = find("v4_pro_1024k_L60");
        assert_eq!((c.n, c.k, c.cr), (262127, 1024, 4));
        let c = find("v32_256k_L00");
        assert_eq!((c.n, c.k, c.cr), (163775, 2048, 1));
        let c = find("v32_128k_L07");
        assert_eq!(c.n, 131087);
        for c in &cells {
            assert_eq!(c.k as usize, c.model.k());
            assert_eq!(c.cr, c.model.compress_ratio());
            assert_eq!(c.next_n, 1);
        }
        assert!(!cells.iter().any(|c| c.id == "v4_flash_4k_L44"));
        assert!(!cells.iter().any(|c| c.id == "v32_512k_L00"));
    }
}
