//! CPU model of the register-resident family `reg` (`kernels/ss/reg.cu`;
//! docs/algorithm.md, "reg: the row in registers"), row by row: the same bracket choice, guard, BRL bin
//! expression (bit for bit: f32 with explicit fused multiply-adds), crossing,
//! escape conditions and refinement choice as the kernel, so its path
//! counts say which path each row takes on the GPU (the emulator test
//! `tests/emu/ss_reg.rs` compares them with the kernel's trace).
//!
//! Selection inside a path is plain exact selection (sorting by key): the
//! kernel's slot order and tie picks are not modelled, only which path runs
//! and that its result is exact.

use super::keys::fkey;
use crate::gpu::UNWRITTEN;
use crate::topk::route::dispatch::REG_DROP_MAX;

/// The launch knobs the reg kernel receives (per launch, not per row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegModel {
    /// Histogram bins (NBH).
    pub nbh: u32,
    /// Register capacity in values (4·BLK·VPT float4 lanes + BLK tail scalars).
    pub capacity: usize,
    /// Crossing-candidate capacity (CMP).
    pub cmp: usize,
    /// O(m²) rank gate (QC).
    pub qc: usize,
    /// Bracket from the hints (else hint-free: the first k values).
    pub use_hints: bool,
    /// The launch's build has the drop-few path (rows of `n ≤ k + REG_DROP_MAX`).
    pub drops_few: bool,
}

/// How often each path of the reg kernel ran (the kernel's `SS_RTR_*` bits).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegCounts {
    pub rows: u64,
    /// `n ≤ k`: identity then −1.
    pub short_row: u64,
    /// Whole-row bracket (`n ≤ 4k + 64`).
    pub deg: u64,
    /// Hint bracket accepted.
    pub hint_bracket: u64,
    /// First-k bracket (hint-free, or the hint bracket was degenerate).
    pub first_k: u64,
    /// Escape: the bracket failed the guard (empty, equal ends, infinite width).
    pub escape_guard: u64,
    /// Escape: the crossing of k lay in the trash bin (bracket too high).
    pub escape_trash: u64,
    /// Escape: the crossing bin held more than CMP candidates.
    pub escape_cmp: u64,
    /// The crossing bin was needed whole.
    pub whole_bin: u64,
    /// Crossing bin refined by O(m²) rank.
    pub rank_refine: u64,
    /// Crossing bin refined by key-space narrowing.
    pub narrow_refine: u64,
    /// Row longer than the register capacity (global-memory narrowing).
    pub oversize: u64,
    /// `k < n ≤ k + REG_DROP_MAX`: the `n − k` smallest dropped.
    pub drop_few: u64,
}

impl RegCounts {
    pub fn merged(self, o: RegCounts) -> RegCounts {
        RegCounts {
            rows: self.rows + o.rows,
            short_row: self.short_row + o.short_row,
            deg: self.deg + o.deg,
            hint_bracket: self.hint_bracket + o.hint_bracket,
            first_k: self.first_k + o.first_k,
            escape_guard: self.escape_guard + o.escape_guard,
            escape_trash: self.escape_trash + o.escape_trash,
            escape_cmp: self.escape_cmp + o.escape_cmp,
            whole_bin: self.whole_bin + o.whole_bin,
            rank_refine: self.rank_refine + o.rank_refine,
            narrow_refine: self.narrow_refine + o.narrow_refine,
            oversize: self.oversize + o.oversize,
            drop_few: self.drop_few + o.drop_few,
        }
    }

    /// The kernel's trace bits (`SS_RTR_*` in kernels/ss/reg.cu) for these counts.
    pub fn trace_bits(&self) -> u32 {
        [
            (self.short_row, 1),
            (self.deg, 2),
            (self.hint_bracket, 4),
            (self.first_k, 8),
            (self.escape_guard, 16),
            (self.escape_trash, 32),
            (self.escape_cmp, 64),
            (self.whole_bin, 128),
            (self.rank_refine, 256),
            (self.narrow_refine, 512),
            (self.oversize, 1024),
            (self.drop_few, 2048),
        ]
        .iter()
        .filter(|(count, _)| *count > 0)
        .map(|(_, bit)| bit)
        .sum()
    }
}

fn finite(x: f32) -> bool {
    x.to_bits() & 0x7f80_0000 != 0x7f80_0000
}

/// Min/max key of the finite values among `values` (None when empty).
fn key_bracket(values: impl Iterator<Item = f32>) -> Option<(u32, u32)> {
    values
        .filter(|&x| finite(x))
        .map(fkey)
        .fold(None, |acc, key| match acc {
            None => Some((key, key)),
            Some((lo, hi)) => Some((lo.min(key), hi.max(key))),
        })
}

