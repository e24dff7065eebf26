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
