//! One row of the non-split main family (docs/algorithm.md, "main: one streaming pass per row"), in the
//! order the kernel runs it, with f32 arithmetic as the GPU does it (fma
//! where upstream uses fma, the same bin expression at every site).
//!
//! The GPU's nondeterministic orders (staging slots from atomics, ballot
//! order) become row order here; exactness does not depend on them.

use serde::{Deserialize, Serialize};

use super::keys::{
    candidate_key, crossing, cursors, emit_narrowed, fkey, invkey, narrow, Crossing, BINS,
};
use crate::gpu::UNWRITTEN;
use crate::topk::route::params::{
    MainParams, FALLBACK_LEVELS, MIN_WINDOW_WIDTH, RANK_REFINE_MAX, REFINE_LEVELS, SENTINEL_HI,
    SENTINEL_LO, SPLIT_SLAB_CAP,
};

/// How often each path of the main family ran (one count per row unless
/// noted). Sums over rows with [`PathCounts::add`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathCounts {
    /// Rows seen.
    pub rows: u64,
    /// `n ≤ k`: identity then −1, no selection.
    pub short_row: u64,
    /// The sample gate was closed (row fits staging): T starts at the hint floor.
    pub unsampled: u64,
    /// Sampled, but the sample gave no usable rung (e.g. all-equal sample).
    pub degenerate_sample: u64,
    /// Accepted on the sample rung.
    pub sample_rung: u64,
    /// Accepted on the TSH floor (after the rung under-counted).
    pub tsh_floor: u64,
    /// Accepted on the hint floor GMIN (or the −3e38 sentinel).
    pub hint_floor: u64,
    /// The ladder never reached k survivors: whole-row narrowing (degen B).
    pub whole_row_fallback: u64,
    /// Extra streaming passes caused by retries (one per retry).
    pub retries: u64,
    /// Accepted, but staging overflowed: the emit re-swept the row.
    pub staging_resweep: u64,
    /// Accepted and complete, crossing bin above CMP: narrowing over the staged list.
    pub degen_a: u64,
    /// Accepted, crossing bin above CMP and staging incomplete: whole-row narrowing.
    pub degen_b_overflow: u64,
    /// The whole crossing bin was needed (no refinement).
    pub whole_bin: u64,
    /// Crossing bin refined by O(m²) rank (m ≤ 288).
    pub rank_refine: u64,
    /// Crossing bin refined by key-space narrowing.
    pub narrow_refine: u64,
    /// Attempts whose window width was infinite (+inf in the bracket or the
    /// sentinel width 6e38): every survivor collapses into bin 0.
    pub collapsed_window: u64,
    /// Narrowing stopped by its level cap (must stay 0: unreachable).
    pub narrow_level_cap: u64,
    /// Rows run as SPLIT (R > 1 parts, one attempt).
    pub split_rows: u64,
    /// SPLIT parts whose local staging overflowed (re-swept into the slab).
    pub split_part_resweep: u64,
    /// SPLIT rows with more survivors than the slab holds (→ whole-row fallback).
    pub split_slab_overflow: u64,
}

impl PathCounts {
    pub fn add(&mut self, other: &PathCounts) {
        let fields = [
            (&mut self.rows, other.rows),
            (&mut self.short_row, other.short_row),
            (&mut self.unsampled, other.unsampled),
            (&mut self.degenerate_sample, other.degenerate_sample),
            (&mut self.sample_rung, other.sample_rung),
            (&mut self.tsh_floor, other.tsh_floor),
            (&mut self.hint_floor, other.hint_floor),
            (&mut self.whole_row_fallback, other.whole_row_fallback),
            (&mut self.retries, other.retries),
            (&mut self.staging_resweep, other.staging_resweep),
            (&mut self.degen_a, other.degen_a),
            (&mut self.degen_b_overflow, other.degen_b_overflow),
            (&mut self.whole_bin, other.whole_bin),
            (&mut self.rank_refine, other.rank_refine),
            (&mut self.narrow_refine, other.narrow_refine),
            (&mut self.collapsed_window, other.collapsed_window),
            (&mut self.narrow_level_cap, other.narrow_level_cap),
            (&mut self.split_rows, other.split_rows),
            (&mut self.split_part_resweep, other.split_part_resweep),
            (&mut self.split_slab_overflow, other.split_slab_overflow),
        ];
        for (mine, theirs) in fields {
            *mine += theirs;
        }
    }

