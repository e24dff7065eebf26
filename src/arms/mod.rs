//! Arms: the things a case is run on. An arm knows how to stage a batch and
//! launch its kernel(s); it knows nothing about timing or checking.

pub mod baselines;
pub mod cpu_ref;
pub mod cpu_ss;
pub mod registry;
pub mod ss;
pub mod ss_varlen;

use crate::error::Result;
use crate::gpu::KernelBuild;
use crate::grid::Batch;

/// Where an arm executes; decides which timer measures it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Cpu,
    Gpu,
}

/// The shape facts an arm needs to decide admissibility and its variant
/// (the product's own shape type).
pub use crate::topk::Shape;

impl Shape {
    /// The shape of `batch`: its rows, longest valid row, stride and k.
    pub fn of(batch: &Batch) -> Shape {
        Shape {
            rows: batch.rows,
            n: batch.n_max(),
            npad: batch.npad,
            k: batch.k,
        }
    }
}

pub trait Arm: Send {
    /// The arm's name as given on the command line (`cpu-ref`, `ss`, `radix`...).
    fn name(&self) -> &str;

    fn backend(&self) -> Backend;

    /// `Err(reason)` if this arm cannot run the shape (reported as
    /// unsupported, never as wrong).
    fn admits(&self, shape: &Shape) -> std::result::Result<(), String>;

    /// Which family / tier / variant the arm will use for this shape
    /// (recorded with the result; e.g. the `ss` route decision).
    fn variant(&self, _shape: &Shape) -> Option<String> {
        None
    }

    /// The kernel builds `stage` loads for this shape (none for CPU arms), so
    /// a run can compile them in parallel before its first case
    /// ([`crate::gpu::Gpu::prebuild`]). A build missing here is compiled when
    /// it is staged, as before; one listed but not loaded costs compile time.
    fn builds(&self, _shape: &Shape) -> Vec<KernelBuild> {
        Vec::new()
    }

    /// Take a batch (outside any timed window). Inputs are copied as given.
    fn stage(&mut self, batch: &Batch) -> Result<()>;

    /// Fill the output with `exact::UNWRITTEN` (outside any timed window).
    fn poison_output(&mut self) -> Result<()>;

    /// Run once on the staged batch. GPU arms enqueue and return.
    fn launch(&mut self) -> Result<()>;

    /// The `[rows, k]` indices of the last launch (waits for it to finish).
    fn read_output(&mut self) -> Result<Vec<i32>>;

    /// Whether a timer reads the output of the first timed launch (for the
    /// checker, which must see it: an arm right only on warm state fails).
    /// Harness kernels whose output nobody checks as a top-K say no, and
    /// their timing skips a synchronisation and a copy of `rows · k` indices.
    fn reads_first_output(&self) -> bool {
        true
    }

    /// What the last launch did that only the device knows (e.g.
    /// `sglang-v2`'s `fallback rows N`), read after `read_output`, outside
    /// any timed window; a run appends it to the record's variant.
    fn call_note(&mut self) -> Option<String> {
        None
    }
}
