//! scripts/ptx_entries_diff.py (the per-entry "PTX unchanged" check behind
//! claims that a kernel change leaves the code alone) ignores what a rebuild renames — branch labels,
//! call sequence numbers, mangled helper names — and reports a changed
//! instruction. Needs python3 (standard library only); without it the test
//! prints SKIPPED and returns.

const OLD: &str = "\
.func _Z4helpILi512EEvv()
.visible .entry k_same(
)
{
\t// callseq 3
\tcall.uni _Z4helpILi512EEvv;
\t@%p1 bra $L__BB1_2;
$L__BB1_2:
\tret;
}
.visible .entry k_changed(
)
{
\tadd.s32 %r1, %r1, 1;
}
";

const NEW: &str = "\
.func _Z4helpILi512ELb0EEvv()
.visible .entry k_changed(
)
{
\tadd.s32 %r1, %r1, 2;
}
.visible .entry k_same(
)
{
\t// callseq 7
\tcall.uni _Z4helpILi512ELb0EEvv;
\t@%p1 bra $L__BB4_2;
$L__BB4_2:
\tret;
}
";

#[test]
fn renames_are_ignored_and_a_changed_instruction_is_not() {
    if !crate::support::script::python3_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (dir.path().join("old.ptx"), dir.path().join("new.ptx"));
    std::fs::write(&old, OLD).unwrap();
    std::fs::write(&new, NEW).unwrap();
    let run = |entries: &[&str]| {
        crate::support::script::script("ptx_entries_diff.py")
            .arg(&old)
            .arg(&new)
            .args(entries)
            .output()
            .unwrap()
    };

    let out = run(&["k_same"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text, "k_same same\n");
    assert_eq!(out.status.code(), Some(0));

    let out = run(&[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text, "k_changed 2 lines differ\nk_same same\n");
    assert_eq!(out.status.code(), Some(1));

    let out = run(&["k_gone"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "k_gone missing in OLD\n"
    );
    assert_eq!(out.status.code(), Some(1));
}
