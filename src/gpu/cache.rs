//! On-disk cache of compiled CUBINs. A CUBIN is reused only when everything
//! that could change the machine code is identical: source text, header
//! texts, compile options, target architecture, NVRTC version and driver
//! version. The key is a sha256 over all of them with length prefixes, so
//! no two different inputs can concatenate to the same byte stream.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{GvrError, Result};

/// Everything that determines a CUBIN.
#[derive(Debug, Clone)]
pub struct CacheKeyInputs<'a> {
    pub source_name: &'a str,
    pub source_code: &'a str,
    pub headers: &'a [(&'a str, &'a str)],
    pub options: &'a [String],
    pub arch: &'a str,
    pub nvrtc_version: (i32, i32),
    pub driver_version: i32,
}

/// Bumped when the key layout changes so stale entries are never read.
const KEY_LAYOUT_VERSION: &str = "gvr-bench-cubin-v1";

/// Hex sha256 identifying one compiled module.
pub fn cache_key(inputs: &CacheKeyInputs<'_>) -> String {
    let mut hasher = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    field(KEY_LAYOUT_VERSION.as_bytes());
    field(inputs.source_name.as_bytes());
    field(inputs.source_code.as_bytes());
    field(&(inputs.headers.len() as u64).to_le_bytes());
    for (name, text) in inputs.headers {
        field(name.as_bytes());
        field(text.as_bytes());
    }
    field(&(inputs.options.len() as u64).to_le_bytes());
    for option in inputs.options {
        field(option.as_bytes());
    }
    field(inputs.arch.as_bytes());
    field(&inputs.nvrtc_version.0.to_le_bytes());
    field(&inputs.nvrtc_version.1.to_le_bytes());
    field(&inputs.driver_version.to_le_bytes());
    let digest = hasher.finalize();
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// `$GVR_CACHE_DIR`, else `~/.cache/gvr-bench/kernels`, else a directory
/// under the system temp dir (no HOME, e.g. in a bare container).
pub fn default_cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("GVR_CACHE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(home) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(home)
            .join(".cache")
            .join("gvr-bench")
            .join("kernels");
    }
    std::env::temp_dir().join("gvr-bench-kernels")
}

/// A directory of `<key>.cubin` files.
#[derive(Debug, Clone)]
pub struct DiskCache {
    dir: PathBuf,
}

impl DiskCache {
    pub fn new(dir: impl Into<PathBuf>) -> DiskCache {
        DiskCache { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_for(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.cubin"))
    }

    /// The cached CUBIN, or `None` when absent or unreadable (a broken
    /// cache entry only costs a recompile, so read errors are not fatal).
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        match std::fs::read(self.path_for(key)) {
            Ok(bytes) if !bytes.is_empty() => Some(bytes),
            Ok(_) => None,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                tracing::warn!(
                    "kernel cache: cannot read {}: {e}",
                    self.path_for(key).display()
                );
                None
            }
        }
    }

    /// Whether a non-empty entry for `key` exists (without reading it).
    pub fn contains(&self, key: &str) -> bool {
        std::fs::metadata(self.path_for(key)).is_ok_and(|m| m.len() > 0)
    }

    /// Store a CUBIN atomically (write to a temp file, then rename) so
    /// concurrent processes on one host never read a half-written file.
    pub fn put(&self, key: &str, cubin: &[u8]) -> Result<()> {
        std::fs::create_dir_all(&self.dir).map_err(|e| GvrError::io(&self.dir, e))?;
        let final_path = self.path_for(key);
        crate::capture::write_atomically(&final_path, cubin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs<'a>(options: &'a [String], headers: &'a [(&'a str, &'a str)]) -> CacheKeyInputs<'a> {
        CacheKeyInputs {
            source_name: "radix.cu",
            source_code: "extern \"C\" __global__ void k() {}",
            headers,
            options,
            arch: "sm_90a",
            nvrtc_version: (13, 0),
            driver_version: 13000,
        }
    }

    #[test]
    fn key_is_stable_and_hex() {
        let options = vec!["--gpu-architecture=sm_90a".to_string()];
        let headers = [("common.cuh", "#pragma once")];
        let a = cache_key(&inputs(&options, &headers));
        let b = cache_key(&inputs(&options, &headers));
        assert_eq!(a, b);
        assert_eq!(a.len(), 64);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn key_changes_with_every_input() {
        let options = vec!["-DA=1".to_string()];
        let headers = [("common.cuh", "#pragma once")];
        let base = cache_key(&inputs(&options, &headers));

        let other_options = vec!["-DA=2".to_string()];
        assert_ne!(base, cache_key(&inputs(&other_options, &headers)));
        let other_headers = [("common.cuh", "#pragma once\n")];
        assert_ne!(base, cache_key(&inputs(&options, &other_headers)));

        let mut changed = inputs(&options, &headers);
        changed.arch = "sm_100a";
        assert_ne!(base, cache_key(&changed));
        let mut changed = inputs(&options, &headers);
        changed.driver_version = 13010;
        assert_ne!(base, cache_key(&changed));
        let mut changed = inputs(&options, &headers);
        changed.nvrtc_version = (13, 1);
        assert_ne!(base, cache_key(&changed));
        let mut changed = inputs(&options, &headers);
        changed.source_code = "extern \"C\" __global__ void k2() {}";
        assert_ne!(base, cache_key(&changed));
    }

    #[test]
    fn field_boundaries_matter() {
        // "-DA" + "B" must not collide with "-D" + "AB".
        let split_one = vec!["-DA".to_string(), "B".to_string()];
        let split_two = vec!["-D".to_string(), "AB".to_string()];
        assert_ne!(
            cache_key(&inputs(&split_one, &[])),
            cache_key(&inputs(&split_two, &[]))
        );
    }

    #[test]
    fn disk_round_trip_and_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(dir.path().join("nested"));
        assert!(cache.get("abc").is_none());
        cache.put("abc", &[1, 2, 3]).unwrap();
        assert_eq!(cache.get("abc"), Some(vec![1, 2, 3]));
        // No temp files left behind: the entry is the only file.
        let names: Vec<String> = std::fs::read_dir(cache.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }
}
