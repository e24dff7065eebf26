//! Order statistics and the geometric mean, shared by every summary. The
//! median and the means are statrs'; `quantile_sorted` stays hand-written
//! because statrs' `quantile` is Hyndman–Fan type 8, not the type 7 of R's
//! and NumPy's default that the report's P5/P95 are defined by.

use statrs::statistics::{Data, Median, Statistics};

/// Quantile `q` (0 ≤ q ≤ 1) of an ascending-sorted sample by linear
/// interpolation between order statistics (Hyndman–Fan type 7, the default of
/// R and NumPy): with n values x₀ ≤ … ≤ xₙ₋₁, let h = (n − 1)·q; the result is
/// x⌊h⌋ + (h − ⌊h⌋)·(x⌊h⌋₊₁ − x⌊h⌋). So q = 0 is the minimum, q = 1 the
/// maximum, and the median of an even sample is the mean of the middle two.
///
/// Returns `None` for an empty sample or a `q` outside [0, 1] (including NaN).
pub fn quantile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let h = (sorted.len() - 1) as f64 * q;
    let lower = h.floor() as usize;
    let upper = (lower + 1).min(sorted.len() - 1);
    let fraction = h - lower as f64;
    Some(sorted[lower] + fraction * (sorted[upper] - sorted[lower]))
}

/// Median of the finite values (the mean of the middle two for an even
/// count); `None` when there are none.
pub fn median(values: &[f64]) -> Option<f64> {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    (!finite.is_empty()).then(|| Data::new(finite).median())
}

/// The finite values of `values`, sorted ascending (non-finite values cannot
/// be ordered meaningfully and never come from a valid measurement).
pub fn sorted_finite(values: &[f64]) -> Vec<f64> {
    let mut out: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    out.sort_by(f64::total_cmp);
    out
}

/// Geometric mean exp(mean(ln xᵢ)), computed in log space so that thousands
/// of ratios cannot overflow. `None` for an empty sample or when any value is
/// not a finite positive number (a geomean of such values is meaningless).
pub fn geomean(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| !v.is_finite() || *v <= 0.0) {
        return None;
    }
    Some(values.geometric_mean())
}

/// Arithmetic mean; `None` for an empty sample.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.mean())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn quantiles_interpolate_between_order_statistics() {
        let x = [1.0, 2.0, 4.0, 8.0, 16.0];
        // h = 4q: q = 0.5 -> x2; q = 0.05 -> h = 0.2 -> 1 + 0.2·1; q = 0.95 -> h = 3.8 -> 8 + 0.8·8.
        assert!(close(quantile_sorted(&x, 0.5).unwrap(), 4.0));
        assert!(close(quantile_sorted(&x, 0.05).unwrap(), 1.2));
        assert!(close(quantile_sorted(&x, 0.95).unwrap(), 14.4));
        assert!(close(quantile_sorted(&x, 0.0).unwrap(), 1.0));
        assert!(close(quantile_sorted(&x, 1.0).unwrap(), 16.0));
        // Even-sized sample: the median is the mean of the middle two.
        assert!(close(
            quantile_sorted(&[1.0, 3.0, 5.0, 7.0], 0.5).unwrap(),
            4.0
        ));
        // h = 3·0.25 = 0.75 -> 1 + 0.75·2.
        assert!(close(
            quantile_sorted(&[1.0, 3.0, 5.0, 7.0], 0.25).unwrap(),
            2.5
        ));
    }

    #[test]
    fn quantile_edge_cases() {
        assert_eq!(quantile_sorted(&[], 0.5), None);
        assert_eq!(quantile_sorted(&[3.0], 0.99), Some(3.0));
        assert_eq!(quantile_sorted(&[1.0, 2.0], 1.5), None);
        assert_eq!(quantile_sorted(&[1.0, 2.0], f64::NAN), None);
    }

    #[test]
    fn geomean_of_known_ratios() {
        assert!(close(geomean(&[2.0, 8.0]).unwrap(), 4.0));
        assert!(close(geomean(&[0.5, 2.0, 1.0]).unwrap(), 1.0));
        assert!(close(geomean(&[1.0, 10.0, 100.0]).unwrap(), 10.0));
        assert_eq!(geomean(&[]), None);
        assert_eq!(geomean(&[1.0, 0.0]), None);
        assert_eq!(geomean(&[1.0, f64::INFINITY]), None);
    }

    #[test]
    fn sorted_finite_drops_nan_and_sorts() {
        assert_eq!(
            sorted_finite(&[3.0, f64::NAN, 1.0, 2.0]),
            vec![1.0, 2.0, 3.0]
        );
    }
}
