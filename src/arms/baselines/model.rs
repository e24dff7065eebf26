//! Test-only host models of the two radix kernels: line-by-line transcriptions
//! of the selection state machines in `kernels/baselines/radix.cu` (the
//! per-row job, the split tier's merge and the three-launch multi-pass tier)
//! and `kernels/baselines/radix_mcta.cu` (levels, crossing search, candidate
//! cap, take-all, shared-memory refinement, tie fill), with the parallel
//! emission replaced by a sequential loop (the multi-pass model runs its CTAs
//! in any given order, as atomics may). They check the counting design — that
//! the slots handed out are exactly k, unique and tie-aware exact — on the
//! CPU; the CUDA-specific parts (barriers, ballots) run in the host emulator
//! (tests/emu/radix.rs).

/// Order-preserving key (docs/algorithm.md, "Shared ideas").
pub fn fkey(x: f32) -> u32 {
    let u = x.to_bits();
    if u & 0x8000_0000 != 0 {
        !u
    } else {
        u | 0x8000_0000
    }
}

/// Stand-in for the kernel's fp16 level-0 bin: monotone in x, 2048 bins, and
/// (like fp16 bins) NOT aligned with fp32 key prefixes.
fn coarse_bin(x: f32) -> u32 {
    ((fkey(x) as u64 * 2047) / u32::MAX as u64) as u32
}

/// `find_crossing`: bin B with after(B) < t <= after(B) + h[B] → (B, after(B), h[B]).
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

fn digit_bits(shift: u32) -> u32 {
    if shift == 10 {
        10
    } else {
        11
    }
}

/// Candidate classification against (shift, prefix): +1 winner, 0 candidate, -1 below.
fn class_key(key: u32, shift: u32, prefix: u32) -> i32 {
    if shift >= 32 {
        return 0;
    }
    let p = key >> shift;
    (p > prefix) as i32 - (p < prefix) as i32
}

/// Model of `radix_select` with candidate capacity `cap` (2048 in the kernel).
pub fn radix_select(row: &[f32], k: usize, cap: usize) -> Vec<i32> {
    let n = row.len();
    let k32 = k as u32;
    if n <= k {
        return (0..k).map(|s| if s < n { s as i32 } else { -1 }).collect();
    }
    let mut out = vec![i32::MIN; k];
    let mut hist = vec![0u32; 2048];
    for &x in row {
        hist[coarse_bin(x) as usize] += 1;
    }
    let (b0, above0, m0) = crossing(&hist, k32);
    let half_mode;
    let (mut shift, mut prefix, mut need, mut cand_m);
    if m0 as usize <= cap {
        half_mode = true;
        (shift, prefix, need, cand_m) = (32u32, b0, k32 - above0, m0);
    } else {
        half_mode = false;
        (shift, prefix, need, cand_m) = (32u32, 0u32, k32, n as u32);
        while shift > 0 && cand_m as usize > cap && cand_m != need {
            let bits = digit_bits(shift);
            let low = shift - bits;
            hist.iter_mut().for_each(|h| *h = 0);
            for &x in row {
                let key = fkey(x);
                if shift >= 32 || key >> shift == prefix {
                    hist[((key >> low) & ((1 << bits) - 1)) as usize] += 1;
                }
            }
            let (b, above, m) = crossing(&hist, need);
            need -= above;
            prefix = if shift >= 32 { b } else { (prefix << bits) | b };
            shift = low;
            cand_m = m;
        }
    }
    let take_all = cand_m == need;
    let direct_ties = !take_all && !half_mode && shift == 0;
    let win_cap = if take_all { k32 } else { k32 - need };
    let (mut win, mut ties) = (0u32, 0u32);
    let mut cands: Vec<(u32, i32)> = Vec::new();
    for (i, &x) in row.iter().enumerate() {
        let cls = if half_mode {
            let b = coarse_bin(x);
            (b > prefix) as i32 - (b < prefix) as i32
        } else {
            class_key(fkey(x), shift, prefix)
        };
        if cls > 0 || (take_all && cls == 0) {
            assert!(win < win_cap, "winner slot {win} beyond {win_cap}");
            out[win as usize] = i as i32;
            win += 1;
        } else if cls == 0 && direct_ties {
            if ties < need {
                out[(k32 - need + ties) as usize] = i as i32;
            }
            ties += 1;
        } else if cls == 0 {
            assert!(cands.len() < cap, "candidate buffer overflow");
            cands.push((fkey(x), i as i32));
        }
    }
    if take_all || direct_ties {
        return out;
    }
    assert_eq!(
        cands.len() as u32,
        cand_m,
        "collect pass disagrees with the histogram"
    );
    while shift > 0 && cand_m != need {
        let bits = digit_bits(shift);
        let low = shift - bits;
        hist.iter_mut().for_each(|h| *h = 0);
        for &(key, _) in &cands {
            if shift >= 32 || key >> shift == prefix {
                hist[((key >> low) & ((1 << bits) - 1)) as usize] += 1;
            }
        }
        let (b, above, m) = crossing(&hist, need);
        need -= above;
        prefix = if shift >= 32 { b } else { (prefix << bits) | b };
        shift = low;
        cand_m = m;
    }
    let take_rest = cand_m == need;
    let rest_cap = if take_rest { k32 } else { k32 - need };
    for &(key, idx) in &cands {
        let cls = class_key(key, shift, prefix);
        if cls > 0 || (take_rest && cls == 0) {
            assert!(win < rest_cap);
            out[win as usize] = idx;
            win += 1;
        } else if cls == 0 {
            if ties < need {
                out[(k32 - need + ties) as usize] = idx;
            }
            ties += 1;
        }
    }
    out
}

