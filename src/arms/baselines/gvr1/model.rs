//! Test-only host model of `kernels/baselines/gvr1.cu`: a sequential transcription of
//! the guess (hint gather), the verify search (secant / bisection on the
//! count, key space), the state hand-off and the exact selection (row
//! narrowing levels, collect, shared-memory narrowing, emission), with the
//! candidate cap as a parameter. The asserts are the kernel's counting
//! invariants; parallel emission is a loop here.
//!
//! The cluster tier (`gvr1_topk_c{2,4,8}`) is modelled by
//! [`gvr1_clustered`]: counts are the sum of the CS slice counts (the DSMEM
//! all-reduce), the collect is one buffer per slice, appended in rank order
//! by rank 0. Slices are contiguous and in row order, so the appended buffer
//! equals the whole-row collect; the asserts check the slice arithmetic.

use proptest::prelude::*;

/// Order-preserving key (docs/algorithm.md, "Shared ideas").
pub fn fkey(x: f32) -> u32 {
    let u = x.to_bits();
    if u & 0x8000_0000 != 0 {
        !u
    } else {
        u | 0x8000_0000
    }
}

pub fn invkey(k: u32) -> f32 {
    f32::from_bits(if k & 0x8000_0000 != 0 {
        k & 0x7fff_ffff
    } else {
        !k
    })
}

const BINS: u32 = 2048;
const BIN_BITS: u32 = 11;
const MAX_ITERS: usize = 15;

/// Which way the kernel finished a row (for path coverage in tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gvr1Path {
    Short,
    /// The search landed: c(T) in [k, cap] after `passes` counting passes.
    Found {
        passes: usize,
    },
    /// Adjacent bracket keys with both counts measured: one tie-aware pass.
    Plateau,
    /// No usable bracket or search exhausted: exact narrowing over the row.
    Fallback {
        row_levels: usize,
    },
}

#[derive(Debug, Clone, Copy)]
struct State {
    rlo: u32,
    rhi: u32,
    need: u32,
    m: u32,
}

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

fn level_shift(st: &State) -> u32 {
    let bitlen = 32 - ((st.rhi - st.rlo) | 1).leading_zeros();
    bitlen.saturating_sub(BIN_BITS)
}

fn bin(key: u32, rlo: u32, sh: u32) -> usize {
    ((key - rlo) >> sh).min(BINS - 1) as usize
}

fn narrow(st: &mut State, sh: u32, (b, above, count): (u32, u32, u32)) {
    st.need -= above;
    st.m = count;
    let new_lo = st.rlo + (b << sh);
    let top = new_lo as u64 + ((1u64 << sh) - 1);
    st.rhi = top.min(st.rhi as u64) as u32;
    st.rlo = new_lo;
}

/// Histogram one narrowing level over `keys` and apply it.
fn level(keys: impl Iterator<Item = u32>, st: &mut State) {
    let sh = level_shift(st);
    let mut hist = vec![0u32; BINS as usize];
    let mut total = 0;
    for key in keys {
        if key >= st.rlo && key <= st.rhi {
            hist[bin(key, st.rlo, sh)] += 1;
            total += 1;
        }
    }
    assert_eq!(total, st.m, "state count disagrees with the data");
    narrow(st, sh, crossing(&hist, st.need));
}