    pub fn merged(mut self, other: PathCounts) -> PathCounts {
        self.add(&other);
        self
    }
}

/// Where the admission threshold of an attempt came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rung {
    Sample,
    TshFloor,
    HintFloor,
}

/// The hint bracket, gathered lazily.
#[derive(Debug, Clone, Copy)]
struct HintBracket {
    gmin: f32,
    gmax: f32,
    gathered: bool,
}

impl HintBracket {
    fn not_gathered() -> HintBracket {
        HintBracket {
            gmin: SENTINEL_LO,
            gmax: SENTINEL_HI,
            gathered: false,
        }
    }

    /// Min/max of the hinted values in key space; indices outside `[0, n)`
    /// are ignored (unsigned compare). If not `GMIN < GMAX` (no valid hint,
    /// all hints equal, NaN) the sentinels stand. No hints = hint-free.
    fn gather(&mut self, row: &[f32], hints: &[i32]) {
        if self.gathered {
            return;
        }
        self.gathered = true;
        let (mut key_min, mut key_max) = (u32::MAX, 0u32);
        for &hint in hints {
            if let Some(&x) = row.get(hint as u32 as usize) {
                let key = fkey(x);
                key_min = key_min.min(key);
                key_max = key_max.max(key);
            }
        }
        let (gmin, gmax) = (invkey(key_min), invkey(key_max));
        if gmin < gmax {
            self.gmin = gmin;
            self.gmax = gmax;
        }
    }
}

/// Result of the sample ladder.
#[derive(Debug, Clone, Copy)]
struct Ladder {
    /// Primary rung (−inf if none).
    t: f32,
    /// Upper anchor of the window (−inf = no cap).
    h: f32,
    /// TSH floor (−inf if none).
    floor: f32,
    /// Whether the rung came from the sample.
    from_sample: bool,
}

/// Draw the sample, histogram it, derive T, H and the floor.
fn sample_ladder(
    row: &[f32],
    params: &MainParams,
    hints: &mut HintBracket,
    row_hints: &[i32],
) -> Ladder {
    let unit = params.unit_values.max(1);
    let stride = unit * params.ss2.max(1);
    let units = (0..params.smp)
        .map(|j| j * stride)
        .take_while(|&start| start + unit <= row.len());
    let sample = || {
        units
            .clone()
            .flat_map(|start| row[start..start + unit].iter().copied())
    };

    // Block min/max in key space, NaN ignored (as fmin/fmax do).
    let (mut key_min, mut key_max) = (u32::MAX, 0u32);
    let mut drawn = 0usize;
    for x in sample().filter(|x| !x.is_nan()) {
        key_min = key_min.min(fkey(x));
        key_max = key_max.max(fkey(x));
        drawn += 1;
    }
    let (smin, smax) = (invkey(key_min), invkey(key_max));
    let usable = params.smp > 0 && drawn > 0 && smax > smin;

    let mut ladder = Ladder {
        t: f32::NEG_INFINITY,
        h: f32::NEG_INFINITY,
        floor: f32::NEG_INFINITY,
        from_sample: false,
    };
    let mut third: Option<(Crossing, usize, f32)> = None;
    if usable {
        let w = (smax - smin) / BINS as f32;
        let sc = 1.0 / w;
        let mut hist = [0u32; BINS];
        for x in sample() {
            hist[bin_of(x, smin, sc)] += 1;
        }
        let total: usize = hist.iter().map(|&c| c as usize).sum();
        let primary = crossing(&hist, params.tgt);
        let anchor = crossing(&hist, params.tgt2);
        if let (Some(b1), true) = (primary, total >= params.tgt) {
            ladder.t = (b1.bin as f32).mul_add(w, smin);
            if let Some(b2) = anchor {
                let tk = (b2.bin as f32).mul_add(w, smin);
                let d = (tk - ladder.t).max(0.0);
                ladder.h = 4.0f32.mul_add(d, ladder.t).max(8.0f32.mul_add(w, ladder.t));
            }
        }
        if let Some(b3) = crossing(&hist, 2 * params.tgt) {
            third = Some((b3, total, w));
        }
        ladder.from_sample = is_usable_rung(ladder.t);
    }
    if !is_usable_rung(ladder.t) {
        // Degenerate sample (or none): start at the hint floor.
        hints.gather(row, row_hints);
        ladder.t = hints.gmin;
        ladder.h = f32::NEG_INFINITY;
    }
    if let Some((b3, total, w)) = third {
        if total >= 2 * params.tgt && ladder.t > hints.gmin {
            let t3 = (b3.bin as f32).mul_add(w, smin);
            if t3 < ladder.t {
                ladder.floor = t3;
            }
        }
    }
    ladder
}

