//! The environment manifest recorded with every run (`<run>/manifest.json`).
//!
//! It pins what a result depends on: the binary, the kernel sources, the
//! capture set, the protocol and the machine. `merge` uses it to refuse
//! combining shards that were not measured under the same conditions.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{GvrError, Result};
use crate::grid::RowsMode;
use crate::timing::{Protocol, TimingMethod};

/// File name of the manifest inside a run directory.
pub const MANIFEST_FILE: &str = "manifest.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvManifest {
    /// `gvr-bench` crate version.
    pub tool_version: String,
    pub host: String,
    /// OS family, distribution and kernel release.
    pub os: String,
    pub cpu_count: usize,
    /// sha256 of the running executable ("unknown" if it cannot be read).
    pub binary_sha256: String,
    /// `git rev-parse HEAD` in the working directory at run time.
    pub git_sha: String,
    /// Kernel source name → sha256 of the embedded source text.
    #[serde(default)]
    pub kernel_hashes: BTreeMap<String, String>,
    /// sha256 of the capture set's `manifest.json`.
    pub capture_set_hash: String,
    /// sha256 over the capture set's `manifest.json`, every cell file (name
    /// and bytes) and the grid file the run used: a changed cell value
    /// changes it. Absent in runs recorded before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture_content_hash: Option<String>,
    pub capture_dir: String,
    pub command_line: Vec<String>,
    /// ISO-8601 UTC, e.g. `2026-12-02T11:20:03Z`.
    pub started_utc: String,
    #[serde(default)]
    pub finished_utc: Option<String>,
    pub protocol: Protocol,
    pub rows_mode: RowsMode,
    /// Device facts reported by the GPU runtime; `None` for CPU-only runs.
    #[serde(default)]
    pub gpu: Option<serde_json::Value>,
    /// Arm name (as recorded) → how it was timed.
    #[serde(default)]
    pub timing_methods: BTreeMap<String, TimingMethod>,
    /// Free-form extras (shard spec, merged-from list, bandwidth probe...).
    #[serde(default)]
    pub notes: BTreeMap<String, serde_json::Value>,
}

impl EnvManifest {
    /// Collect everything that can be learnt about the host now. The caller
    /// fills GPU facts and timing methods once the arms are created.
    pub fn collect(
        capture_dir: &Path,
        grid: Option<&Path>,
        protocol: Protocol,
        rows_mode: RowsMode,
    ) -> EnvManifest {
        let mut manifest = EnvManifest::without_hashes(capture_dir, protocol, rows_mode);
        manifest.binary_sha256 = std::env::current_exe()
            .ok()
            .and_then(|p| sha256_file(&p).ok())
            .unwrap_or_else(|| "unknown".into());
        manifest.git_sha = build_git_sha().unwrap_or_else(|| "unknown".into());
        manifest.kernel_hashes = crate::gpu::sources::source_hashes();
        manifest.capture_set_hash =
            sha256_file(&capture_dir.join("manifest.json")).unwrap_or_else(|_| "unknown".into());
        manifest.capture_content_hash = capture_content_hash(capture_dir, grid).ok();
        manifest
    }

    /// The cheap part of `collect`: every hash is "unknown" (hashing a
    /// debug binary takes seconds; unit tests use this).
    pub fn without_hashes(
        capture_dir: &Path,
        protocol: Protocol,
        rows_mode: RowsMode,
    ) -> EnvManifest {
        EnvManifest {
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            host: host_name(),
            os: os_description(),
            cpu_count: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            binary_sha256: "unknown".into(),
            git_sha: "unknown".into(),
            kernel_hashes: BTreeMap::new(),
            capture_set_hash: "unknown".into(),
            capture_content_hash: None,
            capture_dir: capture_dir.display().to_string(),
            command_line: std::env::args().collect(),
            started_utc: utc_now_iso(),
            finished_utc: None,
            protocol,
            rows_mode,
            gpu: None,
            timing_methods: BTreeMap::new(),
            notes: BTreeMap::new(),
        }
    }

    /// Write (or overwrite) `<run_dir>/manifest.json`.
    pub fn write(&self, run_dir: &Path) -> Result<()> {
        let path = run_dir.join(MANIFEST_FILE);
        let text = serde_json::to_string_pretty(self).map_err(|e| GvrError::Other(e.into()))?;
        // Temp file, fsync, rename: a crash never leaves a half-written manifest.
        crate::capture::write_atomically(&path, (text + "\n").as_bytes())
    }

    pub fn read(run_dir: &Path) -> Result<EnvManifest> {
        let path = run_dir.join(MANIFEST_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| GvrError::io(&path, e))?;
        serde_json::from_str(&text).map_err(|e| GvrError::input(&path, "manifest", e.to_string()))
    }

