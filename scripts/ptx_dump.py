#!/usr/bin/env python3
"""PTX of kernel sources through libnvrtc alone (no GPU), to check that a
kernel refactor changes no code: dump before and after, then `cmp` (or, per
entry with renames ignored, scripts/ptx_entries_diff.py OLD.ptx NEW.ptx).

    LD_LIBRARY_PATH=<dir of libnvrtc.so.13> scripts/ptx_dump.py OUT_DIR ss/main ss/reg ...
    LD_LIBRARY_PATH=... scripts/ptx_dump.py --text-sizes ss/reg ...
    LD_LIBRARY_PATH=... scripts/ptx_dump.py --cubin OUT_DIR ss/reg ...

Compiles kernels/<name>.cu with the in-memory headers prim/common.cuh,
ss/common.cuh and ss/knobs.cuh for compute_90a, with the build's -std/--fmad options and no
-lineinfo (so source-line edits and comments do not show); extra -D defines
via PTX_DEFINES="A=1 B=2". Identical PTX means identical SASS.

--text-sizes compiles to an sm_90a cubin instead and prints each entry's
SASS instruction count (its `.text.<entry>` section size / 16 bytes): a
static count, for comparing two versions of a kernel without a disassembler
(it says nothing about how often each instruction runs).

--cubin writes OUT_DIR/<name>.cubin (sm_90a) instead, for a disassembler
without a GPU: `pip install nvidia-cuda-nvdisasm` gives nvdisasm
(`nvdisasm -c OUT_DIR/ss_reg.cubin`; each entry is its `.text.<entry>:` section;
`-fun` takes a function index, not a name).
"""
import ctypes
import ctypes.util
import os
import struct
import sys

KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernels")
HEADERS = ["prim/common.cuh", "ss/common.cuh", "ss/knobs.cuh"]
SASS_INSTRUCTION_BYTES = 16


def nvrtc():
    for name in ("libnvrtc.so.13", ctypes.util.find_library("nvrtc")):
        if name:
            try:
                return ctypes.CDLL(name)
            except OSError:
                pass
    sys.exit("libnvrtc not found: pip install nvidia-cuda-nvrtc==13.0.88 and put its lib on LD_LIBRARY_PATH")


def compiled(lib, name, defines, arch):
    """The compiled nvrtc program of kernels/<name>.cu for `arch`."""
    src = open(os.path.join(KERNELS, name + ".cu"), "rb").read()
    texts = [open(os.path.join(KERNELS, h), "rb").read() for h in HEADERS]
    prog = ctypes.c_void_p()
    n = len(HEADERS)
    rc = lib.nvrtcCreateProgram(ctypes.byref(prog), src, (name + ".cu").encode(), n,
                                (ctypes.c_char_p * n)(*texts),
                                (ctypes.c_char_p * n)(*[h.encode() for h in HEADERS]))
    if rc != 0:
        sys.exit(f"{name}: nvrtcCreateProgram {rc}")
    opts = [f"--gpu-architecture={arch}".encode(), b"-std=c++17", b"--fmad=true"]
    opts += [("-D" + d).encode() for d in defines]
    if lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts)) != 0:
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        sys.exit(f"{name}: compile failed\n{log.value.decode()}")
    return prog


def output(lib, prog, kind):
    """The program's PTX or CUBIN bytes (kind: "PTX" or "CUBIN")."""
    size = ctypes.c_size_t()
    getattr(lib, f"nvrtcGet{kind}Size")(prog, ctypes.byref(size))
    buf = ctypes.create_string_buffer(size.value)
    getattr(lib, f"nvrtcGet{kind}")(prog, buf)
    return buf.raw[:size.value]


def ptx(lib, name, defines):
    return output(lib, compiled(lib, name, defines, "compute_90a"), "PTX").rstrip(b"\0").decode()


def section_sizes(elf):
    """{section name: size} of a 64-bit little-endian ELF image."""
    shoff = struct.unpack_from("<Q", elf, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]
    sizes = {}
    for h in headers:
        start = names_at + h[0]
        sizes[elf[start:elf.index(b"\0", start)].decode()] = h[5]
    return sizes


def text_sizes(lib, name, defines):
    """{entry: SASS instruction count} of kernels/<name>.cu for sm_90a."""
    elf = output(lib, compiled(lib, name, defines, "sm_90a"), "CUBIN")
    return {sec[len(".text."):]: size // SASS_INSTRUCTION_BYTES
            for sec, size in section_sizes(elf).items() if sec.startswith(".text.")}


def main():
    args = sys.argv[1:]
    defines = os.environ.get("PTX_DEFINES", "").split()
    if args[:1] == ["--text-sizes"] and len(args) > 1:
        lib = nvrtc()
        for name in args[1:]:
            for entry, count in sorted(text_sizes(lib, name, defines).items()):
                print(f"{name}.cu {entry} {count}")
        return
    cubin = args[:1] == ["--cubin"]
    if cubin:
        args = args[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    out, names = args[0], args[1:]
    os.makedirs(out, exist_ok=True)
    lib = nvrtc()
    for name in names:
        if cubin:
            path = os.path.join(out, name.replace("/", "_") + ".cubin")
            with open(path, "wb") as f:
                f.write(output(lib, compiled(lib, name, defines, "sm_90a"), "CUBIN"))
        else:
            path = os.path.join(out, name.replace("/", "_") + ".ptx")
            with open(path, "w") as f:
                f.write(ptx(lib, name, defines))
        print(path)


if __name__ == "__main__":
    main()