/// A rung is usable iff it is `> −inf` (false for NaN, e.g. from an
/// infinite sample width: the kernel's `not T > −inf` test).
#[inline]
fn is_usable_rung(t: f32) -> bool {
    t > f32::NEG_INFINITY
}

/// The one bin expression of the streaming families:
/// `min(sat_u32((x − lo)·sc), 255)`, and 255 for a NaN `x` (NaN ranks above
/// +inf). Rust never contracts `a*b+c`, and the saturating `as u32` maps a
/// NaN product of non-NaN inputs and negatives to 0 like `cvt.rzi.sat.u32`.
#[inline]
fn bin_of(x: f32, lo: f32, sc: f32) -> usize {
    if x.is_nan() {
        return BINS - 1;
    }
    (((x - lo) * sc) as u32).min(BINS as u32 - 1) as usize
}

/// The admission window of one attempt.
#[derive(Debug, Clone, Copy)]
struct Window {
    tf: f32,
    sc: f32,
}

impl Window {
    fn new(t: f32, h: f32, gmax: f32, counts: &mut PathCounts) -> Window {
        let mut hi = gmax.max(t);
        if h > t && h < hi {
            hi = h;
        }
        let mut wd = (hi - t) / BINS as f32;
        if wd.is_nan() || wd <= 0.0 {
            wd = MIN_WINDOW_WIDTH;
        }
        let mut sc = 1.0 / wd;
        if !sc.is_finite() {
            // A denormal width would make SC = +inf and (x − TF)·SC = NaN at
            // x = TF; the floor width keeps every product finite.
            sc = 1.0 / MIN_WINDOW_WIDTH;
        }
        if sc == 0.0 {
            // Infinite width (+inf in the bracket, or 3e38 − (−3e38)): every
            // survivor lands in bin 0; still exact because bin 0 becomes the
            // crossing and is refined or sent to a fallback.
            counts.collapsed_window += 1;
        }
        Window { tf: t, sc }
    }

    /// `x >= tf`, with NaN admitted (the kernels' `!(x < tf)`).
    #[inline]
    fn admits(&self, x: f32) -> bool {
        x >= self.tf || x.is_nan()
    }

    #[inline]
    fn bin(&self, x: f32) -> usize {
        bin_of(x, self.tf, self.sc)
    }
}

/// What an accepted attempt hands to the emit.
struct Accepted {
    window: Window,
    hist: [u32; BINS],
    cross: Crossing,
    staged: Vec<(f32, u32)>,
    complete: bool,
}

/// One streaming pass — classify, histogram, stage (capacity SCAP,
/// overflow counted but not stored).
fn row_pass(row: &[f32], window: Window, scap: usize) -> ([u32; BINS], Vec<(f32, u32)>, usize) {
    let mut hist = [0u32; BINS];
    let mut staged = Vec::with_capacity(scap.min(row.len()));
    let mut survivors = 0usize;
    for (index, &x) in row.iter().enumerate() {
        if window.admits(x) {
            hist[window.bin(x)] += 1;
            if survivors < scap {
                staged.push((x, index as u32));
            }
            survivors += 1;
        }
    }
    (hist, staged, survivors)
}