    /// Why two runs may not be merged, or `Ok` when their binary, kernels
    /// and inputs agree.
    pub fn merge_conflict(&self, other: &EnvManifest) -> std::result::Result<(), String> {
        // Two builds of one clean commit may differ byte for byte (cargo
        // relinks when the git index changes; builds are not bit-reproducible):
        // the same source is the same program, and the kernel sources are
        // compared below anyway.
        let same_clean_source = self.git_sha == other.git_sha && is_clean_sha(&self.git_sha);
        if self.binary_sha256 != other.binary_sha256 && !same_clean_source {
            return Err(format!(
                "binary_sha256 differs ({} vs {}) and the builds do not name one clean commit ({} vs {})",
                short(&self.binary_sha256),
                short(&other.binary_sha256),
                short(&self.git_sha),
                short(&other.git_sha)
            ));
        }
        if self.kernel_hashes != other.kernel_hashes {
            let differing: Vec<&str> = self
                .kernel_hashes
                .keys()
                .chain(other.kernel_hashes.keys())
                .filter(|k| self.kernel_hashes.get(*k) != other.kernel_hashes.get(*k))
                .map(|k| k.as_str())
                .collect();
            return Err(format!("kernel_hashes differ ({})", differing.join(", ")));
        }
        self.capture_conflict(other)
    }

    /// Why the two runs did not measure the same inputs: another capture
    /// set (manifest or any cell's content, or the grid file).
    pub fn capture_conflict(&self, other: &EnvManifest) -> std::result::Result<(), String> {
        if self.capture_set_hash != other.capture_set_hash {
            return Err(format!(
                "capture_set_hash differs ({} vs {})",
                short(&self.capture_set_hash),
                short(&other.capture_set_hash)
            ));
        }
        // Compared when both runs recorded one (older runs did not).
        if let (Some(a), Some(b)) = (&self.capture_content_hash, &other.capture_content_hash) {
            if a != b {
                return Err(format!(
                    "capture_content_hash differs ({} vs {}): a cell file or the grid changed",
                    short(a),
                    short(b)
                ));
            }
        }
        Ok(())
    }

    /// Why two runs' times may not be compared case by case (`regress`,
    /// `aa`): other inputs, another timing protocol or rows mode. Binaries
    /// and kernels may differ: that is what a comparison is for.
    pub fn comparison_conflict(&self, other: &EnvManifest) -> std::result::Result<(), String> {
        self.capture_conflict(other)?;
        if self.protocol != other.protocol {
            return Err(format!(
                "measurement protocol differs ({:?} vs {:?})",
                self.protocol, other.protocol
            ));
        }
        if self.rows_mode != other.rows_mode {
            return Err(format!(
                "rows mode differs ({:?} vs {:?})",
                self.rows_mode, other.rows_mode
            ));
        }
        Ok(())
    }
}

/// A full commit id without the `-dirty` mark (or `unknown`).
fn is_clean_sha(sha: &str) -> bool {
    sha.len() == 40 && sha.chars().all(|c| c.is_ascii_hexdigit())
}

fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

/// sha256 over a capture set's `manifest.json`, each `*.safetensors` file
/// of the directory in name order (name, length, then bytes) and the grid
/// file's bytes when given. Files are hashed in parallel.
pub fn capture_content_hash(capture_dir: &Path, grid: Option<&Path>) -> Result<String> {
    use rayon::prelude::*;
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(capture_dir)
        .map_err(|e| GvrError::io(capture_dir, e))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "safetensors") && p.is_file())
        .collect();
    files.sort();
    files.insert(0, capture_dir.join("manifest.json"));
    let digests = files
        .par_iter()
        .map(|path| {
            let bytes = std::fs::read(path).map_err(|e| GvrError::io(path, e))?;
            Ok((bytes.len(), Sha256::digest(&bytes)))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut all = Sha256::new();
    for (path, (len, digest)) in files.iter().zip(&digests) {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        all.update(name.as_bytes());
        all.update([0u8]);
        all.update((*len as u64).to_le_bytes());
        all.update(digest);
    }
    if let Some(grid) = grid {
        let bytes = std::fs::read(grid).map_err(|e| GvrError::io(grid, e))?;
        all.update(b"grid\0");
        all.update(Sha256::digest(&bytes));
    }
    Ok(all.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Hex sha256 of a file's bytes.
pub fn sha256_file(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| GvrError::io(path, e))?;
    Ok(sha256_hex(&bytes))
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn host_name() -> String {
    let from_file = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    from_file("/proc/sys/kernel/hostname")
        .or_else(|| from_file("/etc/hostname"))
        .or_else(|| std::env::var("HOSTNAME").ok())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

fn os_description() -> String {
    let distro = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_string())
        });
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|s| s.trim().to_string());
    let mut parts = vec![format!(
        "{}-{}",
        std::env::consts::OS,
        std::env::consts::ARCH
    )];
    parts.extend(distro);
    parts.extend(kernel);
    parts.join(" / ")
}

/// The commit the binary was built from (embedded by build.rs; "-dirty"
/// when tracked files had uncommitted changes).
fn build_git_sha() -> Option<String> {
    let sha = env!("GVR_BUILD_GIT_SHA");
    (sha != "unknown").then(|| sha.to_string())
}

/// Current time as ISO-8601 UTC with second precision.
pub fn utc_now_iso() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    format_utc(secs, "-", ":", "T", "Z")
}

/// A timestamp usable as a directory name: `20261202T112003Z`.
pub fn utc_now_compact() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    format_utc(secs, "", "", "T", "Z")
}

