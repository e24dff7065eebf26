//! Property tests of the summary statistics: invariants that must hold for
//! any sample, complementing the hand-computed unit tests.

use gvr_bench::stats::ratios::{bucket_counts, bucket_index, BUCKET_EDGES};
use gvr_bench::stats::{geomean, quantile_sorted, NoiseFloor, RatioSummary};
use proptest::prelude::*;

fn ratios() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(0.01f64..100.0, 1..200)
}

proptest! {
    #[test]
    fn quantiles_are_monotone_and_bounded(mut xs in ratios(), a in 0.0f64..=1.0, b in 0.0f64..=1.0) {
        xs.sort_by(f64::total_cmp);
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let (q_lo, q_hi) = (quantile_sorted(&xs, lo).unwrap(), quantile_sorted(&xs, hi).unwrap());
        prop_assert!(q_lo <= q_hi + 1e-12);
        prop_assert!(q_lo >= xs[0] && q_hi <= xs[xs.len() - 1]);
    }

    #[test]
    fn summary_is_ordered_and_counts_add_up(xs in ratios()) {
        let s = RatioSummary::of(&xs).unwrap();
        prop_assert_eq!(s.count, xs.len());
        prop_assert!(s.min <= s.p5 && s.p5 <= s.p50 && s.p50 <= s.p95 && s.p95 <= s.max);
        prop_assert!(s.min <= s.geomean * (1.0 + 1e-12) && s.geomean <= s.max * (1.0 + 1e-12));
        prop_assert_eq!(s.base_faster, xs.iter().filter(|r| **r > 1.0).count());
        prop_assert_eq!(bucket_counts(&xs).iter().sum::<usize>(), xs.len());
    }

    #[test]
    fn geomean_of_reciprocals_is_the_reciprocal(xs in ratios()) {
        let inverse: Vec<f64> = xs.iter().map(|x| 1.0 / x).collect();
        let g = geomean(&xs).unwrap();
        prop_assert!((g * geomean(&inverse).unwrap() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn bucket_holds_its_ratio(r in 0.01f64..100.0) {
        let i = bucket_index(r);
        if i > 0 {
            prop_assert!(r >= BUCKET_EDGES[i - 1]);
        }
        if i < BUCKET_EDGES.len() {
            prop_assert!(r < BUCKET_EDGES[i]);
        }
    }

    #[test]
    fn noise_floor_brackets_the_median(xs in ratios()) {
        let nf = NoiseFloor::of(&xs).unwrap();
        prop_assert!(nf.p1 <= nf.p50.unwrap() && nf.p50.unwrap() <= nf.p99);
        let worst = xs.iter().map(|x| x.ln().abs()).fold(0.0, f64::max);
        prop_assert!((nf.max_abs_log_ratio.unwrap() - worst).abs() < 1e-12);
    }
}
