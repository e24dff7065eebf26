#!/usr/bin/env python3
"""Fail when two top-level modules of src/ import each other, directly or
through others (a cycle in the module graph), or when a module imports more
than ALLOWED says (topk: gpu and error only). Top-level modules are the
entries of src/lib.rs; an edge A -> B is any `crate::B` path (or `super::`
path that leaves A) in a file of A. Test modules (`#[cfg(test)]` blocks at
the end of a file, and files under a `tests` folder) are left out: tests may
reach across layers.

    python3 scripts/check_imports.py          # prints the layers, exit 1 on a cycle
    python3 scripts/check_imports.py --edges  # also prints every edge with a file
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")


def top_modules():
    text = open(os.path.join(ROOT, "lib.rs")).read()
    return re.findall(r"^pub mod (\w+);", text, re.M)


def non_test_code(text):
    """The file's text before its trailing `#[cfg(test)] mod tests` block."""
    cut = re.search(r"^#\[cfg\(test\)\]\s*\n(pub(\(crate\))? )?mod \w+\s*\{", text, re.M)
    return text[: cut.start()] if cut else text


def module_files(mod):
    single = os.path.join(ROOT, mod + ".rs")
    files = [single] if os.path.isfile(single) else []
    folder = os.path.join(ROOT, mod)
    for base, _, names in os.walk(folder):
        files += [os.path.join(base, n) for n in names if n.endswith(".rs")]
    return files


def edges(mods):
    out = {}
    for mod in mods:
        for path in module_files(mod):
            code = re.sub(r"//[^\n]*", "", non_test_code(open(path).read()))
            for target in set(re.findall(r"\bcrate::(\w+)", code)):
                if target in mods and target != mod:
                    out.setdefault((mod, target), os.path.relpath(path, os.path.join(ROOT, "..")))
    return out


# Modules whose imports are restricted beyond "no cycle": the product's
# self-sampling top-K stands on the device layer alone.
ALLOWED = {"topk": {"gpu", "error"}}


def find_cycle(mods, graph):
    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in mods:
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def main():
    mods = top_modules()
    found = edges(mods)
    graph = {}
    for (a, b) in found:
        graph.setdefault(a, set()).add(b)
    if "--edges" in sys.argv:
        for (a, b), path in sorted(found.items()):
            print(f"{a} -> {b}  ({path})")
    for mod, allowed in ALLOWED.items():
        extra = sorted(graph.get(mod, set()) - allowed)
        if extra:
            where = "; ".join(f"{mod}->{b} in {found[(mod, b)]}" for b in extra)
            sys.exit(f"{mod} may import only {', '.join(sorted(allowed))}: {where}")
    cycle = find_cycle(mods, graph)
    if cycle:
        steps = " -> ".join(cycle)
        where = "; ".join(f"{a}->{b} in {found[(a, b)]}" for a, b in zip(cycle, cycle[1:]))
        sys.exit(f"import cycle: {steps}\n  {where}")
    # Layers: a module's depth is one more than the deepest module it imports.
    depth = {}

    def level(m):
        if m not in depth:
            depth[m] = 1 + max((level(n) for n in graph.get(m, ())), default=-1)
        return depth[m]

    for m in mods:
        level(m)
    for d in range(max(depth.values()) + 1):
        print(f"layer {d}: {' '.join(sorted(m for m in mods if depth[m] == d))}")


if __name__ == "__main__":
    main()
