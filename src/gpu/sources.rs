//! The CUDA sources compiled into the binary, and the table of
//! specialisations (`-D` define lists) the arms build them with.
//!
//! Sources are embedded with `include_str!` so the binary is self-contained
//! and the disk cache key can hash the exact text that was compiled.

/// One `kernels/**/*.cu` translation unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSource {
    /// Path under `kernels/`, e.g. `baselines/radix.cu`.
    pub name: &'static str,
    pub code: &'static str,
}

pub const FLUSH: KernelSource = KernelSource {
    name: "harness/flush.cu",
    code: include_str!("../../kernels/harness/flush.cu"),
};
pub const RADIX: KernelSource = KernelSource {
    name: "baselines/radix.cu",
    code: include_str!("../../kernels/baselines/radix.cu"),
};
pub const RADIX_MCTA: KernelSource = KernelSource {
    name: "baselines/radix_mcta.cu",
    code: include_str!("../../kernels/baselines/radix_mcta.cu"),
};
pub const FILTERED: KernelSource = KernelSource {
    name: "baselines/filtered.cu",
    code: include_str!("../../kernels/baselines/filtered.cu"),
};
pub const GVR1: KernelSource = KernelSource {
    name: "baselines/gvr1.cu",
    code: include_str!("../../kernels/baselines/gvr1.cu"),
};
pub const SGLANG_V2: KernelSource = KernelSource {
    name: "baselines/sglang_v2.cu",
    code: include_str!("../../kernels/baselines/sglang_v2.cu"),
};
pub const SS_MAIN: KernelSource = KernelSource {
    name: "ss/main.cu",
    code: include_str!("../../kernels/ss/main.cu"),
};
pub const SS_CLUS: KernelSource = KernelSource {
    name: "ss/reg_clus.cu",
    code: include_str!("../../kernels/ss/reg_clus.cu"),
};
pub const SS_CLUS_STREAM: KernelSource = KernelSource {
    name: "ss/clus.cu",
    code: include_str!("../../kernels/ss/clus.cu"),
};
pub const SS_REG: KernelSource = KernelSource {
    name: "ss/reg.cu",
    code: include_str!("../../kernels/ss/reg.cu"),
};

/// The latency floor of `grid --floor` (not a top-K; src/floor/).
pub const FLOOR: KernelSource = KernelSource {
    name: "harness/floor.cu",
    code: include_str!("../../kernels/harness/floor.cu"),
};

pub const SS_VALUES: KernelSource = KernelSource {
    name: "harness/values.cu",
    code: include_str!("../../kernels/harness/values.cu"),
};

/// Every translation unit under `kernels/`. Add new `.cu` files here (one
/// line) and, if they need specialisations, to [`variants`].
pub static ALL: &[KernelSource] = &[
    FLUSH,
    RADIX,
    RADIX_MCTA,
    FILTERED,
    GVR1,
    SGLANG_V2,
    SS_MAIN,
    SS_REG,
    SS_CLUS,
    SS_VALUES,
    SS_CLUS_STREAM,
    FLOOR,
];

/// `kernels/ss/knobs.cuh`: every compile-time knob of the self-sampling
/// kernels with its `#ifndef` default.
pub const SS_KNOBS: &str = include_str!("../../kernels/ss/knobs.cuh");

/// In-memory headers handed to NVRTC (`nvrtcCreateProgram` headers), so
/// `#include "common.cuh"` resolves without any file system or CUDA headers.
pub static HEADERS: &[(&str, &str)] = &[
    (
        "prim/common.cuh",
        include_str!("../../kernels/prim/common.cuh"),
    ),
    ("ss/common.cuh", include_str!("../../kernels/ss/common.cuh")),
    ("ss/knobs.cuh", SS_KNOBS),
];

/// A `-D NAME=VALUE` specialisation list.
pub type Defines = Vec<(&'static str, String)>;

/// Every (source, defines) combination the arms compile. The NVRTC compile
/// test builds each of them and gates spills, so a specialisation that an arm
/// uses but that is missing here escapes the gate: the kernel engineer
/// extends this table together with the arm.
pub fn variants() -> Vec<(KernelSource, Defines)> {
    let mut table: Vec<(KernelSource, Defines)> = Vec::new();
    // Sources without specialisations are compiled once as written.
    for source in ALL {
        table.push((*source, Vec::new()));
    }
    // Specialisations go here, one push per define list an arm compiles, e.g.
    // `table.push((RADIX, vec![("RADIX_BLK", "256".into())]));`
    table.push((SS_CLUS_STREAM, vec![("CL_MERGE_SPREAD", "1".into())])); // clusters of 8
    table.push((SS_CLUS, vec![("RC_COARSE_MERGE", "1".into())])); // reg_clus clusters of 8
    table
}

/// sha256 (hex) of each embedded kernel source, by its path under `kernels/`.
pub fn source_hashes() -> std::collections::BTreeMap<String, String> {
    use sha2::{Digest, Sha256};
    ALL.iter()
        .map(|s| {
            let digest = Sha256::digest(s.code.as_bytes());
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            (s.name.to_string(), hex)
        })
        .collect()
}

/// Look a source up by its path under `kernels/` (`baselines/radix.cu`).
pub fn by_name(name: &str) -> Option<KernelSource> {
    ALL.iter().copied().find(|s| s.name == name)
}

/// Entry points whose register spills fail the compile gate: every kernel
/// except the harness utilities in `flush.cu` (all named `flush*`).
pub fn is_hot_entry(entry: &str) -> bool {
    !entry.starts_with("flush")
}

/// Member names, in order, of `struct NAME { ... };` in `code`, whose members
/// must all be `u32` (the host passes the struct as that many packed u32: see
/// the args structs of the arms). `Err` names what does not fit: a missing
/// struct, or a member line of another type. Comment and blank lines are skipped.
pub fn u32_struct_fields<'a>(
    code: &'a str,
    name: &str,
) -> std::result::Result<Vec<&'a str>, String> {
    let open = format!("struct {name} {{");
    let start = code
        .find(&open)
        .ok_or_else(|| format!("`{open}` not found"))?;
    let body = &code[start + open.len()..];
    let body = &body[..body.find("};").ok_or_else(|| format!("{name}: no `}};`"))?];
    let mut fields = Vec::new();
    for line in body.lines().map(str::trim) {
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        let field = line
            .strip_prefix("u32 ")
            .and_then(|rest| rest.split(';').next())
            .map(str::trim)
            .filter(|f| !f.is_empty() && f.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .ok_or_else(|| format!("{name}: `{line}` is not a u32 member"))?;
        fields.push(field);
    }
    Ok(fields)
}

