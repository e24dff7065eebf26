//! The shape grid (grids/*.csv), case selection and sharding, and batch
//! formation from a captured cell.

pub mod batch;
pub mod cells;
pub mod gridfile;
pub mod select;

use serde::{Deserialize, Serialize};

pub use crate::capture::CellMeta;
pub use batch::{Batch, RowsMode};
pub use cells::{dsa886_cells, smoke_cells};
pub use gridfile::{grid_csv_string, load_grid, parse_grid, write_grid};
pub use select::{select, Selection, Shard};

/// Value every output slot holds before an arm runs; a slot still holding it
/// afterwards was never written.
pub const UNWRITTEN: i32 = i32::MIN;

/// The 11 batch sizes of the canonical grid.
pub const BATCH_SIZES: [usize; 11] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

/// One unit of work: a grid cell at one batch size.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Case {
    pub cell: CellMeta,
    pub b: usize,
}

impl Case {
    /// Stable identifier used to join records across arms and runs.
    pub fn id(&self) -> String {
        format!("{}@b{}", self.cell.id, self.b)
    }
}
