//! Test-only host model of `kernels/baselines/filtered.cu`: a sequential transcription
//! of its selection state machine (coarse fp16 bin, overflow rounds over the
//! row, filter pass, ping-pong refine rounds, tail ties) with the candidate
//! cap as a parameter, so tiny caps drive every path. Parallel emission is a
//! loop here; the asserts are the kernel's counting invariants.

use crate::arms::baselines::gvr1::model::{assert_exact, fkey, row_strategy};

/// IEEE binary16 bits of `x`, round to nearest even (what `cvt.rn.f16.f32` does).
pub fn f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 255 {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 31 {
        return sign | 0x7c00;
    }
    let (mant, shift) = if e >= 1 {
        // Normal: keep 10 of 23 mantissa bits; a carry may bump the exponent
        // (up to 0x7c00 = inf), which is the correct rounding.
        (((e as u32) << 23) | man, 13u32)
    } else {
        // Subnormal (or zero): value = mant * 2^-24.
        let s = (14 - e) as u32;
        if s > 24 {
            return sign;
        }
        (man | 0x80_0000, s)
    };
    let kept = mant >> shift;
    let rest = mant & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    let up = rest > half || (rest == half && kept & 1 == 1);
    sign | (kept + up as u32) as u16
}

/// `ft_coarse`: top byte of the ordered fp16 key.
pub fn coarse(x: f32) -> u32 {
    let h = f16_bits(x) as u32;
    let key = if h & 0x8000 != 0 {
        !h & 0xffff
    } else {
        h | 0x8000
    };
    key >> 8
}

/// `find_crossing` (bin, above, count); pins bin 0 when the total is < t.
fn crossing(hist: &[u32], t: u32) -> (u32, u32, u32) {
    let mut above = 0u32;
    for b in (0..hist.len()).rev() {
        if above + hist[b] >= t {
            return (b as u32, above, hist[b]);
        }
        above += hist[b];
    }
    (0, above - hist[0], hist[0])
}

fn classify(x: f32, b0: u32, shift: u32, prefix: u32) -> i32 {
    let c = coarse(x);
    if c != b0 {
        return if c > b0 { 1 } else { -1 };
    }
    if shift >= 32 {
        return 0;
    }
    let p = fkey(x) >> shift;
    (p > prefix) as i32 - (p < prefix) as i32
}

/// What the model saw, so tests can assert that a path really ran.
#[derive(Debug, Default, Clone, Copy)]
pub struct FilteredTrace {
    pub overflow_rounds: u32,
    pub refine_rounds: u32,
    pub direct_ties: bool,
}

