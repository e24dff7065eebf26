//! NVRTC front end: compile one kernel source (with in-memory headers and
//! `-D` specialisations) straight to a CUBIN for the device's exact
//! architecture, keep the ptxas `-v` log and parse registers and spills per
//! entry point. Works without a GPU: only libnvrtc is needed.

use std::ffi::{c_char, CString};

use cudarc::nvrtc::sys;
use serde::{Deserialize, Serialize};

use super::sources::{KernelSource, HEADERS};
use crate::error::{GvrError, Result};

/// What `--gpu-architecture` the H200 wants (compute capability 9.0 with the
/// arch-specific `a` features: wgmma, setmaxnreg, clusters).
pub const DEFAULT_ARCH: &str = "sm_90a";

/// Hint printed whenever libnvrtc cannot be loaded.
pub const NVRTC_INSTALL_HINT: &str =
    "pip install nvidia-cuda-nvrtc==13.0.88 and add its lib dir to LD_LIBRARY_PATH";

/// `sm_{major}{minor}` plus the `a` suffix for architectures that have
/// arch-specific features (9.0 and later), so kernels may use them.
pub fn arch_for(major: i32, minor: i32) -> String {
    if major >= 9 {
        format!("sm_{major}{minor}a")
    } else {
        format!("sm_{major}{minor}")
    }
}

/// Compile options, in a fixed order (they are part of the cache key).
///
/// - no `--use_fast_math`: it flushes denormals and approximates division,
///   and the kernels must reproduce fp32 order exactly;
/// - `--fmad=true` is NVRTC's default, stated explicitly: the kernels only
///   compare logits (or their order-preserving integer keys) and never round
///   arithmetic results that decide membership, so contraction cannot change
///   which indices are selected;
/// - `-lineinfo` so profilers map SASS back to source lines, at no run-time cost;
/// - `--ptxas-options=-v` so the log carries registers / spills per entry.
pub fn compile_options(arch: &str, defines: &[(&str, String)]) -> Vec<String> {
    let mut options = vec![
        format!("--gpu-architecture={arch}"),
        "-std=c++17".to_string(),
        "--fmad=true".to_string(),
        "-lineinfo".to_string(),
        "--ptxas-options=-v".to_string(),
    ];
    for (name, value) in defines {
        options.push(format!("-D{name}={value}"));
    }
    options
}

/// Whether libnvrtc can be loaded in this process. cudarc's dynamic loader
/// panics on a missing library, so every NVRTC call is gated on this.
pub fn nvrtc_available() -> bool {
    static PRESENT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    // SAFETY: only tries to dlopen candidate library names.
    *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() })
}

/// NVRTC's (major, minor) version; part of the cache key.
pub fn nvrtc_version() -> Result<(i32, i32)> {
    ensure_nvrtc()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: two valid out-pointers.
    let status = unsafe { sys::nvrtcVersion(&mut major, &mut minor) };
    check(status, "nvrtcVersion", "nvrtc")?;
    Ok((major, minor))
}

fn ensure_nvrtc() -> Result<()> {
    if nvrtc_available() {
        Ok(())
    } else {
        Err(GvrError::Gpu(format!(
            "libnvrtc not found ({NVRTC_INSTALL_HINT})"
        )))
    }
}

fn check(status: sys::nvrtcResult, call: &str, source: &str) -> Result<()> {
    if status == sys::nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(GvrError::Kernel {
            name: source.to_string(),
            message: format!("{call} failed: {status:?}"),
        })
    }
}

/// A compiled CUBIN and the compiler's log (ptxas `-v` lines included).
#[derive(Debug, Clone)]
pub struct Compiled {
    pub cubin: Vec<u8>,
    pub log: String,
}

/// Destroys the NVRTC program on every exit path.
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the handle came from a successful nvrtcCreateProgram.
        unsafe {
            sys::nvrtcDestroyProgram(&mut self.0);
        }
    }
}

