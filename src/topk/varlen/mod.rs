//! The production varlen entry of the self-sampling top-K (docs/algorithm.md,
//! "The varlen entry"): per-row lengths from per-request `kv_lens` on the device, `next_n`
//! MTP rows per request, compress ratio 1 or 4, request-level hints or
//! hint-free, short rows identity then −1, zero-window rows all −1, an
//! optional values output, one top-K launch per call and CUDA-graph capture
//! when a `max_seq_len` envelope is given.
//!
//! - [`contract`]: the shape guards, the per-row length formula, the envelope.
//! - [`plan`]: which family serves the envelope, with its kernel scalars.
//! - [`launcher`]: compile once, enqueue per call (capture-safe).
//!
//! The grid's batch-uniform entry is the same kernels with `next_n = 0`
//! (a per-row length array); the arms `ss-varlen` and `ss-varlen-hints`
//! (crate::arms::ss_varlen) run every harness batch through this entry.

pub mod contract;
pub mod launcher;
pub mod plan;

pub use contract::{envelope, ContractError, EnvelopeSource, VarlenShape};
pub use launcher::{VarlenIo, VarlenTopK};
pub use plan::{plan, VarlenPlan};
