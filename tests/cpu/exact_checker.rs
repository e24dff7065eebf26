//! The tie-aware checker: accepts every exact answer (any tie choice, any
//! order), rejects each kind of wrong answer with a specific reason.

use gvr_bench::exact::{
    check_batch, check_row, reference_topk, row_generators, suite, ExactStatus, UNWRITTEN,
};
use gvr_bench::grid::Batch;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn reference_for_batch(batch: &Batch) -> Vec<i32> {
    (0..batch.rows)
        .flat_map(|r| reference_topk(batch.row(r), batch.k))
        .collect()
}

fn one_row_batch(row: &[f32], k: usize) -> Batch {
    let npad = row.len().div_ceil(64).max(1) * 64;
    let mut logits = row.to_vec();
    logits.resize(npad, 3e38);
    Batch {
        rows: 1,
        npad,
        k,
        logits,
        n: vec![row.len() as u32],
        hints: vec![-1; k],
        varlen: None,
    }
}

#[test]
fn reference_is_exact_on_the_whole_suite() {
    for k in [512, 1024, 2048] {
        let cases = suite(k);
        assert!(cases.len() > 30, "suite({k}) too small");
        for case in &cases {
            let out = reference_for_batch(&case.batch);
            assert_eq!(
                check_batch(&case.batch, &out),
                ExactStatus::Exact,
                "k={k} case {}",
                case.name
            );
        }
    }
}

#[test]
fn suite_covers_required_shapes() {
    let cases = suite(1024);
    let has = |pred: &dyn Fn(&Batch) -> bool| cases.iter().any(|c| pred(&c.batch));
    assert!(
        has(&|b| b.varlen.is_none() && b.n.iter().all(|&n| n == 0)),
        "zero-length rows"
    );
    for n in [1023u32, 1024, 1025, 262_144, 1_048_576] {
        assert!(has(&|b| b.n.contains(&n)), "n = {n}");
    }
    assert!(has(&|b| b
        .varlen
        .as_ref()
        .is_some_and(|v| v.next_n == 4 && v.compress_ratio == 4)
        && b.n.contains(&0)));
    assert!(
        has(&|b| b.logits.iter().any(|v| v.is_infinite() && *v > 0.0)),
        "+inf"
    );
    assert!(
        has(&|b| b.logits.iter().any(|v| v.is_subnormal())),
        "denormals"
    );
    assert!(
        has(&|b| b.logits.iter().any(|v| v.to_bits() == (-0.0f32).to_bits())),
        "-0"
    );
    for name in [
        "hints_all_zero",
        "hints_out_of_range",
        "ulp1_cluster",
        "ulp2_cluster",
        "random_pro",
    ] {
        assert!(cases.iter().any(|c| c.name.starts_with(name)), "{name}");
    }
    // Non-varlen batches are batch-uniform in n.
    for c in cases.iter().filter(|c| c.batch.varlen.is_none()) {
        assert!(c.batch.n.windows(2).all(|w| w[0] == w[1]), "{}", c.name);
    }
}

#[test]
fn reference_is_exact_on_random_generator_rows() {
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    for g in row_generators() {
        for _ in 0..5 {
            let n = rng.random_range(0..3000);
            let k = [1, 7, 64, 512][rng.random_range(0..4)];
            let row = (g.generate)(&mut rng, n);
            assert_eq!(
                check_row(&row, k, &reference_topk(&row, k)),
                Ok(()),
                "{} n={n} k={k}",
                g.name
            );
        }
    }
}

fn sample_row() -> Vec<f32> {
    // Distinct values 0..1000 scrambled, so the top-4 is {996..999}.
    (0..1000u32).map(|i| ((i * 7919) % 1000) as f32).collect()
}

#[test]
fn rejects_out_of_range_index() {
    let row = sample_row();
    let mut out = reference_topk(&row, 4);
    out[2] = 1000;
    let err = check_row(&row, 4, &out).unwrap_err();
    assert_eq!(err, "slot 2: index 1000 out of range [0, 1000)");
    out[2] = -1;
    assert!(check_row(&row, 4, &out)
        .unwrap_err()
        .contains("index -1 out of range"));
}

#[test]
fn rejects_duplicate_index() {
    let row = sample_row();
    let mut out = reference_topk(&row, 4);
    out[3] = out[0];
    let err = check_row(&row, 4, &out).unwrap_err();
    assert_eq!(err, format!("duplicate index {} at slots 0 and 3", out[0]));
}

#[test]
fn rejects_one_index_swapped_for_a_smaller_value() {
    let row = sample_row();
    let mut out = reference_topk(&row, 4);
    let fifth = reference_topk(&row, 5)[4];
    out[1] = fifth;
    let err = check_row(&row, 4, &out).unwrap_err();
    assert!(
        err.starts_with("value multiset differs: 1 selected values below the k-th largest"),
        "{err}"
    );
    assert!(err.contains(&format!("index {fifth}")), "{err}");
}

