#!/usr/bin/env python3
"""Trim the flashinfer-python wheel to what `flashinfer.top_k` needs.

The GPU machine has no network, so the flashinfer peer's wheels travel with
the repository, and the whole transfer is limited to 64 MiB. The published
wheel is 62 MB (about 90 MB of Python and 330 MB of JIT sources and vendored
headers once unpacked); the top-K path needs a small part of it:

- Python: `flashinfer/__init__.py` is replaced by a stub that imports only the
  top-K API (`top_k`, `topk`, `TopKTieBreak`, `top_k_page_table_transform`,
  `top_k_ragged_transform`, `can_implement_filtered_topk`) and the version.
  Every other module is kept when the stub reaches it through a module-level
  import (guarded ones, inside `try` or `if`, included): the closure is
  computed here from the source, not listed by hand. The timed function,
  `flashinfer.topk.top_k`, is byte for byte the published one.
- JIT sources: the four translation units of `flashinfer/jit/topk.py`
  (`gen_topk_module`) and every header they include from the wheel's `data/`
  folders (`#include` followed through csrc, include, the vendored CCCL,
  CUTLASS and spdlog; conditionals ignored, so it over-approximates). Headers
  they take from the CUDA toolkit or from apache-tvm-ffi are not in this
  wheel.

The output is a normal wheel, `flashinfer_python-<version>-1topk-py3-none-any.whl`
(build tag `1topk`), with a fresh RECORD; `pip install --no-deps --target`
installs it. Every decision is printed, and `--list` writes the kept files.

Usage: trim_flashinfer.py WHEEL --out DIR [--list FILE]
"""

import argparse
import ast
import base64
import csv
import hashlib
import io
import os
import re
import sys
import zipfile

PACKAGE = "flashinfer"

# The stub that replaces flashinfer/__init__.py.
STUB_INIT = '''"""FlashInfer, trimmed to its top-K API by gvr-bench's scripts/trim_flashinfer.py.

The published `flashinfer/__init__.py` imports every kernel family of the
package; this stub imports only the top-K module. The top-K code itself is
unchanged.
"""

from .version import __version__ as __version__
from .version import __git_version__ as __git_version__
from .topk import TopKTieBreak as TopKTieBreak
from .topk import can_implement_filtered_topk as can_implement_filtered_topk
from .topk import top_k as top_k
from .topk import top_k_page_table_transform as top_k_page_table_transform
from .topk import top_k_ragged_transform as top_k_ragged_transform
from .topk import topk as topk

GVR_TRIMMED = True
'''

# Modules the stub imports (the roots of the closure), and `fi_trace`, which
# the `@flashinfer_api` decorator imports when it wraps `top_k` (without it
# the import warns that tracing is unavailable).
ROOTS = ["flashinfer", "flashinfer.topk", "flashinfer.version", "flashinfer.fi_trace"]

# Include search path inside the wheel's data folder, in the JIT's order
# (flashinfer/jit/cpp_ext.py: CCCL first, then include, csrc, CUTLASS, spdlog).
INCLUDE_DIRS = [
    "cccl/cub",
    "cccl/libcudacxx/include",
    "cccl/thrust",
    "include",
    "csrc",
    "cutlass/include",
    "cutlass/tools/util/include",
    "spdlog/include",
]

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def die(msg):
    print(f"trim_flashinfer: {msg}", file=sys.stderr)
    sys.exit(2)


class Tree:
    """The unpacked wheel as a {path: bytes} map (no files written)."""

    def __init__(self, wheel):
        with zipfile.ZipFile(wheel) as z:
            self.files = {i.filename: z.read(i) for i in z.infolist() if not i.is_dir()}

    def module_file(self, module):
        base = module.replace(".", "/")
        for cand in (f"{base}/__init__.py", f"{base}.py"):
            if cand in self.files:
                return cand
        return None


def imported_modules(source, module, is_package):
    """flashinfer modules a module imports at module level (in try/if/with
    blocks too, not inside functions)."""
    tree = ast.parse(source)
    package = module if is_package else module.rsplit(".", 1)[0]
    found = []

    def resolve(node):
        if node.level:
            parts = package.split(".")
            parts = parts[: len(parts) - (node.level - 1)]
            return ".".join(parts + ([node.module] if node.module else []))
        return node.module or ""

    def walk(nodes):
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(node, ast.Import):
                found.extend(a.name for a in node.names if a.name.startswith(PACKAGE))
            elif isinstance(node, ast.ImportFrom):
                target = resolve(node)
                if target.startswith(PACKAGE):
                    found.append(target)
                    found.extend(f"{target}.{a.name}" for a in node.names)
            for field in ("body", "orelse", "finalbody"):
                walk(getattr(node, field, []) or [])
            for handler in getattr(node, "handlers", []) or []:
                walk(handler.body)

    walk(tree.body)
    return found