/// `g1_select`: exact selection from a state; returns the row levels run.
fn select(row: &[f32], k: u32, mut st: State, cap: usize, out: &mut [i32]) -> usize {
    let mut row_levels = 0;
    while row_levels < 8 && st.m as usize > cap && st.m != st.need && st.rlo < st.rhi {
        level(row.iter().map(|&x| fkey(x)), &mut st);
        row_levels += 1;
    }
    let take_all = st.m == st.need;
    let single = !take_all && st.rlo >= st.rhi;
    let compact = !take_all && !single && st.m as usize <= cap;
    assert!(
        take_all || single || compact,
        "unreachable: no emission mode"
    );
    let (mut win, mut ties) = (0u32, 0u32);
    let mut cand: Vec<(u32, i32)> = Vec::new();
    for (i, &x) in row.iter().enumerate() {
        let key = fkey(x);
        let in_range = key >= st.rlo && key <= st.rhi;
        if key > st.rhi || (take_all && in_range) {
            assert!(win < k);
            out[win as usize] = i as i32;
            win += 1;
        } else if in_range && single {
            if ties < st.need {
                out[(k - st.need + ties) as usize] = i as i32;
            }
            ties += 1;
        } else if in_range && compact {
            assert!(cand.len() < cap, "candidate buffer overflow");
            cand.push((key, i as i32));
        }
    }
    if !compact {
        assert_eq!(win + ties.min(st.need), k);
        return row_levels;
    }
    assert_eq!(cand.len() as u32, st.m);
    assert_eq!(win, k - st.need);
    st.rlo = cand.iter().map(|c| c.0).min().unwrap_or(u32::MAX);
    st.rhi = cand.iter().map(|c| c.0).max().unwrap_or(0);
    let mut levels = 0;
    while levels < 8 && st.m != st.need && st.rlo < st.rhi {
        level(cand.iter().map(|c| c.0), &mut st);
        levels += 1;
    }
    assert!(levels <= 4, "narrowing took {levels} levels");
    let rest_all = st.m == st.need;
    for &(key, idx) in &cand {
        if key > st.rhi || (rest_all && key >= st.rlo) {
            assert!(win < k);
            out[win as usize] = idx;
            win += 1;
        } else if !rest_all && key == st.rlo {
            if ties < st.need {
                out[(k - st.need + ties) as usize] = idx;
            }
            ties += 1;
        }
    }
    row_levels
}

fn count_ge(row: &[f32], t: u32) -> u32 {
    row.iter().filter(|&&x| fkey(x) >= t).count() as u32
}

/// Element range of CTA `rank`'s slice in a cluster of `cluster_size`, as
/// the kernel cuts it: ⌈nvec / CS⌉ float4s per CTA, clamped to the row.
pub fn cluster_slice(n: usize, cluster_size: usize, rank: usize) -> std::ops::Range<usize> {
    let nvec = n.div_ceil(4);
    let chunk = nvec.div_ceil(cluster_size);
    let v_begin = (rank * chunk).min(nvec);
    let v_end = (v_begin + chunk).min(nvec);
    // Elements >= n of the last float4 are masked by index in the kernel.
    (v_begin * 4).min(n)..(v_end * 4).min(n)
}

/// The cluster's count: every CTA counts its slice, the all-reduce sums.
fn count_ge_clustered(row: &[f32], t: u32, cluster_size: usize) -> u32 {
    (0..cluster_size)
        .map(|rank| count_ge(&row[cluster_slice(row.len(), cluster_size, rank)], t))
        .sum()
}

/// The found-T collect of the cluster tier: each slice's keys >= t into its
/// own buffer of `cap`, then appended (rank order) into rank 0's buffer of
/// `cap`; returns the buffer keys. Panics (test-only) if a key is dropped.
fn cluster_collect(row: &[f32], t: u32, cluster_size: usize, cap: usize) -> Vec<(u32, i32)> {
    let mut gathered = Vec::new();
    for rank in 0..cluster_size {
        let slice = cluster_slice(row.len(), cluster_size, rank);
        let local: Vec<(u32, i32)> = slice
            .filter(|&i| fkey(row[i]) >= t)
            .map(|i| (fkey(row[i]), i as i32))
            .collect();
        assert!(local.len() <= cap, "slice buffer overflow");
        assert!(
            gathered.len() + local.len() <= cap,
            "rank 0 buffer overflow"
        );
        gathered.extend(local);
    }
    gathered
}

/// Model of `gvr1_topk` for one row: `hints` has k entries, `cap` is
/// `G1_CAP` (6144 in the kernel).
pub fn gvr1(
    row: &[f32],
    k: usize,
    hints: &[i32],
    hint_offset: i32,
    cap: usize,
) -> (Vec<i32>, Gvr1Path) {
    gvr1_clustered(row, k, hints, hint_offset, cap, 1)
}

