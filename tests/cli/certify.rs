//! `gvr-bench certify` exit codes: 0 when every arm is exact, 1 when one is not.

use crate::support::cli::*;

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
    // Stderr is a pipe here: plain progress lines per phase, no bar, no
    // colour codes.
    assert!(
        out.stderr.contains("certify: selected cases: 4/4 cases")
            && out.stderr.contains("certify: adversarial suite: "),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains('\x1b'), "{:?}", out.stderr);
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
            "--test-arms",
        ],
        &[],
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

/// The `| arm | exact | ...` row of `arm` as its three counts.
fn counts_of(stdout: &str, arm: &str) -> (usize, usize, usize) {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&format!("| {arm} |")))
        .unwrap_or_else(|| panic!("no row for {arm}: {stdout}"));
    let cells: Vec<usize> = line
        .split('|')
        .skip(2)
        .take(3)
        .map(|c| c.trim().parse().unwrap())
        .collect();
    (cells[0], cells[1], cells[2])
}

#[test]
fn soak_batches_are_certified_and_a_failure_names_its_seed() {
    let root = tempfile::tempdir().unwrap();
    let captures = capture_set(root.path());
    let base = [
        "certify",
        "--cpu",
        "--captures",
        path_str(&captures),
        "--batches",
        "1",
        "--no-adversarial",
        "--poison-pad",
    ];
    let plain = run(&base);
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    let (cases, _, _) = counts_of(&plain.stdout, "cpu-ss");

    let mut soaked_args = base.to_vec();
    soaked_args.extend(["--soak", "12", "--soak-seed", "900"]);
    let soaked = run(&soaked_args);
    assert_eq!(
        soaked.code, 0,
        "stdout: {}\nstderr: {}",
        soaked.stdout, soaked.stderr
    );
    let (exact, inexact, unsupported) = counts_of(&soaked.stdout, "cpu-ss");
    // 12 batches for each K of the selected cells (at least one K).
    assert_eq!(inexact + unsupported, 0, "{}", soaked.stdout);
    assert!(
        exact > cases && (exact - cases) % 12 == 0,
        "{cases} cases, {exact} exact"
    );

    // A wrong arm: the soak's first failure names the seed that replays it.
    let mut broken_args = soaked_args.clone();
    broken_args.extend(["--arms", "cpu-ref,cpu-broken", "--test-arms"]);
    let broken = run_with_env(&broken_args, &[]);
    assert_eq!(broken.code, 1, "{}", broken.stdout);
    let line = broken
        .stdout
        .lines()
        .find(|l| l.starts_with("cpu-broken: first soak failure"))
        .unwrap_or_else(|| panic!("{}", broken.stdout));
    assert!(
        line.contains("soak seed 900 ") && line.contains("--soak 1 --soak-seed 900"),
        "{line}"
    );
    assert!(
        !broken.stdout.contains("cpu-ref: first"),
        "{}",
        broken.stdout
    );
}
