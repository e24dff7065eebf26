#!/usr/bin/env python3
"""PTX of kernel sources through libnvrtc alone (no GPU), to check that a
kernel refactor changes no code: dump before and after, then `cmp`.

    LD_LIBRARY_PATH=<dir of libnvrtc.so.13> scripts/ptx_dump.py OUT_DIR ss_main ss_reg ...

Compiles kernels/<name>.cu with the in-memory headers common.cuh and
ss_common.cuh for compute_90a, with the build's -std/--fmad options and no
-lineinfo (so source-line edits and comments do not show); extra -D defines
via PTX_DEFINES="A=1 B=2". Identical PTX means identical SASS.
"""
import ctypes
import ctypes.util
import os
import sys

KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernels")
HEADERS = ["common.cuh", "ss_common.cuh"]


def nvrtc():
    for name in ("libnvrtc.so.13", ctypes.util.find_library("nvrtc")):
        if name:
            try:
                return ctypes.CDLL(name)
            except OSError:
                pass
    sys.exit("libnvrtc not found: pip install nvidia-cuda-nvrtc==13.0.88 and put its lib on LD_LIBRARY_PATH")


def ptx(lib, name, defines):
    src = open(os.path.join(KERNELS, name + ".cu"), "rb").read()
    texts = [open(os.path.join(KERNELS, h), "rb").read() for h in HEADERS]
    prog = ctypes.c_void_p()
    n = len(HEADERS)
    rc = lib.nvrtcCreateProgram(ctypes.byref(prog), src, (name + ".cu").encode(), n,
                                (ctypes.c_char_p * n)(*texts),
                                (ctypes.c_char_p * n)(*[h.encode() for h in HEADERS]))
    if rc != 0:
        sys.exit(f"{name}: nvrtcCreateProgram {rc}")
    opts = [b"--gpu-architecture=compute_90a", b"-std=c++17", b"--fmad=true"]
    opts += [("-D" + d).encode() for d in defines]
    if lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts)) != 0:
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        sys.exit(f"{name}: compile failed\n{log.value.decode()}")
    size = ctypes.c_size_t()
    lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
    buf = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetPTX(prog, buf)
    return buf.value.decode()


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, names = sys.argv[1], sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    lib = nvrtc()
    defines = os.environ.get("PTX_DEFINES", "").split()
    for name in names:
        with open(os.path.join(out, name + ".ptx"), "w") as f:
            f.write(ptx(lib, name, defines))
        print(f"{out}/{name}.ptx")


if __name__ == "__main__":
    main()
