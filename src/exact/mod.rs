//! Exactness: the CPU reference top-K and the tie-aware checker (docs/method.md, "What \"exact\" means"),
//! plus generators of adversarial rows for certification and property tests.

pub mod adversarial;
pub mod check;
pub mod soak;

use serde::{Deserialize, Serialize};

pub use crate::reference::{order_key, reference_topk};
pub use adversarial::{
    nan_value, row_generators, sampling_adversaries, suite, AdversarialCase, NamedRowGenerator,
};
pub use check::{check_batch, check_row, row_threshold, PeriodicCheck, RowThreshold};
pub use soak::soak_case;

pub use crate::grid::UNWRITTEN;

/// Verdict for one (case, arm).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum ExactStatus {
    /// Every row is tie-aware exact.
    Exact,
    /// A row is wrong; `row` is the first bad row, `reason` says why.
    Wrong { row: usize, reason: String },
    /// The arm left an output slot unwritten (still the poison sentinel).
    Unwritten { row: usize, slot: usize },
    /// The arm does not admit this shape (not an error; excluded from stats).
    Unsupported { reason: String },
    /// The arm failed to run (launch error, timeout...).
    Failed { message: String },
}

impl ExactStatus {
    pub fn is_exact(&self) -> bool {
        matches!(self, ExactStatus::Exact)
    }

    pub fn label(&self) -> &'static str {
        match self {
            ExactStatus::Exact => "exact",
            ExactStatus::Wrong { .. } => "WRONG",
            ExactStatus::Unwritten { .. } => "UNWRITTEN",
            ExactStatus::Unsupported { .. } => "unsupported",
            ExactStatus::Failed { .. } => "FAILED",
        }
    }
}