fn c_string(text: &str, what: &str, source: &str) -> Result<CString> {
    CString::new(text).map_err(|_| GvrError::Kernel {
        name: source.to_string(),
        message: format!("{what} contains a NUL byte"),
    })
}

/// Compile `source` to a CUBIN for `arch` with the given options (see
/// [`compile_options`]). A compile error returns `GvrError::Kernel` carrying
/// the full NVRTC log.
pub fn compile_cubin(source: &KernelSource, options: &[String]) -> Result<Compiled> {
    ensure_nvrtc()?;
    let name = source.name;
    let code = c_string(source.code, "source", name)?;
    let program_name = c_string(name, "name", name)?;
    let header_codes = HEADERS
        .iter()
        .map(|(_, text)| c_string(text, "header", name))
        .collect::<Result<Vec<_>>>()?;
    let header_names = HEADERS
        .iter()
        .map(|(file, _)| c_string(file, "header name", name))
        .collect::<Result<Vec<_>>>()?;
    let header_code_ptrs: Vec<*const c_char> = header_codes.iter().map(|c| c.as_ptr()).collect();
    let header_name_ptrs: Vec<*const c_char> = header_names.iter().map(|c| c.as_ptr()).collect();
    let option_strings = options
        .iter()
        .map(|o| c_string(o, "option", name))
        .collect::<Result<Vec<_>>>()?;
    let option_ptrs: Vec<*const c_char> = option_strings.iter().map(|c| c.as_ptr()).collect();

    let mut raw: sys::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: every pointer refers to a live CString for the whole call; the
    // program copies the strings it keeps.
    let status = unsafe {
        sys::nvrtcCreateProgram(
            &mut raw,
            code.as_ptr(),
            program_name.as_ptr(),
            header_code_ptrs.len() as i32,
            header_code_ptrs.as_ptr(),
            header_name_ptrs.as_ptr(),
        )
    };
    check(status, "nvrtcCreateProgram", name)?;
    let program = Program(raw);

    // SAFETY: valid program and option pointer array.
    let compile_status = unsafe {
        sys::nvrtcCompileProgram(program.0, option_ptrs.len() as i32, option_ptrs.as_ptr())
    };
    let log = program_log(&program, name)?;
    if compile_status != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(GvrError::Kernel {
            name: name.to_string(),
            message: format!("NVRTC {compile_status:?} with options {options:?}:\n{log}"),
        });
    }

    let mut size = 0usize;
    // SAFETY: valid program, valid out-pointer.
    check(
        unsafe { sys::nvrtcGetCUBINSize(program.0, &mut size) },
        "nvrtcGetCUBINSize",
        name,
    )?;
    if size == 0 {
        return Err(GvrError::Kernel {
            name: name.to_string(),
            message:
                "NVRTC produced no CUBIN (is --gpu-architecture a real sm_XY, not compute_XY?)"
                    .into(),
        });
    }
    let mut cubin = vec![0u8; size];
    // SAFETY: the buffer holds exactly `size` bytes as NVRTC reported.
    check(
        unsafe { sys::nvrtcGetCUBIN(program.0, cubin.as_mut_ptr() as *mut c_char) },
        "nvrtcGetCUBIN",
        name,
    )?;
    Ok(Compiled { cubin, log })
}

/// Compile every `(source, options)` job with up to `threads` NVRTC programs
/// at once (one per thread; NVRTC compiles separate programs concurrently),
/// results in job order. What it saves: ptxas runs single-threaded per
/// program, and a campaign's first cases compile a dozen or more builds one
/// after another (~100 s on the device host).
pub fn compile_all(jobs: &[(KernelSource, Vec<String>)], threads: usize) -> Vec<Result<Compiled>> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<Result<Compiled>>>> =
        jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, jobs.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((source, options)) = jobs.get(i) else {
                    break;
                };
                let compiled = compile_cubin(source, options);
                *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(compiled);
            });
        }
    });
    results
        .into_iter()
        .map(|slot| {
            slot.into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .unwrap_or_else(|| {
                    Err(GvrError::Other(anyhow::anyhow!(
                        "a compile thread ended without a result"
                    )))
                })
        })
        .collect()
}

