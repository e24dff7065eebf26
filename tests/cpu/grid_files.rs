//! The committed grid files must equal their generators. To regenerate after
//! an intended change: `GVR_BLESS_GRIDS=1 cargo test --test grid_files`.

use std::path::Path;

use gvr_bench::capture::CellMeta;
use gvr_bench::grid::{dsa886_cells, grid_csv_string, load_grid, smoke_cells};

fn check_committed(file: &str, cells: Vec<CellMeta>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("grids")
        .join(file);
    let expected = grid_csv_string(&cells);
    if std::env::var_os("GVR_BLESS_GRIDS").is_some() {
        std::fs::write(&path, &expected).expect("write grid file");
    }
    let committed = std::fs::read_to_string(&path).expect("read committed grid file");
    assert_eq!(committed, expected, "{file} differs from its generator");
    let loaded = load_grid(&path).expect("committed grid file loads");
    assert_eq!(loaded, cells);
}

#[test]
fn dsa886_csv_matches_generator() {
    let cells = dsa886_cells();
    assert_eq!(cells.len(), 886);
    check_committed("dsa886.csv", cells);
}

#[test]
fn smoke_csv_matches_generator_and_is_a_subset() {
    let all = dsa886_cells();
    let smoke = smoke_cells();
    assert!((10..=16).contains(&smoke.len()));
    assert!(smoke.iter().all(|c| all.contains(c)));
    check_committed("smoke.csv", smoke);
}
