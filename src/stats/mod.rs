//! Pure statistics over result records: per-case ratios, geomean, quantiles,
//! ratio buckets, A/A noise floor, regression verdicts.