fn program_log(program: &Program, name: &str) -> Result<String> {
    let mut size = 0usize;
    // SAFETY: valid program, valid out-pointer.
    check(
        unsafe { sys::nvrtcGetProgramLogSize(program.0, &mut size) },
        "nvrtcGetProgramLogSize",
        name,
    )?;
    let mut buffer = vec![0u8; size.max(1)];
    // SAFETY: buffer has room for `size` bytes including the terminator.
    check(
        unsafe { sys::nvrtcGetProgramLog(program.0, buffer.as_mut_ptr() as *mut c_char) },
        "nvrtcGetProgramLog",
        name,
    )?;
    let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    Ok(String::from_utf8_lossy(&buffer[..end]).into_owned())
}

/// Resource usage of one entry point, from the ptxas `-v` log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryInfo {
    pub name: String,
    pub registers: u32,
    pub spill_stores: u64,
    pub spill_loads: u64,
    /// Static shared memory in bytes (dynamic shared memory is not known at compile time).
    pub smem: u64,
    pub stack_frame: u64,
}

/// Every entry point of one compiled source.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompileReport {
    pub source: String,
    pub arch: String,
    pub options: Vec<String>,
    pub entries: Vec<EntryInfo>,
    /// The raw compiler log, kept for diagnostics.
    pub log: String,
}

impl CompileReport {
    /// Entry points with any spill store or load.
    pub fn spilling(&self) -> impl Iterator<Item = &EntryInfo> {
        self.entries
            .iter()
            .filter(|e| e.spill_stores > 0 || e.spill_loads > 0)
    }
}

/// Compile `source` for `arch` with NVRTC only (no GPU needed) and report
/// registers, spills and static shared memory per entry point.
pub fn compile_report(
    source: &KernelSource,
    defines: &[(&str, String)],
    arch: &str,
) -> Result<CompileReport> {
    let options = compile_options(arch, defines);
    let compiled = compile_cubin(source, &options)?;
    Ok(CompileReport {
        source: source.name.to_string(),
        arch: arch.to_string(),
        entries: parse_ptxas_log(&compiled.log),
        options,
        log: compiled.log,
    })
}

/// Parse a ptxas `-v` log. The log is a sequence of per-function blocks:
///
/// ```text
/// ptxas info    : Compiling entry function 'radix_topk' for 'sm_90a'
/// ptxas info    : Function properties for radix_topk
///     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
/// ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem, 380 bytes cmem[0]
/// ```
///
/// Only `entry function` blocks become entries; properties of device
/// functions (`Function properties for _Z3foo...` without a preceding
/// `Compiling entry function`) are ignored. Unknown lines are skipped so a
/// newer ptxas wording degrades to zeros rather than an error.
pub fn parse_ptxas_log(log: &str) -> Vec<EntryInfo> {
    let mut entries: Vec<EntryInfo> = Vec::new();
    // Index in `entries` of the block that the following lines describe.
    let mut current: Option<usize> = None;
    for line in log.lines() {
        let line = line.trim();
        if let Some(name) = quoted_after(line, "Compiling entry function") {
            entries.push(EntryInfo {
                name,
                ..EntryInfo::default()
            });
            current = Some(entries.len() - 1);
        } else if let Some(name) = line
            .split("Function properties for ")
            .nth(1)
            .map(|s| s.trim().trim_matches('\'').to_string())
        {
            // Properties of a device function (not an entry) end the entry block.
            current = entries.iter().position(|e| e.name == name);
        } else if let Some(index) = current {
            let entry = &mut entries[index];
            if line.contains("spill stores") || line.contains("stack frame") {
                entry.stack_frame =
                    number_before(line, "bytes stack frame").unwrap_or(entry.stack_frame);
                entry.spill_stores =
                    number_before(line, "bytes spill stores").unwrap_or(entry.spill_stores);
                entry.spill_loads =
                    number_before(line, "bytes spill loads").unwrap_or(entry.spill_loads);
            } else if line.contains("Used") && line.contains("registers") {
                entry.registers = number_before(line, "registers").unwrap_or(0) as u32;
                entry.smem = number_before(line, "bytes smem").unwrap_or(0);
            }
        }
    }
    entries
}

