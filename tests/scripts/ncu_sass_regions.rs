//! scripts/ncu_sass_regions.py on a small synthetic Nsight Compute source page: the
//! `--barriers` split (one region per span that ends at a barrier or an exit) and the
//! cut form. Needs python3 (standard library only); without it the test prints SKIPPED.

const PAGE: &str = r#""Kernel Name","ss_reg_b1024_v1",
"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed"
"0x0","      LDG.E.128 R4, desc[UR4][R2.64]","2","32"
"0x10","      BAR.SYNC.DEFER_BLOCKING 0x0","1","32"
"0x20","      FFMA R1, R2, R3, R4","5","64"
"0x30","@P0   EXIT","2","32"
"0x40","      NOP","0","0"
"#;

fn run(args: &[&str]) -> String {
    crate::support::script::stdout_ok(
        crate::support::script::script("ncu_sass_regions.py").args(args),
    )
}

#[test]
fn barriers_split_the_page_into_its_phases() {
    if !crate::support::script::python3_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.sass.csv");
    std::fs::write(&page, PAGE).unwrap();
    let page = page.to_str().unwrap();

    let out = run(&[page, "--barriers"]);
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(lines.len(), 2, "{out}");
    // The load and the barrier: 64 of 160 executed warp instructions, 3 of 10 samples.
    assert!(lines[0].starts_with("[    0,     2)"), "{out}");
    assert!(lines[0].contains("40.0 % of executed"), "{out}");
    assert!(lines[0].contains("30.0 % of samples"), "{out}");
    // The FMA and the exit; the unexecuted NOP after the exit makes no region.
    assert!(lines[1].starts_with("[    2,     4)"), "{out}");
    assert!(lines[1].contains("60.0 % of executed"), "{out}");
    assert!(lines[1].contains("FFMA:64 EXIT:32"), "{out}");

    // The cut form over the same rows.
    let out = run(&[page, "2", "load,rest"]);
    assert!(
        out.contains("load         [0, 2)      3 =  30.0 % of samples,  40.0 % of executed"),
        "{out}"
    );
}