/// Select the top-`k` indices of `row` the way the non-split main kernel does.
/// `hints` may be empty (hint-free) and may hold anything (out-of-range and
/// duplicate entries are ignored). `params` are the launch's parameters; if
/// they were planned for another row length or k, the row's own schedule is
/// recomputed as the varlen kernel does. Short rows (`n ≤ k`) give the
/// identity then −1. NaN ranks above +inf (all NaNs tied).
pub fn select_row(
    row: &[f32],
    hints: &[i32],
    k: usize,
    params: &MainParams,
    counts: &mut PathCounts,
) -> Vec<i32> {
    counts.rows += 1;
    let n = row.len();
    if n <= k {
        counts.short_row += 1;
        return (0..k).map(|i| if i < n { i as i32 } else { -1 }).collect();
    }
    let params = params.with_k(k).for_row_len(n);
    let mut out = vec![UNWRITTEN; k];

    let mut bracket = HintBracket::not_gathered();
    let ladder = sample_ladder(row, &params, &mut bracket, hints);
    if !params.sampled {
        counts.unsampled += 1;
    } else if !ladder.from_sample {
        counts.degenerate_sample += 1;
    }
    let (accepted, rung) = if params.split {
        counts.split_rows += 1;
        split_attempt(row, k, &params, &ladder, &bracket, counts)
    } else {
        non_split_attempts(row, hints, k, &params, &ladder, &mut bracket, counts)
    };

    let Some(acc) = accepted else {
        counts.whole_row_fallback += 1;
        whole_set_fallback(&mut out, row.iter().copied().zip(0u32..), k, counts);
        return out;
    };
    match rung {
        Rung::Sample => counts.sample_rung += 1,
        Rung::TshFloor => counts.tsh_floor += 1,
        Rung::HintFloor => counts.hint_floor += 1,
    }

    // Classification.
    if acc.cross.m > params.cmp {
        if acc.complete {
            counts.degen_a += 1;
            whole_set_fallback(&mut out, acc.staged.iter().copied(), k, counts);
        } else {
            counts.degen_b_overflow += 1;
            whole_set_fallback(&mut out, row.iter().copied().zip(0u32..), k, counts);
        }
        return out;
    }
    if !acc.complete {
        counts.staging_resweep += 1;
    }
    cursor_emit_and_refine(&mut out, row, &acc, k, params.cmp, counts);
    out
}

/// Up to three streaming passes, walking the retry ladder
/// sample rung → TSH floor → hint floor GMIN (or the sentinel).
fn non_split_attempts(
    row: &[f32],
    hints: &[i32],
    k: usize,
    params: &MainParams,
    ladder: &Ladder,
    bracket: &mut HintBracket,
    counts: &mut PathCounts,
) -> (Option<Accepted>, Rung) {
    let mut rung = if ladder.from_sample {
        Rung::Sample
    } else {
        Rung::HintFloor
    };
    let mut t = ladder.t;
    let attempts = params.attempts();
    for attempt in 0..attempts {
        if attempt > 0 {
            counts.retries += 1;
        }
        let window = Window::new(t, ladder.h, bracket.gmax, counts);
        let (hist, staged, survivors) = row_pass(row, window, params.scap);
        let total: usize = hist.iter().map(|&c| c as usize).sum();
        if total >= k {
            let accepted = crossing(&hist, k).map(|cross| Accepted {
                window,
                hist,
                cross,
                staged,
                complete: survivors <= params.scap,
            });
            return (accepted, rung);
        }
        if attempt + 1 == attempts {
            break;
        }
        if attempt == 0 && ladder.floor > f32::NEG_INFINITY && ladder.floor < window.tf {
            t = ladder.floor;
            rung = Rung::TshFloor;
            continue;
        }
        bracket.gather(row, hints);
        if t <= bracket.gmin {
            break;
        }
        t = bracket.gmin;
        rung = Rung::HintFloor;
    }
    (None, rung)
}

/// The SPLIT row — R parts draw the same sample, so they share T, H
/// and the TSH floor (with `tshg` they start at the floor). Each part
/// stages its own float4 range (part 0 also the scalar tail) and hands its
/// survivors to the row's global slab (capacity GCAP; a part whose local
/// staging overflowed re-sweeps its range straight into the slab — same
/// content). The last arriver histograms the slab: exactly one attempt.
/// Slab order is arrival order on the GPU; parts arrive in order here.
fn split_attempt(
    row: &[f32],
    k: usize,
    params: &MainParams,
    ladder: &Ladder,
    bracket: &HintBracket,
    counts: &mut PathCounts,
) -> (Option<Accepted>, Rung) {
    let mut rung = if ladder.from_sample {
        Rung::Sample
    } else {
        Rung::HintFloor
    };
    let mut t = ladder.t;
    if params.tshg && ladder.floor > f32::NEG_INFINITY && ladder.floor < t {
        t = ladder.floor;
        rung = Rung::TshFloor;
    }
    let window = Window::new(t, ladder.h, bracket.gmax, counts);
    let n = row.len();
    let n4 = n >> 2;
    let q = params.q.max(1);
    let mut slab: Vec<(f32, u32)> = Vec::new();
    let mut total = 0usize;
    for part in 0..params.r as usize {
        let first = (part * q).min(n4) * 4;
        let last = (part * q + q).min(n4) * 4;
        let tail = if part == 0 { 4 * n4..n } else { 0..0 };
        let mut part_survivors = 0usize;
        for index in (first..last).chain(tail) {
            let x = row[index];
            if window.admits(x) {
                if slab.len() < SPLIT_SLAB_CAP {
                    slab.push((x, index as u32));
                }
                part_survivors += 1;
            }
        }
        if part_survivors > params.scap {
            counts.split_part_resweep += 1;
        }
        total += part_survivors;
    }
    if total > SPLIT_SLAB_CAP {
        counts.split_slab_overflow += 1;
        return (None, rung);
    }
    let mut hist = [0u32; BINS];
    for &(x, _) in &slab {
        hist[window.bin(x)] += 1;
    }
    if total < k {
        return (None, rung);
    }
    let accepted = crossing(&hist, k).map(|cross| Accepted {
        window,
        hist,
        cross,
        staged: slab,
        complete: true,
    });
    (accepted, rung)
}