/// The text between the first pair of single quotes after `marker`.
fn quoted_after(line: &str, marker: &str) -> Option<String> {
    let rest = &line[line.find(marker)? + marker.len()..];
    let open = rest.find('\'')?;
    let close = open + 1 + rest[open + 1..].find('\'')?;
    Some(rest[open + 1..close].to_string())
}

/// The integer immediately preceding `suffix` in `line` (`"40 registers"` → 40).
fn number_before(line: &str, suffix: &str) -> Option<u64> {
    let head = line[..line.find(suffix)?].trim_end();
    let digits: String = head
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log in the shape ptxas 13.0 prints for `-v` (two entries, one
    /// device function that must not become an entry).
    const RECORDED_LOG: &str = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'flush_l2' for 'sm_90a'
ptxas info    : Function properties for flush_l2
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers, 372 bytes cmem[0]
ptxas info    : Function properties for _Z6helperPf
    24 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'radix_topk' for 'sm_90a'
ptxas info    : Function properties for radix_topk
    16 bytes stack frame, 12 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 8192 bytes smem, 400 bytes cmem[0]
";

    #[test]
    fn parses_registers_spills_and_smem_per_entry() {
        let entries = parse_ptxas_log(RECORDED_LOG);
        assert_eq!(entries.len(), 2, "{entries:?}");
        assert_eq!(
            entries[0],
            EntryInfo {
                name: "flush_l2".into(),
                registers: 12,
                spill_stores: 0,
                spill_loads: 0,
                smem: 0,
                stack_frame: 0
            }
        );
        assert_eq!(
            entries[1],
            EntryInfo {
                name: "radix_topk".into(),
                registers: 255,
                spill_stores: 12,
                spill_loads: 8,
                smem: 8192,
                stack_frame: 16
            }
        );
        let report = CompileReport {
            entries,
            ..CompileReport::default()
        };
        let spilling: Vec<_> = report.spilling().map(|e| e.name.as_str()).collect();
        assert_eq!(spilling, vec!["radix_topk"]);
    }

    #[test]
    fn device_function_properties_do_not_leak_into_entries() {
        let log = "\
ptxas info    : Compiling entry function 'k' for 'sm_90a'
ptxas info    : Function properties for k
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Function properties for _Z6helperPf
    24 bytes stack frame, 40 bytes spill stores, 40 bytes spill loads
";
        let entries = parse_ptxas_log(log);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].spill_stores, 0);
        assert_eq!(entries[0].stack_frame, 0);
    }

    #[test]
    fn garbage_log_gives_no_entries() {
        assert!(parse_ptxas_log("").is_empty());
        assert!(
            parse_ptxas_log("error: something\nCompiling entry function without quotes").is_empty()
        );
    }

    #[test]
    fn options_are_ordered_and_exact_math() {
        let options = compile_options("sm_90a", &[("TOPK_K", "512".into())]);
        assert_eq!(options[0], "--gpu-architecture=sm_90a");
        assert!(options.iter().all(|o| !o.contains("fast_math")));
        assert_eq!(options.last().unwrap(), "-DTOPK_K=512");
    }

    #[test]
    fn arch_string_uses_a_suffix_from_hopper_on() {
        assert_eq!(arch_for(9, 0), "sm_90a");
        assert_eq!(arch_for(8, 0), "sm_80");
        assert_eq!(arch_for(10, 0), "sm_100a");
    }
}