/// Names of the `extern "C" __global__` entry points declared in `code`
/// (a plain text scan; enough for our self-contained sources).
pub fn declared_entries(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let marker = "__global__";
    let mut rest = code;
    while let Some(pos) = rest.find(marker) {
        let after = &rest[pos + marker.len()..];
        let before = &rest[..pos];
        // Require `extern "C"` on the same declaration (within the line).
        let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
        let is_extern_c = before[line_start..].contains("extern \"C\"");
        if is_extern_c {
            if let Some(name) = entry_name_after_global(after) {
                names.push(name);
            }
        }
        rest = after;
    }
    names
}

/// Attribute macros that sit between `__global__` and the kernel name and
/// carry their own parenthesised arguments.
const KERNEL_ATTRIBUTES: [&str; 3] = ["__launch_bounds__", "__cluster_dims__", "__maxnreg__"];

/// The kernel name in `void __launch_bounds__(256) name(args...)`: the last
/// identifier before the first `(` that does not open an attribute.
fn entry_name_after_global(text: &str) -> Option<String> {
    let mut cursor = 0;
    loop {
        let paren = cursor + text[cursor..].find('(')?;
        let head = text[cursor..paren].trim_end();
        let ident_len = head
            .chars()
            .rev()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .count();
        let ident = &head[head.len() - ident_len..];
        if KERNEL_ATTRIBUTES.contains(&ident) {
            let close = paren + text[paren..].find(')')?;
            cursor = close + 1;
            continue;
        }
        return if ident.is_empty() {
            None
        } else {
            Some(ident.to_string())
        };
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn u32_struct_fields_lists_members_and_refuses_other_types() {
        let code = "struct P {\n    u32 a;  // note\n    // comment\n\n    u32 b_2;\n};\n";
        assert_eq!(u32_struct_fields(code, "P"), Ok(vec!["a", "b_2"]));
        assert!(u32_struct_fields(code, "Q").is_err());
        let mixed = "struct P {\n    u32 a;\n    float b;\n};";
        let err = u32_struct_fields(mixed, "P").unwrap_err();
        assert!(err.contains("float b;"), "{err}");
        assert!(u32_struct_fields("struct P {\n    u32 a, b;\n};", "P").is_err());
    }

    use super::*;

    #[test]
    fn all_sources_have_distinct_names_and_are_listed_in_variants() {
        let mut names: Vec<_> = ALL.iter().map(|s| s.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        let table = variants();
        for s in ALL {
            assert!(
                table.iter().any(|(v, _)| v.name == s.name),
                "{} missing",
                s.name
            );
        }
    }

    #[test]
    fn flush_kernels_are_found_and_cold() {
        let entries = declared_entries(FLUSH.code);
        assert!(entries.contains(&"flush_l2".to_string()), "{entries:?}");
        assert!(
            entries.contains(&"flush_noop_probe".to_string()),
            "{entries:?}"
        );
        assert!(entries.iter().all(|e| !is_hot_entry(e)));
        assert!(is_hot_entry("radix_topk"));
    }

    #[test]
    fn declared_entries_skips_device_functions_and_non_extern() {
        let code = "__device__ int f(int x);\n__global__ void mangled(int*);\n\
                    extern \"C\" __global__ void __launch_bounds__(256) hot_a(float* x) {}\n\
                    extern \"C\" __global__ void hot_b (int n) {}\n";
        assert_eq!(declared_entries(code), vec!["hot_a", "hot_b"]);
    }

    #[test]
    fn every_cu_file_on_disk_is_listed() {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels"));
        let mut seen = 0;
        for folder in std::fs::read_dir(root).expect("kernels/ exists") {
            let folder = folder.unwrap().path();
            if !folder.is_dir() {
                continue;
            }
            for entry in std::fs::read_dir(&folder).unwrap() {
                let path = entry.unwrap().path();
                let name = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                if name.ends_with(".cu") {
                    seen += 1;
                    assert!(
                        by_name(&name).is_some(),
                        "kernels/{name} is not in gpu::sources::ALL"
                    );
                }
                if name.ends_with(".cuh") {
                    assert!(
                        HEADERS.iter().any(|(h, _)| *h == name),
                        "kernels/{name} is not in gpu::sources::HEADERS"
                    );
                }
            }
        }
        assert_eq!(seen, ALL.len(), "a listed source is missing on disk");
    }

    #[test]
    fn by_name_finds_sources() {
        assert_eq!(
            by_name("harness/flush.cu").map(|s| s.name),
            Some("harness/flush.cu")
        );
        assert!(by_name("nope.cu").is_none());
    }
}
