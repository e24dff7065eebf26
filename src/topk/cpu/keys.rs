//! Shared building blocks of the self-sampling model (docs/algorithm.md, "Shared ideas"):
//! order-preserving keys, histogram crossings and exact key-space narrowing.

/// Streaming histogram size (`NBS`).
pub const BINS: usize = 256;

/// Order-preserving key: unsigned key order equals numeric order over
/// all finite values and ±inf, with `fkey(-0) < fkey(+0)`. Every NaN (either
/// sign, any payload) maps to `u32::MAX`, above +inf: the NaN contract ranks
/// NaN above everything and ties NaNs with each other.
#[inline]
pub fn fkey(x: f32) -> u32 {
    let bits = x.to_bits();
    if x.is_nan() {
        u32::MAX
    } else if bits & 0x8000_0000 != 0 {
        !bits
    } else {
        bits | 0x8000_0000
    }
}

/// Exact inverse of [`fkey`] (up to the NaN payload: `invkey(u32::MAX)` is a NaN).
#[inline]
pub fn invkey(key: u32) -> f32 {
    let bits = if key & 0x8000_0000 != 0 {
        key & 0x7FFF_FFFF
    } else {
        !key
    };
    f32::from_bits(bits)
}

/// Candidate key of the main/clus crossing bin: value, then index (a strict
/// total order, so larger index wins among equal values).
#[inline]
pub fn candidate_key(x: f32, index: u32) -> u64 {
    ((fkey(x) as u64) << 32) | index as u64
}

/// The crossing of a histogram for a target `t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crossing {
    pub bin: usize,
    /// Count strictly above `bin`.
    pub above: usize,
    /// Count in `bin`.
    pub m: usize,
}

impl Crossing {
    /// How many of `bin` are needed to reach the target.
    pub fn need(&self, t: usize) -> usize {
        t.saturating_sub(self.above)
    }
}

/// Crossing bin of `hist` for target `t`: the bin with
/// `after(B) < t ≤ after(B) + h[B]`. When the total is below `t` bin 0 is
/// pinned anyway (the "fake crossing" every scan produces; callers check the
/// total). `t = 0` pins nothing.
pub fn crossing(hist: &[u32], t: usize) -> Option<Crossing> {
    if t == 0 || hist.is_empty() {
        return None;
    }
    let mut after = 0usize;
    for bin in (0..hist.len()).rev() {
        let m = hist[bin] as usize;
        if after < t && t <= after + m {
            return Some(Crossing {
                bin,
                above: after,
                m,
            });
        }
        if bin == 0 {
            return Some(Crossing {
                bin: 0,
                above: after,
                m,
            });
        }
        after += m;
    }
    None
}

/// Cursor form of a histogram: `cursor[j] = after(j)`.
pub fn cursors(hist: &[u32]) -> Vec<usize> {
    let mut out = vec![0usize; hist.len()];
    let mut after = 0usize;
    for bin in (0..hist.len()).rev() {
        out[bin] = after;
        after += hist[bin] as usize;
    }
    out
}

/// Result of key-space narrowing: every key `> ethr` is a winner
/// (`winners` of them), and `ties` of the keys `== ethr` complete the set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Narrowed {
    pub ethr: i64,
    pub winners: usize,
    pub ties: usize,
    /// The level cap stopped the loop with a range of more than one key
    /// (unreachable with 8 bits per level; counted so tests can prove it).
    pub hit_level_cap: bool,
}

/// Exact selection of the `need` largest keys of a multiset: narrow
/// `[lo, hi]` by 256-bin histograms of `(key − lo) >> sh` until the crossing
/// is a single key value or wholly needed. `keys` is re-iterated each level
/// (the GPU re-reads the staged list or the row). Requires every key to lie
/// in `[lo, hi]` and `need ≤` their count.
pub fn narrow<I, F>(keys: F, lo: u32, hi: u32, need: usize, max_levels: u32) -> Narrowed
where
    F: Fn() -> I,
    I: Iterator<Item = u32>,
{
    let (mut lo, mut hi) = (lo as u64, hi as u64);
    let mut need = need;
    let mut winners = 0usize;
    let mut in_range = keys()
        .filter(|&key| (lo..=hi).contains(&(key as u64)))
        .count();
    let mut level = 0u32;
    loop {
        if need == in_range {
            // The whole remaining range is needed: no tie class.
            return Narrowed {
                ethr: lo as i64 - 1,
                winners: winners + in_range,
                ties: 0,
                hit_level_cap: false,
            };
        }
        if lo >= hi || level == max_levels {
            return Narrowed {
                ethr: lo as i64,
                winners,
                ties: need,
                hit_level_cap: lo < hi,
            };
        }
        let width = hi - lo;
        let bitlen = 64 - (width | 1).leading_zeros();
        let shift = bitlen.saturating_sub(BINS.trailing_zeros());
        let mut hist = [0u32; BINS];
        for key in keys() {
            let key = key as u64;
            if (lo..=hi).contains(&key) {
                hist[(((key - lo) >> shift) as usize).min(BINS - 1)] += 1;
            }
        }
        let Some(cross) = crossing(&hist, need) else {
            // need == 0 is caught above (in_range ≥ 0 == need); kept total.
            return Narrowed {
                ethr: hi as i64,
                winners,
                ties: 0,
                hit_level_cap: false,
            };
        };
        winners += cross.above;
        need -= cross.above.min(need);
        in_range = cross.m;
        let new_lo = lo + ((cross.bin as u64) << shift);
        if cross.bin != BINS - 1 {
            // Clamped to the old top so keys already counted above never re-enter.
            hi = (new_lo + (1u64 << shift) - 1).min(hi);
        }
        lo = new_lo;
        level += 1;
    }
}

