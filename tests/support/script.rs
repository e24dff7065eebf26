//! Shared by the tests of the repository's python scripts (standard library only).

use std::path::PathBuf;
use std::process::Command;

/// Whether python3 runs here; says SKIPPED when it does not.
pub fn python3_or_skip() -> bool {
    let found = Command::new("python3").arg("--version").output().is_ok();
    if !found {
        eprintln!("SKIPPED: python3 not available");
    }
    found
}

/// Run `command` (a [`script`]) to the end and return its stdout; it must exit 0
/// (the panic shows its stdout and stderr).
pub fn stdout_ok(command: &mut Command) -> String {
    let out = command.output().expect("python3 runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// `python3 scripts/<name>`, not started yet.
pub fn script(name: &str) -> Command {
    let mut command = Command::new("python3");
    command.arg(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("scripts")
            .join(name),
    );
    command
}