#[test]
fn accepts_signed_zero_swap_and_tie_swap() {
    // -0 and +0 are the same value after normalisation.
    let row = [3.0, -0.0, 0.0, -5.0];
    assert_eq!(check_row(&row, 2, &[0, 1]), Ok(()));
    assert_eq!(check_row(&row, 2, &[2, 0]), Ok(()));
    // Equal values at the boundary are interchangeable; order is free.
    let row = [1.0, 9.0, 4.0, 4.0, 4.0, 2.0];
    let reference = reference_topk(&row, 3);
    assert_eq!(reference, vec![1, 2, 3]);
    assert_eq!(check_row(&row, 3, &[4, 1, 2]), Ok(()));
    assert_eq!(check_row(&row, 3, &[3, 4, 1]), Ok(()));
    // ...but a tie never excuses dropping a larger value.
    assert!(check_row(&row, 3, &[2, 3, 4])
        .unwrap_err()
        .contains("first missing: index 1"));
}

#[test]
fn rejects_bitwise_different_values() {
    // 1 ULP apart is a different value.
    let a = 1.0f32;
    let row = [a.next_up(), a, 0.0];
    assert!(check_row(&row, 1, &[1]).is_err());
    assert_eq!(check_row(&row, 1, &[0]), Ok(()));
}

#[test]
fn short_rows_need_identity_then_minus_one() {
    let row = [5.0, 1.0, 3.0];
    assert_eq!(check_row(&row, 5, &[2, 0, 1, -1, -1]), Ok(()));
    let err = check_row(&row, 5, &[0, 1, 1, -1, -1]).unwrap_err();
    assert!(err.contains("duplicate index 1"), "{err}");
    let err = check_row(&row, 5, &[0, 1, 3, -1, -1]).unwrap_err();
    assert!(err.contains("slot 2: index 3 out of range [0, 3)"), "{err}");
    let err = check_row(&row, 5, &[0, 1, 2, -1, 0]).unwrap_err();
    assert!(err.contains("slot 4: expected -1"), "{err}");
    let err = check_row(&row, 5, &[0, 1, 2, -1, 7]).unwrap_err();
    assert!(err.contains("slot 4: expected -1"), "{err}");
    // n == k is a permutation with no -1; n == 0 is all -1.
    assert_eq!(check_row(&row, 3, &[1, 2, 0]), Ok(()));
    assert_eq!(check_row(&[], 2, &[-1, -1]), Ok(()));
    assert!(check_row(&[], 2, &[0, -1]).is_err());
}

#[test]
fn batch_reports_unwritten_slot_and_first_bad_row() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let narrow = row_generators()
        .into_iter()
        .find(|g| g.name == "narrow_range")
        .expect("generator");
    let rows: Vec<Vec<f32>> = (0..4).map(|_| (narrow.generate)(&mut rng, 2000)).collect();
    let batch = Batch {
        rows: 4,
        npad: 2048,
        k: 512,
        logits: rows
            .iter()
            .flat_map(|r| r.iter().copied().chain(std::iter::repeat_n(3e38, 48)))
            .collect(),
        n: vec![2000; 4],
        hints: vec![-1; 4 * 512],
        varlen: None,
    };
    let mut out = reference_for_batch(&batch);
    assert!(batch.rows >= 3);
    // Corrupt rows 2 and 1: row 1 is reported.
    out[2 * 512] = out[2 * 512 + 1];
    out[512 + 5] = out[512 + 6];
    match check_batch(&batch, &out) {
        ExactStatus::Wrong { row, reason } => {
            assert_eq!(row, 1);
            assert!(reason.contains("duplicate"), "{reason}");
        }
        other => panic!("expected Wrong, got {other:?}"),
    }
    out[2 * 512 + 100] = UNWRITTEN;
    assert_eq!(
        check_batch(&batch, &out),
        ExactStatus::Unwritten { row: 2, slot: 100 }
    );
    assert!(matches!(
        check_batch(&batch, &out[1..]),
        ExactStatus::Failed { .. }
    ));
}

#[test]
fn value_check_never_reads_the_pad() {
    // The pad holds +3e38; a checker that looked past n would demand it.
    let row: Vec<f32> = (0..70).map(|i| i as f32).collect();
    let batch = one_row_batch(&row, 8);
    let out = reference_topk(&row, 8);
    assert_eq!(check_batch(&batch, &out), ExactStatus::Exact);
}

#[test]
fn nan_is_ordered_above_positive_infinity() {
    let row = [1.0, f32::NAN, f32::INFINITY, 2.0];
    assert_eq!(reference_topk(&row, 2), vec![1, 2]);
    assert_eq!(check_row(&row, 2, &[2, 1]), Ok(()));
    assert!(check_row(&row, 2, &[2, 3]).is_err());
}