/// Model of `filtered_topk` for one row with candidate cap `cap` (16 384 in the kernel).
pub fn filtered(row: &[f32], k: usize, cap: usize) -> (Vec<i32>, FilteredTrace) {
    let n = row.len();
    let mut trace = FilteredTrace::default();
    if n <= k {
        let out = (0..k).map(|s| if s < n { s as i32 } else { -1 }).collect();
        return (out, trace);
    }
    let k32 = k as u32;
    let mut out = vec![i32::MIN; k];
    let mut hist = vec![0u32; 256];
    for &x in row {
        hist[coarse(x) as usize] += 1;
    }
    let (b0, above0, m0) = crossing(&hist, k32);
    let (mut need, mut cand_m, mut shift, mut prefix) = (k32 - above0, m0, 32u32, 0u32);
    while cand_m as usize > cap && cand_m != need && shift > 0 {
        let low = shift - 8;
        let mut h = vec![0u32; 256];
        for &x in row {
            if classify(x, b0, shift, prefix) == 0 {
                h[((fkey(x) >> low) & 0xff) as usize] += 1;
            }
        }
        let (b, above, m) = crossing(&h, need);
        need -= above;
        prefix = if shift >= 32 { b } else { (prefix << 8) | b };
        shift = low;
        cand_m = m;
        trace.overflow_rounds += 1;
    }
    let take_all = cand_m == need;
    let direct_ties = !take_all && shift == 0;
    trace.direct_ties = direct_ties;
    let (mut win, mut ties) = (0u32, 0u32);
    let mut cand: Vec<i32> = Vec::new();
    let mut next_hist = vec![0u32; 256];
    for (i, &x) in row.iter().enumerate() {
        let cls = classify(x, b0, shift, prefix);
        if cls > 0 || (take_all && cls == 0) {
            assert!(win < k32, "winner slot {win} >= k");
            out[win as usize] = i as i32;
            win += 1;
        } else if cls == 0 && direct_ties {
            if ties < need {
                out[(k32 - need + ties) as usize] = i as i32;
            }
            ties += 1;
        } else if cls == 0 {
            assert!(cand.len() < cap, "candidate buffer overflow");
            cand.push(i as i32);
            next_hist[((fkey(x) >> (shift - 8)) & 0xff) as usize] += 1;
        }
    }
    if take_all || direct_ties {
        assert!(direct_ties || win == k32);
        return (out, trace);
    }
    assert_eq!(
        cand.len() as u32,
        cand_m,
        "filter pass disagrees with the histogram"
    );
    let mut dshift = shift - 8;
    let mut hist = next_hist;
    loop {
        trace.refine_rounds += 1;
        let (bin, above, count) = crossing(&hist, need);
        let round_need = need - above;
        let round_take_all = count == round_need;
        let last = dshift == 0;
        let forward = !round_take_all && !last;
        let mut next = Vec::new();
        let mut next_h = vec![0u32; 256];
        for &idx in &cand {
            let key = fkey(row[idx as usize]);
            let d = (key >> dshift) & 0xff;
            let cls = (d > bin) as i32 - (d < bin) as i32;
            if cls > 0 || (round_take_all && cls == 0) {
                assert!(win < k32);
                out[win as usize] = idx;
                win += 1;
            } else if cls == 0 && last {
                if ties < round_need {
                    out[(k32 - round_need + ties) as usize] = idx;
                }
                ties += 1;
            } else if cls == 0 {
                assert!(next.len() < cap);
                next.push(idx);
                next_h[((key >> (dshift - 8)) & 0xff) as usize] += 1;
            }
        }
        if !forward {
            return (out, trace);
        }
        assert_eq!(next.len() as u32, count);
        need = round_need;
        cand = next;
        hist = next_h;
        dshift -= 8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn f16_rounding_matches_ieee() {
        assert_eq!(f16_bits(1.0), 0x3c00);
        assert_eq!(f16_bits(-2.0), 0xc000);
        assert_eq!(f16_bits(65504.0), 0x7bff);
        assert_eq!(f16_bits(65520.0), 0x7c00); // halfway to 2^16 rounds to inf
        assert_eq!(f16_bits(f32::INFINITY), 0x7c00);
        assert_eq!(f16_bits(2f32.powi(-24)), 0x0001);
        assert_eq!(f16_bits(2f32.powi(-26)), 0x0000);
        assert_eq!(f16_bits(1.0 + 2f32.powi(-11)), 0x3c00); // tie to even
        assert_eq!(f16_bits(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02);
        assert_eq!(f16_bits(-0.0), 0x8000);
    }

    #[test]
    fn coarse_bin_is_monotone() {
        let mut xs: Vec<f32> = (-2000..2000)
            .map(|i| i as f32 * 37.5)
            .chain([f32::NEG_INFINITY, -0.0, 0.0, 1e-30, f32::MAX, f32::INFINITY])
            .collect();
        xs.sort_by_key(|&x| fkey(x));
        for w in xs.windows(2) {
            assert!(coarse(w[0]) <= coarse(w[1]), "{} {}", w[0], w[1]);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn filtered_model_is_exact(row in row_strategy(700), k in 1usize..64, cap in 1usize..80) {
            let (out, _) = filtered(&row, k, cap);
            assert_exact(&row, k, &out);
        }
    }

    #[test]
    fn overflow_path_runs_and_stays_exact() {
        // 6000 values inside one fp16 bin (1.0 .. 1.0 + 6000 ulp): B0 holds
        // them all, far above a cap of 1000, so the row rounds run.
        let row: Vec<f32> = (0..6000)
            .map(|i| f32::from_bits(1.0f32.to_bits() + (i * 7919 % 6000) as u32))
            .collect();
        for k in [512, 1024, 2048] {
            let (out, trace) = filtered(&row, k, 1000);
            assert!(trace.overflow_rounds > 0, "{trace:?}");
            assert_exact(&row, k, &out);
            let (out, trace) = filtered(&row, k, 16_384);
            assert_eq!(trace.overflow_rounds, 0);
            assert!(trace.refine_rounds > 0);
            assert_exact(&row, k, &out);
        }
    }

    #[test]
    fn plateau_over_the_cap_fills_ties_directly() {
        let mut row = vec![3.25f32; 5000];
        row.extend((0..100).map(|i| 10.0 + i as f32));
        let (out, trace) = filtered(&row, 512, 64);
        assert!(trace.direct_ties, "{trace:?}");
        assert_exact(&row, 512, &out);
    }

    #[test]
    fn infinities_and_saturated_fp16_bins() {
        // Everything above 65 520 shares the fp16 +inf bin with +inf itself.
        let mut row: Vec<f32> = (0..3000).map(|i| 70_000.0 + i as f32).collect();
        row.extend([f32::INFINITY; 7]);
        row.extend([f32::NEG_INFINITY; 500]);
        for k in [512, 1024, 2048] {
            let (out, _) = filtered(&row, k, 256);
            assert_exact(&row, k, &out);
        }
    }
}
