//! The exact CPU reference top-K.
//!
//! Values are compared through an order-preserving `u32` key so that a
//! selection over keys is a selection over floats: −0.0 and +0.0 get the same
//! key (docs/method.md, "What \"exact\" means", normalises signed zeros), and every NaN (either sign,
//! any payload) sorts above +inf with all NaNs tied: torch.topk's order, the
//! NaN contract every arm is certified against.

/// Order-preserving key of an fp32 value: `a < b` (as reals, with −0 == +0)
/// iff `order_key(a) < order_key(b)`; NaN maps above +inf.
#[inline]
pub fn order_key(x: f32) -> u32 {
    // Adding +0.0 maps −0.0 to +0.0 and leaves every other value unchanged.
    let bits = (x + 0.0).to_bits();
    // Negative: flip all bits; non-negative: set the sign bit. Written
    // branch-free so the checker's row scan vectorises.
    let flip = (((bits as i32) >> 31) as u32) | 0x8000_0000;
    if x.is_nan() {
        u32::MAX
    } else {
        bits ^ flip
    }
}

/// Exact top-`k` indices of `row`.
///
/// Rows with `n > k`: the `k` indices of the largest values, sorted by value
/// descending, ties broken by the smaller index (any tie order is exact; this
/// one is just deterministic). Rows with `n <= k` (short rows): the identity
/// `0..n` followed by `-1` up to `k`, the production short-row contract.
///
/// ```
/// use gvr_bench::exact::{check_row, reference_topk};
///
/// let row = [0.5, 3.0, -1.0, 3.0, 2.0];
/// assert_eq!(reference_topk(&row, 3), vec![1, 3, 4]);
/// assert_eq!(reference_topk(&row[..2], 3), vec![0, 1, -1]);
/// // Tied values are interchangeable: index 3 may stand in for index 1.
/// assert!(check_row(&row, 2, &[3, 1]).is_ok());
/// assert!(check_row(&row, 2, &[3, 4]).is_err());
/// ```
pub fn reference_topk(row: &[f32], k: usize) -> Vec<i32> {
    let n = row.len();
    if n <= k {
        let mut out: Vec<i32> = (0..n as i32).collect();
        out.resize(k, -1);
        return out;
    }
    if k == 0 {
        return Vec::new();
    }
    // Pack (key, reversed index) into one u64 so that a plain integer
    // selection gives value-descending order with the smaller index first.
    let mut packed: Vec<u64> = row
        .iter()
        .enumerate()
        .map(|(i, &x)| ((order_key(x) as u64) << 32) | (u32::MAX - i as u32) as u64)
        .collect();
    packed.select_nth_unstable_by(k - 1, |a, b| b.cmp(a));
    let top = &mut packed[..k];
    top.sort_unstable_by(|a, b| b.cmp(a));
    top.iter()
        .map(|&p| (u32::MAX - (p & 0xFFFF_FFFF) as u32) as i32)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_key_is_monotone_and_merges_signed_zeros() {
        let ordered = [
            f32::NEG_INFINITY,
            -f32::MAX,
            -1.0,
            -f32::MIN_POSITIVE,
            -1e-45,
            0.0,
            1e-45,
            f32::MIN_POSITIVE,
            1.0,
            f32::MAX,
            f32::INFINITY,
            f32::NAN,
        ];
        for w in ordered.windows(2) {
            assert!(order_key(w[0]) < order_key(w[1]), "{} !< {}", w[0], w[1]);
        }
        assert_eq!(order_key(-0.0), order_key(0.0));
        assert_eq!(order_key(-f32::NAN), order_key(f32::NAN));
    }

    #[test]
    fn reference_picks_largest_with_smaller_index_on_ties() {
        let row = [1.0, 5.0, 3.0, 5.0, -2.0, 4.0];
        assert_eq!(reference_topk(&row, 3), vec![1, 3, 5]);
        assert_eq!(reference_topk(&row, 1), vec![1]);
    }

    #[test]
    fn short_rows_give_identity_then_minus_one() {
        assert_eq!(reference_topk(&[3.0, 1.0], 4), vec![0, 1, -1, -1]);
        assert_eq!(reference_topk(&[], 2), vec![-1, -1]);
        assert_eq!(reference_topk(&[1.0, 2.0, 3.0], 3), vec![0, 1, 2]);
    }

    #[test]
    fn matches_full_sort_on_random_rows() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for n in [5usize, 64, 1000, 4097] {
            let row: Vec<f32> = (0..n)
                .map(|_| (rng.random_range(-50..50) as f32) * 0.25)
                .collect();
            let k = n / 3 + 1;
            let got = reference_topk(&row, k);
            let mut idx: Vec<usize> = (0..n).collect();
            idx.sort_by(|&a, &b| row[b].total_cmp(&row[a]).then(a.cmp(&b)));
            let want: Vec<i32> = idx[..k].iter().map(|&i| i as i32).collect();
            assert_eq!(got, want, "n={n}");
        }
    }
}
