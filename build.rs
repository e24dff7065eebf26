//! Embeds the git commit the binary was built from, so a run's manifest
//! names its source even on a machine without the repository (the H200),
//! and probes what the test binaries need, so a test whose dependency is
//! missing shows as ignored (with the reason) instead of passing silently:
//! `no_nvrtc` (libnvrtc not on LD_LIBRARY_PATH / ldconfig), `no_gxx` (no
//! g++), `no_gpu_tests` (GVR_GPU_TESTS is not 1). Under `CI=true` the
//! first two are never set, so there a missing dependency fails the test.

use std::path::Path;
use std::process::Command;

fn main() {
    let sha = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    let value = match sha {
        Some(sha) if dirty => format!("{sha}-dirty"),
        Some(sha) => sha,
        None => "unknown".to_string(),
    };
    println!("cargo:rustc-env=GVR_BUILD_GIT_SHA={value}");
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/index");

    println!("cargo::rustc-check-cfg=cfg(no_nvrtc)");
    println!("cargo::rustc-check-cfg=cfg(no_gxx)");
    println!("cargo::rustc-check-cfg=cfg(no_gpu_tests)");
    println!("cargo:rerun-if-env-changed=CI");
    println!("cargo:rerun-if-env-changed=LD_LIBRARY_PATH");
    println!("cargo:rerun-if-env-changed=GVR_GPU_TESTS");
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    if !ci && !nvrtc_present() {
        println!("cargo:rustc-cfg=no_nvrtc");
    }
    if !ci && !gxx_present() {
        println!("cargo:rustc-cfg=no_gxx");
    }
    if std::env::var("GVR_GPU_TESTS").as_deref() != Ok("1") {
        println!("cargo:rustc-cfg=no_gpu_tests");
    }
}

/// Whether a `libnvrtc.so*` is in an LD_LIBRARY_PATH directory or in the
/// dynamic linker's cache (where cudarc's loader will look for it).
fn nvrtc_present() -> bool {
    let is_nvrtc = |name: &str| name.starts_with("libnvrtc.so");
    let in_dir = |dir: &Path| {
        std::fs::read_dir(dir).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| is_nvrtc(&e.file_name().to_string_lossy()))
        })
    };
    if let Some(paths) = std::env::var_os("LD_LIBRARY_PATH") {
        if std::env::split_paths(&paths).any(|d| in_dir(&d)) {
            return true;
        }
    }
    Command::new("ldconfig")
        .arg("-p")
        .output()
        .or_else(|_| Command::new("/sbin/ldconfig").arg("-p").output())
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("libnvrtc.so"))
}

fn gxx_present() -> bool {
    Command::new("g++")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}