fn format_utc(unix_secs: i64, date_sep: &str, time_sep: &str, t: &str, z: &str) -> String {
    let days = unix_secs.div_euclid(86_400);
    let secs_of_day = unix_secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let (hh, mm, ss) = (secs_of_day / 3600, secs_of_day / 60 % 60, secs_of_day % 60);
    format!("{y:04}{date_sep}{m:02}{date_sep}{d:02}{t}{hh:02}{time_sep}{mm:02}{time_sep}{ss:02}{z}")
}

/// Days since 1970-01-01 → proleptic Gregorian (year, month, day).
/// Howard Hinnant's `civil_from_days` algorithm (public-domain description),
/// which avoids a date-time dependency for one formatting need.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March-based
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_from_days_known_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        // 2000-02-29 is day 11016; 2026-12-02 is day 20789.
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(11_017), (2000, 3, 1));
        assert_eq!(civil_from_days(20_789), (2026, 12, 2));
    }

    #[test]
    fn formats_timestamps() {
        // 2026-12-02T11:20:03Z
        let t = 20_789 * 86_400 + 11 * 3600 + 20 * 60 + 3;
        assert_eq!(format_utc(t, "-", ":", "T", "Z"), "2026-12-02T11:20:03Z");
        assert_eq!(format_utc(t, "", "", "T", "Z"), "20261202T112003Z");
    }

    #[test]
    fn sha256_of_known_input() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn merge_conflicts_name_the_field() {
        let base = EnvManifest::without_hashes(
            Path::new("/nonexistent"),
            Protocol::default(),
            RowsMode::Replicate,
        );
        assert!(base.merge_conflict(&base.clone()).is_ok());
        let mut other = base.clone();
        other.capture_set_hash = "different".into();
        assert!(base
            .merge_conflict(&other)
            .unwrap_err()
            .contains("capture_set_hash"));
        let mut other = base.clone();
        other.kernel_hashes.insert("ss_main.cu".into(), "x".into());
        assert!(base
            .merge_conflict(&other)
            .unwrap_err()
            .contains("ss_main.cu"));
        let mut other = base.clone();
        other.binary_sha256 = "y".into();
        assert!(base
            .merge_conflict(&other)
            .unwrap_err()
            .contains("binary_sha256"));
        // A rebuild of one clean commit merges; of a dirty tree it does not.
        let commit = "72c410d7cc6a90d4858d733a4f3e819d7b34a210";
        let mut a = base.clone();
        a.git_sha = commit.into();
        let mut b = a.clone();
        b.binary_sha256 = "rebuilt".into();
        assert!(a.merge_conflict(&b).is_ok());
        a.git_sha = format!("{commit}-dirty");
        b.git_sha = a.git_sha.clone();
        assert!(a.merge_conflict(&b).unwrap_err().contains("clean commit"));
        // A host difference alone does not block a merge (shards run on several machines).
        let mut other = base.clone();
        other.host = "elsewhere".into();
        assert!(base.merge_conflict(&other).is_ok());
    }

    #[test]
    fn a_changed_cell_value_changes_the_content_hash() {
        let dir = tempfile::tempdir().unwrap();
        let caps = dir.path();
        std::fs::write(caps.join("manifest.json"), b"{}").unwrap();
        std::fs::write(caps.join("a.safetensors"), [1u8, 2, 3, 4]).unwrap();
        std::fs::write(caps.join("b.safetensors"), [5u8, 6, 7, 8]).unwrap();
        let before = capture_content_hash(caps, None).unwrap();
        assert_eq!(before, capture_content_hash(caps, None).unwrap());
        std::fs::write(caps.join("b.safetensors"), [5u8, 6, 7, 9]).unwrap();
        let after = capture_content_hash(caps, None).unwrap();
        assert_ne!(before, after, "one byte of one cell changed");
        let grid = dir.path().join("grid.csv");
        std::fs::write(&grid, b"cell,n\n").unwrap();
        assert_ne!(after, capture_content_hash(caps, Some(&grid)).unwrap());

        let mut a = EnvManifest::without_hashes(caps, Protocol::default(), RowsMode::Replicate);
        a.capture_content_hash = Some(before);
        let mut b = a.clone();
        b.capture_content_hash = Some(after);
        assert!(a
            .merge_conflict(&b)
            .unwrap_err()
            .contains("capture_content_hash"));
        assert!(a.comparison_conflict(&b).is_err());
        // A run recorded before the content hash existed is compared on the
        // manifest hash alone.
        b.capture_content_hash = None;
        assert!(a.merge_conflict(&b).is_ok());
    }

    #[test]
    fn manifest_round_trips_through_a_run_dir() {
        let dir = tempfile::tempdir().unwrap();
        let mut m =
            EnvManifest::without_hashes(dir.path(), Protocol::default(), RowsMode::Independent);
        m.timing_methods
            .insert("cpu-ref".into(), TimingMethod::HostClock);
        m.write(dir.path()).unwrap();
        assert_eq!(EnvManifest::read(dir.path()).unwrap(), m);
    }
}