/// Model of `radix_topk_split` for one row: per-slice selection with values,
/// then the merge over the slices' candidates.
pub fn radix_split(row: &[f32], k: usize, bpr: usize, cap: usize) -> Vec<i32> {
    let n = row.len();
    if n <= k || n < bpr * (k + 8) {
        return radix_select(row, k, cap);
    }
    let mut vals = Vec::with_capacity(bpr * k);
    let mut idxs = Vec::with_capacity(bpr * k);
    for s in 0..bpr {
        let start = (s * n / bpr) & !3;
        let end = if s + 1 == bpr {
            n
        } else {
            ((s + 1) * n / bpr) & !3
        };
        assert!(end - start > k, "slice {s} too short");
        for local in radix_select(&row[start..end], k, cap) {
            assert!(local >= 0);
            idxs.push(start as i32 + local);
            vals.push(row[start + local as usize]);
        }
    }
    radix_select(&vals, k, cap)
        .into_iter()
        .map(|p| idxs[p as usize])
        .collect()
}

/// Model of `radix_topk_multipass` for one row: `bpr` CTAs of `block`
/// threads share the row (float4 number i4 belongs to CTA (i4 / block) mod
/// bpr, list entry i to CTA (i / block) mod bpr), and every pass runs them in
/// `order` (a permutation of 0..bpr; its last CTA is the one elected to
/// finish the pass). Winners and list entries take slots from the row's
/// shared counters in arrival order, exactly as the kernel's atomics may.
pub fn radix_multipass(
    row: &[f32],
    k: usize,
    bpr: usize,
    block: usize,
    order: &[usize],
) -> Vec<i32> {
    let n = row.len();
    if n <= k {
        return (0..k).map(|s| if s < n { s as i32 } else { -1 }).collect();
    }
    assert_eq!(order.len(), bpr);
    let k32 = k as u32;
    let cta_of_pos = |p: usize| (p / 4 / block) % bpr;
    let cta_of_entry = |i: usize| (i / block) % bpr;
    let mut out = vec![i32::MIN; k];
    let mut win = 0usize;
    let emit = |out: &mut Vec<i32>, slot: usize, p: usize| {
        assert_eq!(out[slot], i32::MIN, "slot {slot} written twice");
        out[slot] = p as i32;
    };
    // Pass 0: the row's histogram of key bits [31:21] (the order of the
    // CTAs' additions does not matter).
    let mut hist = vec![0u32; 2048];
    for &x in row {
        hist[(fkey(x) >> 21) as usize] += 1;
    }
    let (d1, above, _) = crossing(&hist, k32);
    let need1 = k32 - above;
    // Pass 1: the row again.
    let mut hist = vec![0u32; 2048];
    let mut list_a = Vec::new();
    for &s in order {
        for (p, &x) in row.iter().enumerate().filter(|&(p, _)| cta_of_pos(p) == s) {
            let key = fkey(x);
            if key >> 21 > d1 {
                emit(&mut out, win, p);
                win += 1;
            } else if key >> 21 == d1 {
                list_a.push(p);
                hist[((key >> 10) & 2047) as usize] += 1;
            }
        }
    }
    let (d2, above, _) = crossing(&hist, need1);
    let need2 = need1 - above;
    assert_eq!(win as u32, k32 - need1, "pass 1 winners");
    // Pass 2: list A.
    let mut hist = vec![0u32; 2048];
    let mut list_b = Vec::new();
    for &s in order {
        for (_, &p) in list_a
            .iter()
            .enumerate()
            .filter(|&(i, _)| cta_of_entry(i) == s)
        {
            let key = fkey(row[p]);
            let mid = (key >> 10) & 2047;
            if mid > d2 {
                emit(&mut out, win, p);
                win += 1;
            } else if mid == d2 {
                list_b.push(p);
                hist[(key & 1023) as usize] += 1;
            }
        }
    }
    let (d3, above, count) = crossing(&hist, need2);
    let need = (need2 - above) as usize;
    assert!(count as usize >= need && need >= 1);
    // Final emission by the last CTA: list B in its own order.
    let mut ties = 0usize;
    for &p in &list_b {
        let low = fkey(row[p]) & 1023;
        if low > d3 {
            assert!(win < k - need, "winner slot {win} beyond {}", k - need);
            emit(&mut out, win, p);
            win += 1;
        } else if low == d3 {
            if ties < need {
                emit(&mut out, k - need + ties, p);
            }
            ties += 1;
        }
    }
    assert_eq!(win, k - need, "winners");
    assert_eq!(ties, count as usize, "ties");
    out
}