/// Cursor emit, then refinement of the crossing bin.
fn cursor_emit_and_refine(
    out: &mut [i32],
    row: &[f32],
    acc: &Accepted,
    k: usize,
    cmp: usize,
    counts: &mut PathCounts,
) {
    let Crossing {
        bin: crossing_bin,
        above,
        m,
    } = acc.cross;
    let need = acc.cross.need(k);
    let whole = need >= m;
    let limit = above + if whole { m } else { 0 };
    let mut cursor = cursors(&acc.hist);
    let mut candidates: Vec<u64> = if whole {
        Vec::new()
    } else {
        vec![0; m.min(cmp)]
    };

    let mut emit = |x: f32, index: u32| {
        let bin = acc.window.bin(x);
        if bin < crossing_bin {
            return;
        }
        let slot = cursor[bin];
        cursor[bin] += 1;
        if slot < limit {
            if let Some(o) = out.get_mut(slot) {
                *o = index as i32;
            }
        } else if !whole {
            if let Some(c) = candidates.get_mut(slot - above) {
                *c = candidate_key(x, index);
            }
        }
    };
    if acc.complete {
        for &(x, index) in &acc.staged {
            emit(x, index);
        }
    } else {
        // Staging overflowed: re-sweep the row with the same test and bin.
        for (index, &x) in row.iter().enumerate() {
            if acc.window.admits(x) {
                emit(x, index as u32);
            }
        }
    }

    if whole {
        counts.whole_bin += 1;
    } else if candidates.len() <= RANK_REFINE_MAX {
        counts.rank_refine += 1;
        rank_refine(out, above, need, &candidates);
    } else {
        counts.narrow_refine += 1;
        let key_of = |c: u64| (c >> 32) as u32;
        let lo = candidates.iter().map(|&c| key_of(c)).min().unwrap_or(0);
        let hi = candidates.iter().map(|&c| key_of(c)).max().unwrap_or(0);
        let result = narrow(
            || candidates.iter().map(|&c| key_of(c)),
            lo,
            hi,
            need,
            REFINE_LEVELS,
        );
        if result.hit_level_cap {
            counts.narrow_level_cap += 1;
        }
        let items = candidates.iter().map(|&c| (key_of(c), c as u32 as i32));
        emit_narrowed(out, above, items, &result);
    }
}

/// Each candidate's rank is the number of strictly greater 64-bit
/// keys; ranks are a permutation, so exactly `need` slots are filled.
fn rank_refine(out: &mut [i32], above: usize, need: usize, candidates: &[u64]) {
    for &mine in candidates {
        let rank = candidates.iter().filter(|&&other| other > mine).count();
        if rank < need {
            if let Some(slot) = out.get_mut(above + rank) {
                *slot = mine as u32 as i32;
            }
        }
    }
}

/// Degenerate fallbacks A / B: narrowing of `(value, index)` items over the full key
/// range for need = k (≤ 8 levels), then the winners/ties emit from slot 0.
fn whole_set_fallback<I>(out: &mut [i32], items: I, k: usize, counts: &mut PathCounts)
where
    I: Iterator<Item = (f32, u32)> + Clone,
{
    let keys = || items.clone().map(|(x, _)| fkey(x));
    let result = narrow(keys, 0, u32::MAX, k, FALLBACK_LEVELS);
    if result.hit_level_cap {
        counts.narrow_level_cap += 1;
    }
    emit_narrowed(
        out,
        0,
        items.map(|(x, index)| (fkey(x), index as i32)),
        &result,
    );
}