/// Model of `gvr1_topk_c{CS}` (CS = `cluster_size`; 1 is `gvr1_topk`).
pub fn gvr1_clustered(
    row: &[f32],
    k: usize,
    hints: &[i32],
    hint_offset: i32,
    cap: usize,
    cluster_size: usize,
) -> (Vec<i32>, Gvr1Path) {
    assert!(cluster_size >= 1);
    let n = row.len();
    if n <= k {
        let out = (0..k).map(|s| if s < n { s as i32 } else { -1 }).collect();
        return (out, Gvr1Path::Short);
    }
    assert_eq!(hints.len(), k);
    let k32 = k as u32;
    let (mut lo, mut hi, mut hinted, mut sum) = (u32::MAX, 0u32, 0u32, 0.0f32);
    for &h in hints {
        let p = (h as u32).wrapping_add(hint_offset as u32);
        if (p as usize) < n {
            let x = row[p as usize];
            lo = lo.min(fkey(x));
            hi = hi.max(fkey(x));
            sum += x;
            hinted += 1;
        }
    }
    let cap32 = cap as u32;
    let aim = k32 as f32 + (cap32 - k32) as f32 * 0.25;
    let (mut lo_measured, mut hi_measured) = (false, false);
    let (mut cnt_lo, mut cnt_hi) = (k32 + k32 / 4, 1u32);
    let mut found = None;
    let mut passes = 0;
    if hinted > 0 && lo < hi {
        let mean = sum / hinted as f32;
        let mut t = fkey(mean);
        if mean.is_nan() || t < lo || t > hi {
            t = lo + (hi - lo) / 2;
        }
        for iter in 0..MAX_ITERS {
            let c = count_ge_clustered(row, t, cluster_size);
            assert_eq!(c, count_ge(row, t), "slices miss or double-count");
            passes += 1;
            if c >= k32 && c <= cap32 {
                found = Some((t, c));
                break;
            }
            if c > cap32 {
                (lo, cnt_lo, lo_measured) = (t, c, true);
            } else {
                (hi, cnt_hi, hi_measured) = (t, c, true);
            }
            let lo_lim = if lo_measured { lo + 1 } else { lo };
            let hi_lim = if hi_measured { hi - 1 } else { hi };
            if lo_lim > hi_lim {
                break;
            }
            let next = if !lo_measured && c < k32 {
                lo
            } else {
                let (vlo, vhi) = (invkey(lo), invkey(hi));
                let range = vhi - vlo;
                if vlo.is_finite()
                    && vhi.is_finite()
                    && range.is_finite()
                    && range > 1e-30
                    && cnt_lo > cnt_hi
                {
                    let f = (cnt_lo as f32 - aim) / (cnt_lo - cnt_hi) as f32;
                    let f = f.max(0.05).min(if iter == 0 { 0.5 } else { 0.95 });
                    fkey(vlo + f * range)
                } else {
                    lo + (hi - lo) / 2
                }
            };
            t = next.max(lo_lim).min(hi_lim);
        }
    }
    let mut out = vec![i32::MIN; k];
    let (st, plateau) = match found {
        Some((t, c)) => (
            State {
                rlo: t,
                rhi: u32::MAX,
                need: k32,
                m: c,
            },
            false,
        ),
        None => {
            let above = if hi_measured { cnt_hi } else { 0 };
            let st = State {
                rlo: if lo_measured { lo } else { 0 },
                rhi: if hi_measured { hi - 1 } else { u32::MAX },
                need: k32 - above,
                m: (if lo_measured { cnt_lo } else { n as u32 }) - above,
            };
            (st, lo_measured && hi_measured && st.rlo == st.rhi)
        }
    };
    // The state's meaning, checked against the data before selecting.
    assert_eq!(
        row.iter().filter(|&&x| fkey(x) > st.rhi).count() as u32,
        k32 - st.need
    );
    assert!(st.need >= 1 && st.need <= st.m);
    if let (Some((t, c)), true) = (found, cluster_size > 1) {
        // Rank 0's gathered buffer holds exactly the whole-row collect.
        let gathered = cluster_collect(row, t, cluster_size, cap);
        assert_eq!(gathered.len() as u32, c);
        let whole: Vec<(u32, i32)> = (0..n)
            .filter(|&i| fkey(row[i]) >= t)
            .map(|i| (fkey(row[i]), i as i32))
            .collect();
        assert_eq!(gathered, whole);
    }
    let row_levels = select(row, k32, st, cap, &mut out);
    let path = if found.is_some() {
        Gvr1Path::Found { passes }
    } else if plateau {
        Gvr1Path::Plateau
    } else {
        Gvr1Path::Fallback { row_levels }
    };
    (out, path)
}