/// Model of `radix_mcta_topk` for one row (the merged histogram of a group
/// equals the histogram of the whole row, so chunks do not appear).
pub fn radix_mcta(row: &[f32], k: usize) -> Vec<i32> {
    let n = row.len();
    let k32 = k as u32;
    if n <= k {
        return (0..k).map(|s| if s < n { s as i32 } else { -1 }).collect();
    }
    let keys: Vec<u32> = row.iter().map(|&x| fkey(x)).collect();
    let (mut prefix, mut shift, mut need, mut cand_m) = (0u32, 32u32, k32, n as u32);
    while shift > 0 && cand_m != need {
        let low = shift - 8;
        let mut hist = [0u32; 256];
        for &key in &keys {
            if shift >= 32 || key >> shift == prefix {
                hist[((key >> low) & 255) as usize] += 1;
            }
        }
        let (b, above, m) = crossing(&hist, need);
        need -= above;
        prefix = if shift >= 32 { b } else { (prefix << 8) | b };
        shift = low;
        cand_m = m;
    }
    let take_all = cand_m == need;
    let win_cap = if take_all { k32 } else { k32 - need };
    let mut out = vec![i32::MIN; k];
    let (mut win, mut ties) = (0u32, 0u32);
    for (i, &key) in keys.iter().enumerate() {
        let cls = class_key(key, shift, prefix);
        if cls > 0 || (take_all && cls == 0) {
            assert!(win < win_cap);
            out[win as usize] = i as i32;
            win += 1;
        } else if cls == 0 && !take_all {
            if ties < need {
                out[(k32 - need + ties) as usize] = i as i32;
            }
            ties += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Tie-aware check: k unique in-range indices (or identity/-1 for short
    /// rows) whose value keys equal the k largest keys of the row.
    fn assert_exact(row: &[f32], k: usize, out: &[i32]) {
        assert_eq!(out.len(), k);
        let n = row.len();
        if n <= k {
            for (s, &v) in out.iter().enumerate() {
                assert_eq!(v, if s < n { s as i32 } else { -1 });
            }
            return;
        }
        let mut seen = std::collections::HashSet::new();
        for &i in out {
            assert!(i >= 0 && (i as usize) < n, "index {i} out of [0, {n})");
            assert!(seen.insert(i), "index {i} twice");
        }
        let mut want: Vec<u32> = row.iter().map(|&x| fkey(x)).collect();
        want.sort_unstable_by(|a, b| b.cmp(a));
        want.truncate(k);
        let mut got: Vec<u32> = out.iter().map(|&i| fkey(row[i as usize])).collect();
        got.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(got, want);
    }

    /// Rows with few distinct values (heavy ties), wide ranges, ±inf, ±0.
    fn row_strategy(max_n: usize) -> impl Strategy<Value = Vec<f32>> {
        let value = prop_oneof![
            (0u32..6).prop_map(|v| v as f32 * 0.5),
            any::<u32>()
                .prop_map(f32::from_bits)
                .prop_filter("no NaN", |x| !x.is_nan()),
            (-1000.0f32..1000.0),
            Just(f32::INFINITY),
            Just(f32::NEG_INFINITY),
            Just(-0.0f32),
            (0u32..4).prop_map(|v| 1.0 + v as f32 * f32::EPSILON),
        ];
        prop::collection::vec(value, 0..max_n)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(150))]

        #[test]
        fn radix_model_is_exact(row in row_strategy(600), k in 1usize..64, cap in 1usize..64) {
            assert_exact(&row, k, &radix_select(&row, k, cap));
        }

        #[test]
        fn radix_split_model_is_exact(row in row_strategy(900), k in 1usize..24, bpr in 2usize..6, cap in 1usize..40) {
            assert_exact(&row, k, &radix_split(&row, k, bpr, cap));
        }

        #[test]
        fn multipass_model_is_exact(
            row in row_strategy(900),
            k in 1usize..64,
            bpr in 1usize..6,
            block in prop::sample::select(vec![1usize, 2, 8, 32]),
            seed in any::<u64>(),
        ) {
            assert_exact(&row, k, &radix_multipass(&row, k, bpr, block, &shuffled(bpr, seed)));
        }

        #[test]
        fn mcta_model_is_exact(row in row_strategy(600), k in 1usize..64) {
            assert_exact(&row, k, &radix_mcta(&row, k));
        }
    }

    /// A permutation of 0..n from `seed` (xorshift Fisher–Yates).
    fn shuffled(n: usize, seed: u64) -> Vec<usize> {
        let mut state = seed | 1;
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            order.swap(i, (state % (i as u64 + 1)) as usize);
        }
        order
    }

    #[test]
    fn multipass_model_at_kernel_constants() {
        // 70 001 values (B = 1 gets 34 CTAs of 512 threads at N / 2048),
        // randn-like spread plus a 3-value ulp cluster straddling k, an
        // all-equal row and -0/+0/±inf.
        let mut row: Vec<f32> = (0..70_001)
            .map(|i| ((i as u64 * 2_654_435_761) % 100_003) as f32 / 1000.0)
            .collect();
        for (j, x) in row.iter_mut().step_by(17).enumerate() {
            *x = 200.0 + (j % 3) as f32 * f32::EPSILON * 200.0;
        }
        for k in [512, 1024, 2048] {
            for (bpr, seed) in [(34, 1), (7, 2), (1, 3)] {
                assert_exact(
                    &row,
                    k,
                    &radix_multipass(&row, k, bpr, 512, &shuffled(bpr, seed)),
                );
            }
        }
        let mut mixed = vec![2.5f32; 9_000];
        mixed[1] = f32::INFINITY;
        mixed[2] = f32::NEG_INFINITY;
        mixed[3] = -0.0;
        mixed[4] = 0.0;
        for k in [512, 2048] {
            assert_exact(&mixed, k, &radix_multipass(&mixed, k, 3, 512, &[2, 0, 1]));
        }
    }

    #[test]
    fn all_equal_row_fills_ties_up_to_k() {
        let row = vec![2.5f32; 5000];
        assert_exact(&row, 512, &radix_select(&row, 512, 2048));
        assert_exact(&row, 512, &radix_mcta(&row, 512));
        assert_exact(&row, 512, &radix_split(&row, 512, 4, 2048));
        assert_exact(
            &row,
            512,
            &radix_multipass(&row, 512, 4, 512, &[3, 1, 0, 2]),
        );
    }

    #[test]
    fn deep_refinement_at_kernel_constants() {
        // 3000 distinct values within one coarse bin: level-0 candidates exceed
        // the cap, so the fp32 levels and the shared-memory refinement run.
        let row: Vec<f32> = (0..6000)
            .map(|i| 1.0 + (i % 3000) as f32 * f32::EPSILON)
            .collect();
        for k in [512, 1024, 2048] {
            assert_exact(&row, k, &radix_select(&row, k, 2048));
            assert_exact(&row, k, &radix_mcta(&row, k));
        }
    }
}
