//! scripts/trim_flashinfer.py on a fabricated flashinfer wheel: the stub
//! replaces `__init__.py`, the module closure keeps what the top-K path
//! imports at module level (guarded imports too) and drops the rest, the
//! include closure keeps the JIT sources' headers, and the output is a
//! byte-reproducible wheel with a RECORD. Standard-library Python only.

use crate::support::script::{python3_or_skip, script};

const MAKE_WHEEL: &str = r##"
import sys, zipfile
files = {
    "flashinfer/__init__.py": "from .attention import everything\n",
    "flashinfer/version.py": "__version__ = '0.7.2.post1'\n__git_version__ = 'x'\n",
    "flashinfer/topk.py": "from .jit.topk import gen_topk_module\nfrom .utils import helper\ntry:\n    from .optional import maybe\nexcept ImportError:\n    pass\ndef f():\n    from .attention import lazy\n",
    "flashinfer/fi_trace.py": "",
    "flashinfer/utils.py": "import torch\n",
    "flashinfer/optional.py": "",
    "flashinfer/attention.py": "import cutlass\n",
    "flashinfer/jit/__init__.py": "from .core import JitSpec\n",
    "flashinfer/jit/core.py": "",
    "flashinfer/jit/topk.py": 'def gen_topk_module():\n    return [jit_env.FLASHINFER_CSRC_DIR / "topk.cu"]\n',
    "flashinfer/data/csrc/topk.cu": '#include <flashinfer/topk.cuh>\n#include "tvm_ffi_utils.h"\n#include <cuda_runtime.h>\n',
    "flashinfer/data/csrc/tvm_ffi_utils.h": "#include <tvm/ffi/function.h>\n",
    "flashinfer/data/csrc/other.cu": "",
    "flashinfer/data/include/flashinfer/topk.cuh": '#include "utils.cuh"\n#include <cub/cub.cuh>\n',
    "flashinfer/data/include/flashinfer/utils.cuh": "",
    "flashinfer/data/include/flashinfer/attention.cuh": "",
    "flashinfer/data/cccl/cub/cub/cub.cuh": "",
    "flashinfer/data/cutlass/include/cutlass/cutlass.h": "",
    "flashinfer_python-0.7.2.post1.dist-info/METADATA": "Name: flashinfer-python\nVersion: 0.7.2.post1\n",
    "flashinfer_python-0.7.2.post1.dist-info/WHEEL": "Tag: py3-none-any\n",
    "flashinfer_python-0.7.2.post1.dist-info/RECORD": "",
}
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for name, text in files.items():
        z.writestr(name, text)
"##;

#[test]
fn trims_to_the_top_k_closure_reproducibly() {
    if !python3_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let wheel = dir
        .path()
        .join("flashinfer_python-0.7.2.post1-py3-none-any.whl");
    let made = std::process::Command::new("python3")
        .args(["-c", MAKE_WHEEL])
        .arg(&wheel)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let trimmed = |out: &str| {
        let list = dir.path().join(format!("{out}.txt"));
        let run = script("trim_flashinfer.py")
            .arg(&wheel)
            .arg("--out")
            .arg(dir.path().join(out))
            .arg("--list")
            .arg(&list)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let wheel = dir
            .path()
            .join(out)
            .join("flashinfer_python-0.7.2.post1-1topk-py3-none-any.whl");
        (
            std::fs::read(wheel).unwrap(),
            std::fs::read_to_string(list).unwrap(),
        )
    };
    let (first, kept) = trimmed("a");
    let kept: Vec<&str> = kept.lines().collect();
    for want in [
        "flashinfer/__init__.py",
        "flashinfer/topk.py",
        "flashinfer/version.py",
        "flashinfer/fi_trace.py",
        "flashinfer/utils.py",
        "flashinfer/optional.py",
        "flashinfer/jit/__init__.py",
        "flashinfer/jit/core.py",
        "flashinfer/jit/topk.py",
        "flashinfer/data/csrc/topk.cu",
        "flashinfer/data/csrc/tvm_ffi_utils.h",
        "flashinfer/data/include/flashinfer/topk.cuh",
        "flashinfer/data/include/flashinfer/utils.cuh",
        "flashinfer/data/cccl/cub/cub/cub.cuh",
        "flashinfer_python-0.7.2.post1.dist-info/METADATA",
    ] {
        assert!(kept.contains(&want), "{want} dropped: {kept:?}");
    }
    for gone in [
        "flashinfer/attention.py", // imported by the original __init__ and inside a function only
        "flashinfer/data/csrc/other.cu",
        "flashinfer/data/include/flashinfer/attention.cuh",
        "flashinfer/data/cutlass/include/cutlass/cutlass.h",
    ] {
        assert!(!kept.contains(&gone), "{gone} kept");
    }
    let (second, _) = trimmed("b");
    assert_eq!(first, second, "the trimmed wheel is byte-reproducible");
    // The stub and a RECORD that names every file.
    let check = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\n\
             init = z.read('flashinfer/__init__.py').decode()\n\
             assert 'from .topk import top_k as top_k' in init and 'attention' not in init, init\n\
             record = z.read('flashinfer_python-0.7.2.post1.dist-info/RECORD').decode()\n\
             assert all(n in record for n in z.namelist()), record\nprint('ok')",
        ])
        .arg(
            dir.path()
                .join("a/flashinfer_python-0.7.2.post1-1topk-py3-none-any.whl"),
        )
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&check.stdout).contains("ok"),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
}