/// Tie-aware check: k unique in-range indices (or identity/-1 for short
/// rows) whose value keys equal the k largest keys of the row.
pub fn assert_exact(row: &[f32], k: usize, out: &[i32]) {
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
pub fn row_strategy(max_n: usize) -> impl Strategy<Value = Vec<f32>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The true top-k positions of a row (hints as good as they get).
    fn true_topk(row: &[f32], k: usize) -> Vec<i32> {
        let mut idx: Vec<i32> = (0..row.len() as i32).collect();
        idx.sort_by_key(|&i| std::cmp::Reverse(fkey(row[i as usize])));
        idx.truncate(k);
        idx
    }

    fn hint_strategy() -> impl Strategy<Value = (u8, Vec<i32>)> {
        // (kind, raw material): 0 = true top-k, 1 = random in/out of range,
        // 2 = all one index, 3 = all -1, 4 = true top-k shifted.
        (0u8..5, prop::collection::vec(-3i32..900, 64))
    }

    fn make_hints(row: &[f32], k: usize, kind: u8, raw: &[i32]) -> Vec<i32> {
        let n = row.len() as i32;
        let mut top = true_topk(row, k);
        top.resize(k, -1);
        match kind {
            0 => top,
            1 => (0..k).map(|j| raw[j % raw.len()]).collect(),
            2 => vec![raw[0].clamp(0, (n - 1).max(0)); k],
            3 => vec![-1; k],
            _ => top.iter().map(|&i| i + raw[0] % 7).collect(),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn gvr1_model_is_exact(
            row in row_strategy(700),
            k in 1usize..48,
            cap_extra in 0usize..150,
            (kind, raw) in hint_strategy(),
            offset in -1i32..2,
        ) {
            let hints = make_hints(&row, k, kind, &raw);
            let (out, _) = gvr1(&row, k, &hints, offset, k + cap_extra);
            assert_exact(&row, k, &out);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(150))]

        /// Every cluster size takes the per-row kernel's decisions and gives
        /// its output (rows of any length, including slices that are empty
        /// or end mid-float4).
        #[test]
        fn clustered_model_matches_the_per_row_model(
            row in row_strategy(700),
            k in 1usize..48,
            cap_extra in 0usize..150,
            (kind, raw) in hint_strategy(),
        ) {
            let hints = make_hints(&row, k, kind, &raw);
            let (single, single_path) = gvr1(&row, k, &hints, 0, k + cap_extra);
            for cs in [2usize, 4, 8] {
                let (out, path) = gvr1_clustered(&row, k, &hints, 0, k + cap_extra, cs);
                prop_assert_eq!(&out, &single);
                prop_assert_eq!(path, single_path);
            }
        }
    }

    #[test]
    fn cluster_slices_partition_the_row() {
        for n in [
            0usize, 1, 3, 4, 5, 31, 32, 33, 1000, 65_536, 70_001, 262_143,
        ] {
            for cs in [1usize, 2, 4, 8] {
                let mut next = 0;
                for rank in 0..cs {
                    let slice = cluster_slice(n, cs, rank);
                    assert_eq!(slice.start, next, "n {n} cs {cs} rank {rank}");
                    assert!(slice.start.is_multiple_of(4) || slice.start == n);
                    next = slice.end;
                }
                assert_eq!(next, n, "n {n} cs {cs}");
            }
        }
        // A long row splits evenly (in float4s).
        assert_eq!(cluster_slice(65_536, 8, 3), 24_576..32_768);
        assert_eq!(cluster_slice(70_001, 8, 7), 61_264..70_001);
    }

    #[test]
    fn clustered_model_finds_with_previous_step_hints() {
        let row: Vec<f32> = (0..70_001u32)
            .map(|i| ((i.wrapping_mul(2_654_435_761) >> 8) as f32) / 16_777_216.0)
            .collect();
        let previous: Vec<f32> = row
            .iter()
            .enumerate()
            .map(|(i, &x)| x + (i % 13) as f32 * 1e-4)
            .collect();
        for k in [512, 2048] {
            let hints = true_topk(&previous, k);
            for cs in [2usize, 8] {
                let (out, path) = gvr1_clustered(&row, k, &hints, 0, 6144, cs);
                assert_exact(&row, k, &out);
                assert!(matches!(path, Gvr1Path::Found { .. }), "{path:?}");
            }
        }
    }

    #[test]
    fn good_hints_land_in_one_or_two_passes() {
        let row: Vec<f32> = (0..20_000u32)
            .map(|i| ((i.wrapping_mul(2_654_435_761) >> 8) as f32) / 16_777_216.0)
            .collect();
        for k in [512, 1024, 2048] {
            let hints = true_topk(&row, k);
            let (out, path) = gvr1(&row, k, &hints, 0, 6144);
            assert_exact(&row, k, &out);
            assert!(
                matches!(path, Gvr1Path::Found { passes } if passes <= 3),
                "{path:?}"
            );
        }
    }

    #[test]
    fn degenerate_hints_fall_back_exactly() {
        let row: Vec<f32> = (0..9000).map(|i| (i % 977) as f32 * 0.25 - 50.0).collect();
        let n = row.len() as i32;
        for k in [512usize, 2048] {
            for hints in [
                vec![0; k],
                vec![n - 1; k],
                vec![-1; k],
                vec![n + 5; k],
                vec![7; k],
            ] {
                let (out, path) = gvr1(&row, k, &hints, 0, 6144);
                assert_exact(&row, k, &out);
                assert!(matches!(path, Gvr1Path::Fallback { .. }), "{path:?}");
            }
        }
    }

    #[test]
    fn tie_plateau_resolves_in_one_tie_aware_pass() {
        // 8000 copies of 1.0 straddle the k-th value; 100 copies of the next
        // float above it. c(1.0) = 8100 > cap and c(next key) = 100 < k.
        let mut row = vec![1.0f32; 8000];
        row.extend([f32::from_bits(1.0f32.to_bits() + 1); 100]);
        row.extend((0..3000).map(|i| -1.0 - i as f32));
        // Hints on both plateau values: the bracket is two adjacent keys.
        let hints: Vec<i32> = (0..512)
            .map(|j| if j % 2 == 0 { j } else { 8000 + j % 100 })
            .collect();
        let (out, path) = gvr1(&row, 512, &hints, 0, 6144);
        assert_exact(&row, 512, &out);
        assert_eq!(path, Gvr1Path::Plateau);
        // Hints far below the plateau: the search cannot split it in 15
        // passes; the exact narrowing over the row resolves the ties.
        let hints: Vec<i32> = (0..512)
            .map(|j| if j % 2 == 0 { 8000 + j % 100 } else { 8100 + j })
            .collect();
        let (out, path) = gvr1(&row, 512, &hints, 0, 6144);
        assert_exact(&row, 512, &out);
        assert!(
            matches!(path, Gvr1Path::Fallback { row_levels } if row_levels <= 3),
            "{path:?}"
        );
    }

    #[test]
    fn infinities_and_neg_inf_tails_are_exact() {
        let mut row: Vec<f32> = (0..4000).map(|i| i as f32).collect();
        row.extend([f32::INFINITY; 3]);
        row.extend([f32::NEG_INFINITY; 3000]);
        let n = row.len();
        for k in [512usize, 1024, 2048] {
            // Hints spanning +inf .. -inf: infinite range → key bisection.
            let hints: Vec<i32> = (0..k as i32).map(|j| (j * 37) % n as i32).collect();
            let (out, _) = gvr1(&row, k, &hints, 0, 6144);
            assert_exact(&row, k, &out);
        }
        // Fewer than k finite values: the -inf tail supplies the rest.
        let mut row = vec![f32::NEG_INFINITY; 5000];
        row[10] = 1.0;
        let (out, _) = gvr1(&row, 512, &[10; 512], 0, 6144);
        assert_exact(&row, 512, &out);
    }
}