/// The BRL transform of the kernel: (SC, CQ), or None when the guard rejects
/// the bracket (with the #18625 finiteness test).
fn transform(lo: f32, hi: f32, nbh: u32) -> Option<(f32, f32)> {
    let width = hi - lo;
    if !(finite(width) && width > 1e-30) {
        return None;
    }
    let sc = (nbh - 2) as f32 / width;
    let base = 1.0 - lo * sc;
    let cq = 1e-6f32.mul_add(base.abs() + 1.0, base);
    (finite(sc) && sc > 0.0 && finite(cq)).then_some((sc, cq))
}

/// `sat_u32(fmin(fma(x, SC, CQ), NBH − 1))`: `f32::min` returns the other
/// operand for NaN like `fminf`, so a NaN `x` lands in the top bin; `as u32`
/// saturates like `cvt.rzi.sat.u32`.
fn bin(x: f32, sc: f32, cq: f32, nbh: u32) -> u32 {
    x.mul_add(sc, cq).min((nbh - 1) as f32) as u32
}

/// Indices of the `need` largest keys among `items` (any tie order).
fn largest(mut items: Vec<(u32, i32)>, need: usize) -> impl Iterator<Item = i32> {
    items.sort_unstable_by_key(|&(key, _)| std::cmp::Reverse(key));
    items.into_iter().take(need).map(|(_, i)| i)
}

