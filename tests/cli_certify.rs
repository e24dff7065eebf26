//! `gvr-bench certify` exit codes: 0 when every arm is exact, 1 when one is not.

mod cli_support;

use cli_support::*;

#[test]
fn exact_cpu_arms_certify_with_exit_0() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let out = run(&[
        "certify",
        "--cpu",
        "--captures",
        path_str(&captures),
        "--batches",
        "1,4",
        "--poison-pad",
    ]);
    assert_eq!(
        out.code, 0,
        "stdout: {}\nstderr: {}",
        out.stdout, out.stderr
    );
    assert!(
        out.stdout.contains("| cpu-ref |") && out.stdout.contains("| cpu-ss |"),
        "{}",
        out.stdout
    );
    // The adversarial suite ran on top of the 4 cases.
    let cpu_ref_row = out
        .stdout
        .lines()
        .find(|l| l.starts_with("| cpu-ref |"))
        .unwrap();
    let exact: usize = cpu_ref_row
        .split('|')
        .nth(2)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(exact > 4, "{cpu_ref_row}");
}

#[test]
fn a_broken_arm_fails_certification_with_exit_1() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let out = run_with_env(
        &[
            "certify",
            "--cpu",
            "--captures",
            path_str(&captures),
            "--batches",
            "1",
            "--arms",
            "cpu-ref,cpu-broken",
            "--no-adversarial",
        ],
        &[("GVR_BENCH_TEST_ARMS", "1")],
    );
    assert_eq!(
        out.code, 1,
        "stdout: {}\nstderr: {}",
        out.stdout, out.stderr
    );
    assert!(
        out.stdout.contains("| cpu-broken | 0 | 2 | 0 |"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("cpu-broken: first failure"),
        "{}",
        out.stdout
    );
}

#[test]
fn test_arm_is_unknown_without_the_switch() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let out = run(&[
        "certify",
        "--cpu",
        "--captures",
        path_str(&captures),
        "--arms",
        "cpu-broken",
    ]);
    assert_eq!(out.code, 2, "stderr: {}", out.stderr);
}
