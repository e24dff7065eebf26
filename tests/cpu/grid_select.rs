//! Case selection, sharding and sampling over the canonical grid.

use std::collections::{BTreeSet, HashSet};

use clap::Parser;
use gvr_bench::capture::Model;
use gvr_bench::grid::{dsa886_cells, select, Case, RowsMode, Selection, BATCH_SIZES};
use gvr_bench::GvrError;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    sel: Selection,
}

fn parse(args: &[&str]) -> Selection {
    Cli::try_parse_from(std::iter::once("test").chain(args.iter().copied()))
        .expect("parses")
        .sel
}

fn ids(cases: &[Case]) -> Vec<String> {
    cases.iter().map(Case::id).collect()
}

#[test]
fn default_selection_is_the_full_9746_case_grid_in_canonical_order() {
    let cases = select(&dsa886_cells(), &Selection::default()).unwrap();
    assert_eq!(cases.len(), 9746);
    let unique: HashSet<String> = ids(&cases).into_iter().collect();
    assert_eq!(unique.len(), 9746);
    let key = |c: &Case| (c.cell.model, c.cell.n, c.cell.layer, c.b);
    assert!(
        cases.windows(2).all(|w| key(&w[0]) < key(&w[1])),
        "sorted by model, N, layer, B"
    );
    assert_eq!(cases[0].id(), "v32_4k_L00@b1");
    assert_eq!(parse(&[]).rows, RowsMode::Replicate);
}

#[test]
fn filters_compose() {
    let sel = parse(&[
        "--segment",
        "flash,pro",
        "--n-min",
        "2000",
        "--n-max",
        "9000",
        "--batches",
        "1,64",
    ]);
    let cases = select(&dsa886_cells(), &sel).unwrap();
    // Flash: 3 rungs × 21 layers, Pro: 3 rungs × 30 layers, × 2 batch sizes.
    assert_eq!(cases.len(), (3 * 21 + 3 * 30) * 2);
    assert!(cases
        .iter()
        .all(|c| c.cell.model != Model::V32 && (2000..=9000).contains(&c.cell.n)));
    assert_eq!(
        cases.iter().map(|c| c.b).collect::<BTreeSet<_>>(),
        BTreeSet::from([1, 64])
    );

    let sel = parse(&[
        "--segment",
        "v32",
        "--segment",
        "pro",
        "--cells",
        "*_L02",
        "--batches",
        "8",
    ]);
    let cases = select(&dsa886_cells(), &sel).unwrap();
    assert_eq!(cases.len(), 7 + 9);

    let sel = parse(&[
        "--cells",
        "v4_flash_64k_L0?",
        "--limit",
        "5",
        "--rows",
        "independent",
    ]);
    assert_eq!(sel.rows, RowsMode::Independent);
    let cases = select(&dsa886_cells(), &sel).unwrap();
    assert_eq!(cases.len(), 5);
    assert!(cases
        .iter()
        .all(|c| c.cell.id.starts_with("v4_flash_64k_L0")));
}

#[test]
fn bad_options_are_usage_errors() {
    let cells = dsa886_cells();
    for args in [
        &["--segment", "v5"][..],
        &["--batches", "0"],
        &["--batches", "8193"],
        &["--batches", "1,x"],
        &["--shard", "4/4"],
        &["--shard", "1"],
        &["--n-min", "10", "--n-max", "5"],
        &["--cells", "[unclosed"],
        &["--sample", "0"],
        &["--limit", "0"],
    ] {
        let err = select(&cells, &parse(args)).unwrap_err();
        assert!(matches!(err, GvrError::Usage(_)), "{args:?}: {err}");
        assert_eq!(err.exit_code(), 2);
    }
    assert_eq!(
        select(&cells, &parse(&["--batches", "8192"]))
            .unwrap()
            .len(),
        886
    );
}

#[test]
fn shards_partition_the_selection() {
    let cells = dsa886_cells();
    for (base, count) in [
        (&[][..], 1usize),
        (&[][..], 3),
        (&["--segment", "pro", "--batches", "1,2"][..], 7),
        (&["--sample", "600"][..], 4),
    ] {
        let all = ids(&select(&cells, &parse(base)).unwrap());
        let mut seen: HashSet<String> = HashSet::new();
        let mut total = 0;
        for i in 0..count {
            let shard = format!("{i}/{count}");
            let mut args = base.to_vec();
            args.extend(["--shard", shard.as_str()]);
            let part = ids(&select(&cells, &parse(&args)).unwrap());
            assert!(part.len().abs_diff(all.len() / count) <= 1, "balanced");
            total += part.len();
            for id in part {
                assert!(seen.insert(id.clone()), "{id} in two shards");
            }
        }
        assert_eq!(total, all.len());
        assert_eq!(
            seen,
            all.into_iter().collect::<HashSet<_>>(),
            "union of shards = selection"
        );
    }
}

#[test]
fn sample_spreads_over_models_batches_and_widths() {
    let cells = dsa886_cells();
    let sample = select(&cells, &parse(&["--sample", "600"])).unwrap();
    assert_eq!(sample.len(), 600);
    assert_eq!(
        sample,
        select(&cells, &parse(&["--sample", "600"])).unwrap(),
        "deterministic"
    );
    for m in Model::ALL {
        for b in BATCH_SIZES {
            assert!(
                sample.iter().any(|c| c.cell.model == m && c.b == b),
                "{m} b{b}"
            );
        }
        let widths: BTreeSet<u32> = sample
            .iter()
            .filter(|c| c.cell.model == m)
            .map(|c| c.cell.n)
            .collect();
        let rungs = if m == Model::V32 { 7 } else { 9 };
        assert_eq!(widths.len(), rungs, "{m}: every rung sampled");
        let layers: BTreeSet<u32> = sample
            .iter()
            .filter(|c| c.cell.model == m)
            .map(|c| c.cell.layer)
            .collect();
        assert!(layers.len() >= 15, "{m}: only {} layers", layers.len());
    }
    // Proportional: V3.2 holds 427/886 of the grid.
    let v32 = sample.iter().filter(|c| c.cell.model == Model::V32).count();
    assert!((270..=310).contains(&v32), "{v32}");
    // Fewer than the strata: one per stratum, no panic.
    assert_eq!(select(&cells, &parse(&["--sample", "5"])).unwrap().len(), 5);
    // More than the selection: everything.
    assert_eq!(
        select(
            &cells,
            &parse(&["--sample", "100000", "--segment", "flash"])
        )
        .unwrap()
        .len(),
        189 * 11
    );
}