def python_closure(tree):
    """Files of every module reachable from ROOTS (parents included)."""
    seen, files, todo = set(), set(), list(ROOTS)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        path = tree.module_file(module)
        if path is None:
            continue  # `from pkg import name` where name is not a module
        files.add(path)
        parts = module.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        todo.extend(imported_modules(tree.files[path], module, path.endswith("__init__.py")))
    return files


def jit_sources(tree):
    """The translation units `gen_topk_module` compiles (read from its source)."""
    path = "flashinfer/jit/topk.py"
    if path not in tree.files:
        die(f"{path} not in the wheel: not the expected flashinfer layout")
    names = re.findall(r'FLASHINFER_CSRC_DIR\s*/\s*"([^"]+)"', tree.files[path].decode())
    if not names:
        die(f"{path}: no FLASHINFER_CSRC_DIR sources found")
    return [f"flashinfer/data/csrc/{n}" for n in names]


def include_closure(tree, sources):
    data = "flashinfer/data"
    seen, todo, external = set(), list(sources), set()
    for src in sources:
        if src not in tree.files:
            die(f"{src} not in the wheel")
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        text = tree.files[path].decode(errors="replace")
        here = os.path.dirname(path)
        for name in INCLUDE_RE.findall(text):
            cands = [os.path.normpath(os.path.join(here, name))]
            cands += [f"{data}/{d}/{name}" for d in INCLUDE_DIRS]
            hit = next((c for c in cands if c in tree.files), None)
            if hit:
                todo.append(hit)
            else:
                external.add(name)
    return seen, external


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [path, f"sha256={digest}", str(len(data))]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("wheel", help="flashinfer_python-*.whl as published")
    p.add_argument("--out", required=True, help="directory for the trimmed wheel")
    p.add_argument("--list", help="write the kept paths here")
    args = p.parse_args(argv)

    tree = Tree(args.wheel)
    dist_info = sorted({f.split("/")[0] for f in tree.files if f.split("/")[0].endswith(".dist-info")})
    if len(dist_info) != 1:
        die(f"expected one .dist-info folder, found {dist_info}")
    dist_info = dist_info[0]
    version = dist_info[len("flashinfer_python-"): -len(".dist-info")]

    tree.files["flashinfer/__init__.py"] = STUB_INIT.encode()
    py_files = python_closure(tree)
    sources = jit_sources(tree)
    c_files, external = include_closure(tree, sources)
    meta = {f for f in tree.files if f.startswith(dist_info + "/") and not f.endswith("/RECORD")}
    keep = sorted(py_files | c_files | meta)

    out_name = f"flashinfer_python-{version}-1topk-py3-none-any.whl"
    os.makedirs(args.out, exist_ok=True)
    out_path = os.path.join(args.out, out_name)
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    def entry(path):
        # Fixed date and mode: the trimmed wheel is byte-reproducible.
        info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        return info

    with zipfile.ZipFile(out_path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for path in keep:
            z.writestr(entry(path), tree.files[path], compresslevel=9)
            writer.writerow(record_line(path, tree.files[path]))
        writer.writerow([f"{dist_info}/RECORD", "", ""])
        z.writestr(entry(f"{dist_info}/RECORD"), record.getvalue(), compresslevel=9)
    if args.list:
        with open(args.list, "w") as f:
            f.write("\n".join(keep) + "\n")

    raw = sum(len(tree.files[k]) for k in keep)
    print(f"flashinfer {version}: kept {len(py_files)} Python modules and {len(c_files)} JIT "
          f"sources/headers of {len(tree.files)} files ({raw / 1e6:.1f} MB unpacked)")
    print(f"JIT sources: {', '.join(os.path.basename(s) for s in sources)}")
    print(f"headers left to the CUDA toolkit / apache-tvm-ffi: {len(external)} names "
          f"(e.g. {', '.join(sorted(external)[:4])})")
    print(f"wrote {out_path} ({os.path.getsize(out_path) / 2**20:.2f} MiB)")


if __name__ == "__main__":
    main()
