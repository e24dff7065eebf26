//! Pure statistics over result records: per-case ratios, geomean, quantiles,
//! ratio buckets, A/A noise floor, regression verdicts. No I/O here; the
//! writers live in `report`.

pub mod aa;
pub mod ab;
pub mod best;
pub mod quantile;
pub mod ratios;
pub mod regress;
pub mod sample;

pub use aa::NoiseFloor;
pub use best::{best_baseline, tier_tables, BestBaseline, TierTable};
pub use quantile::{geomean, median, quantile_sorted};
pub use ratios::{
    compare, exact_counts, pair, roofline_by_arm, Comparison, ExactCounts, Pairing, RatioPoint,
    RatioSummary, RooflineStats,
};
pub use regress::{analyse, ArmRegression, CaseChange, ChangeKind, RegressAnalysis, RegressConfig};
pub use sample::{arms_in_order, CaseTime, ColdStats, ExactClass, H200_BANDWIDTH_BYTES_PER_S};
