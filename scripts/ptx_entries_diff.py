#!/usr/bin/env python3
"""Which kernel entries of two PTX files (scripts/ptx_dump.py output) differ in code.

    scripts/ptx_entries_diff.py OLD.ptx NEW.ptx [ENTRY ...]

Each entry is compared with the device functions that follow it. Before the
comparison, what a build renames without changing code is made equal: branch
labels (numbered by the function's position in the file), call sequence
numbers, and mangled device function names (`_Z...`, numbered in their order
of first use within the entry's text, so a template parameter added to a
helper does not count). Prints `same` or
the count of differing lines per entry; exits 1 when a compared entry
differs or is missing on one side, else 0.
"""
import difflib
import re
import sys

ENTRY = re.compile(r"^(?:\.visible |\.weak )?\.entry\s+(\w+)", re.M)
MANGLED = re.compile(r"\b_Z\w+")


def normalized(chunk):
    index = {}
    chunk = MANGLED.sub(lambda m: f"func_{index.setdefault(m.group(0), len(index))}", chunk)
    chunk = re.sub(r"\$L__BB\d+_", "$L__BB_", chunk)
    return re.sub(r"callseq \d+", "callseq", chunk)


def entries(path):
    text = open(path).read()
    starts = [m.start() for m in ENTRY.finditer(text)] + [len(text)]
    return {ENTRY.match(text, a).group(1): normalized(text[a:b]).splitlines()
            for a, b in zip(starts, starts[1:])}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    old, new = entries(sys.argv[1]), entries(sys.argv[2])
    names = sys.argv[3:] or sorted(set(old) | set(new))
    differ = False
    for name in names:
        if name not in old or name not in new:
            print(f"{name} missing in {'OLD' if name not in old else 'NEW'}")
            differ = True
            continue
        lines = [l for l in difflib.unified_diff(old[name], new[name], lineterm="", n=0)
                 if l[:1] in "+-" and l[:3] not in ("+++", "---")]
        print(f"{name} {'same' if not lines else f'{len(lines)} lines differ'}")
        differ |= bool(lines)
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