/// Two-predicate emit after [`narrow`]: winners (`key > ethr`) to
/// `out[base + p]` for `p < winners`, ties (`key == ethr`) to
/// `out[base + winners + p]` for `p < ties`; writes beyond a region's
/// capacity are dropped, exactly as the ballot emit does.
pub fn emit_narrowed<I>(out: &mut [i32], base: usize, items: I, result: &Narrowed)
where
    I: Iterator<Item = (u32, i32)>,
{
    let (mut won, mut tied) = (0usize, 0usize);
    for (key, index) in items {
        let key = key as i64;
        if key > result.ethr {
            if won < result.winners {
                if let Some(slot) = out.get_mut(base + won) {
                    *slot = index;
                }
            }
            won += 1;
        } else if key == result.ethr {
            if tied < result.ties {
                if let Some(slot) = out.get_mut(base + result.winners + tied) {
                    *slot = index;
                }
            }
            tied += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fkey_orders_like_the_floats_and_inverts() {
        let xs = [
            f32::NEG_INFINITY,
            -3.0e38,
            -1.0,
            -1e-40,
            -0.0,
            0.0,
            1e-40,
            1.0,
            3.0e38,
            f32::INFINITY,
        ];
        for pair in xs.windows(2) {
            assert!(fkey(pair[0]) < fkey(pair[1]), "{pair:?}");
        }
        for &x in &xs {
            assert_eq!(invkey(fkey(x)).to_bits(), x.to_bits());
        }
        assert!(invkey(0).is_nan() && invkey(u32::MAX).is_nan());
    }

    #[test]
    fn crossing_finds_the_bin_and_pins_bin_zero_when_short() {
        let mut hist = [0u32; BINS];
        hist[10] = 5;
        hist[200] = 3;
        assert_eq!(
            crossing(&hist, 3),
            Some(Crossing {
                bin: 200,
                above: 0,
                m: 3
            })
        );
        assert_eq!(
            crossing(&hist, 4),
            Some(Crossing {
                bin: 10,
                above: 3,
                m: 5
            })
        );
        assert_eq!(
            crossing(&hist, 9),
            Some(Crossing {
                bin: 0,
                above: 8,
                m: 0
            }),
            "fake crossing"
        );
        assert_eq!(crossing(&hist, 0), None);
        assert_eq!(cursors(&hist)[10], 3);
        assert_eq!(cursors(&hist)[0], 8);
    }

    fn select_by_narrowing(keys: &[u32], need: usize) -> Vec<u32> {
        let result = narrow(|| keys.iter().copied(), 0, u32::MAX, need, 8);
        assert!(!result.hit_level_cap);
        let mut out = vec![-1i32; need];
        emit_narrowed(&mut out, 0, keys.iter().copied().zip(0..), &result);
        let mut chosen: Vec<u32> = out.iter().map(|&i| keys[i as usize]).collect();
        chosen.sort_unstable();
        chosen
    }

    #[test]
    fn narrowing_selects_the_largest_keys_with_ties() {
        let keys: Vec<u32> = (0..5000u32)
            .map(|i| i.wrapping_mul(2_654_435_761) % 977)
            .collect();
        for need in [1, 2, 17, 500, 4999, 5000] {
            let mut sorted = keys.clone();
            sorted.sort_unstable_by(|a, b| b.cmp(a));
            let mut want = sorted[..need].to_vec();
            want.sort_unstable();
            assert_eq!(select_by_narrowing(&keys, need), want, "need={need}");
        }
        let equal = vec![7u32; 100];
        assert_eq!(select_by_narrowing(&equal, 40), vec![7; 40]);
        let extremes = vec![0u32, u32::MAX, u32::MAX, 0, 5];
        assert_eq!(
            select_by_narrowing(&extremes, 3),
            vec![5, u32::MAX, u32::MAX]
        );
    }
}