/// One row through the reg kernel's decisions: the k selected indices
/// (identity then −1 for short rows).
pub fn select_row_reg(
    row: &[f32],
    hints: &[i32],
    k: usize,
    model: &RegModel,
    counts: &mut RegCounts,
) -> Vec<i32> {
    counts.rows += 1;
    let n = row.len();
    if n <= k {
        counts.short_row += 1;
        return (0..k).map(|i| if i < n { i as i32 } else { -1 }).collect();
    }
    let keyed = || row.iter().enumerate().map(|(i, &x)| (fkey(x), i as i32));
    let escape = || largest(keyed().collect(), k).collect::<Vec<i32>>();
    if n > model.capacity {
        counts.oversize += 1;
        return escape();
    }
    if model.drops_few && n - k <= REG_DROP_MAX {
        counts.drop_few += 1;
        return escape();
    }
    let deg = n <= 4 * k + 64;
    let mut bracket = None;
    if !deg && model.use_hints {
        let hinted = hints
            .iter()
            .filter_map(|&h| usize::try_from(h).ok().filter(|&h| h < n).map(|h| row[h]));
        bracket = key_bracket(hinted).filter(|(lo, hi)| lo < hi);
        if bracket.is_some() {
            counts.hint_bracket += 1;
        }
    }
    if bracket.is_none() {
        let lim = if deg { n } else { k };
        bracket = key_bracket(row[..lim].iter().copied()).filter(|(lo, hi)| lo < hi);
        if deg {
            counts.deg += 1;
        } else {
            counts.first_k += 1;
        }
    }
    let to_f32 = super::keys::invkey;
    let Some((sc, cq)) = bracket.and_then(|(lo, hi)| transform(to_f32(lo), to_f32(hi), model.nbh))
    else {
        counts.escape_guard += 1;
        return escape();
    };

    let nbh = model.nbh;
    let mut hist = vec![0usize; nbh as usize];
    for &x in row {
        hist[bin(x, sc, cq, nbh) as usize] += 1;
    }
    // Crossing of k from the top (total = n > k, so it is real).
    let mut above = 0usize;
    let mut cross = 0usize;
    for b in (0..nbh as usize).rev() {
        if above + hist[b] >= k {
            cross = b;
            break;
        }
        above += hist[b];
    }
    let m = hist[cross];
    let need = k - above;
    let whole = need >= m;
    if cross == 0 {
        counts.escape_trash += 1;
        return escape();
    }
    if !whole && m > model.cmp {
        counts.escape_cmp += 1;
        return escape();
    }
    let mut out: Vec<i32> = Vec::with_capacity(k);
    let mut candidates = Vec::new();
    for (i, &x) in row.iter().enumerate() {
        let b = bin(x, sc, cq, nbh) as usize;
        if b > cross {
            out.push(i as i32);
        } else if b == cross {
            candidates.push((fkey(x), i as i32));
        }
    }
    if whole {
        counts.whole_bin += 1;
        out.extend(candidates.iter().map(|&(_, i)| i));
    } else {
        if m <= model.qc {
            counts.rank_refine += 1;
        } else {
            counts.narrow_refine += 1;
        }
        out.extend(largest(candidates, need));
    }
    out.resize(k, UNWRITTEN);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact::check_row;

    fn model(cmp: usize, qc: usize, use_hints: bool) -> RegModel {
        RegModel {
            nbh: 1024,
            capacity: 4096 + 1024,
            cmp,
            qc,
            use_hints,
            drops_few: true,
        }
    }

    fn run(row: &[f32], hints: &[i32], k: usize, m: &RegModel) -> RegCounts {
        let mut c = RegCounts::default();
        let out = select_row_reg(row, hints, k, m, &mut c);
        check_row(row, k, &out).unwrap_or_else(|e| panic!("{e}; {c:?}"));
        c
    }

    fn spread(n: usize) -> Vec<f32> {
        (0..n).map(|i| ((i * 7919) % n) as f32).collect()
    }

    #[test]
    fn each_path_is_reached_and_exact() {
        let k = 64;
        let m = model(512, 96, true);
        // DEG row (n ≤ 4k + 64): whole-row bracket, distinct values.
        let c = run(&spread(300), &[], k, &m);
        assert_eq!((c.deg, c.escape_guard + c.escape_trash), (1, 0), "{c:?}");
        // Non-DEG with perfect hints: the hint bracket.
        let row = spread(2000);
        let top: Vec<i32> = crate::exact::reference_topk(&row, k);
        let c = run(&row, &top, k, &m);
        assert_eq!(c.hint_bracket, 1, "{c:?}");
        // Hints at the very top only: the crossing falls in the trash bin.
        let c = run(&row, &top[..2].repeat(k / 2), k, &m);
        assert_eq!(c.escape_trash, 1, "{c:?}");
        // No hints: first-k bracket; all equal: the guard rejects it.
        let c = run(&row, &vec![-1; k], k, &m);
        assert_eq!(c.first_k, 1, "{c:?}");
        let c = run(&vec![1.5; 2000], &vec![-1; k], k, &m);
        assert_eq!((c.first_k, c.escape_guard), (1, 1), "{c:?}");
        // +inf inside the first k: excluded from the bracket, still exact.
        let mut inf_row = row.clone();
        inf_row[3] = f32::INFINITY;
        run(&inf_row, &[], k, &model(512, 96, false));
        // A big tie class at the threshold; hints bracket the whole range so
        // bins are ~2 values wide: over CMP → escape; else narrow or rank.
        let mut ties = spread(2000);
        for x in ties.iter_mut().filter(|x| **x < 1980.0 && **x >= 1900.0) {
            *x = 1900.0;
        }
        let ends: Vec<i32> = [0.0, 1999.0]
            .iter()
            .map(|v| ties.iter().position(|x| x == v).unwrap() as i32)
            .collect();
        let c = run(&ties, &ends, k, &model(8, 4, true));
        assert_eq!((c.hint_bracket, c.escape_cmp), (1, 1), "{c:?}");
        let c = run(&ties, &ends, k, &model(512, 4, true));
        assert_eq!(c.narrow_refine, 1, "{c:?}");
        let c = run(&ties, &ends, k, &model(512, 96, true));
        assert_eq!(c.rank_refine, 1, "{c:?}");
        // A few values more than k: the n − k smallest are dropped (ties at
        // the drop line and NaN included); one more value is not.
        for n in [k + 1, k + REG_DROP_MAX] {
            let mut row = vec![2.0f32; n];
            row[n / 2] = f32::NAN;
            let c = run(&row, &[], k, &m);
            assert_eq!((c.drop_few, c.deg), (1, 0), "{c:?}");
        }
        assert_eq!(run(&spread(k + REG_DROP_MAX + 1), &[], k, &m).drop_few, 0);
        let without = RegModel {
            drops_few: false,
            ..m
        };
        assert_eq!(run(&spread(k + 1), &[], k, &without).drop_few, 0);
        // Short and oversize rows.
        assert_eq!(run(&spread(10), &[], k, &m).short_row, 1);
        assert_eq!(run(&spread(5121), &[], k, &m).oversize, 1);
        assert_eq!(run(&spread(5120), &[], k, &m).oversize, 0);
    }

    #[test]
    fn trace_bits_follow_the_kernel_flags() {
        let c = RegCounts {
            deg: 1,
            rank_refine: 2,
            ..RegCounts::default()
        };
        assert_eq!(c.trace_bits(), 2 | 256);
        assert_eq!(c.merged(c).rank_refine, 4);
    }
}
