#!/usr/bin/env python3
"""torch.topk as a peer arm for gvr-bench.

Reads a gvr-bench capture set (manifest.json + one safetensors file per cell),
forms batches exactly as `grid::Batch::form` does (replicate: the last step's
row B times; independent: row r takes step r mod S), times
`torch.topk(x, K, dim=-1, sorted=False)` under the gvr-bench protocol
(METHOD.md §3: 10 warm-up calls, 5 warm reps, 10 cold reps each preceded by a
512 MiB write outside the timed window), checks every row for tie-aware
exactness against a numpy reference (METHOD.md §4), and appends one
CaseRecord JSON line per case (same fields as src/run/record.rs) to --out.

Timing (recorded in each record's `method`):
  cuda-events   (default) CUDA events around the eager call, recorded while
                the GPU is still busy with the flush (cold) or a
                torch.cuda._sleep spin (warm), so Python/launch overhead is
                hidden behind it. Gaps between torch's kernels are counted.
  graph-replay  (--graph) the topk call captured once in a CUDA graph and
                replayed; same busy-ahead event bracketing.

What torch sees: a contiguous [B, n_max] copy of the batch whose pad
[n_r, n_max) is -inf (built outside the timed window; torch scans whole rows,
as FlashInfer does upstream). Batches with a row shorter than K are reported
`unsupported` (torch.topk cannot return K indices from fewer values and the
production short-row contract, indices then -1, is not torch's).
"""

import argparse
import fnmatch
import json
import os
import sys
import time

import numpy as np

FLUSH_BYTES = 512 << 20
WARMUP, WARM_REPS, COLD_REPS = 10, 5, 10
# Spin ahead of a warm rep so the start event fires when the GPU frees up.
WARM_SPIN_CYCLES = 60_000  # ~30 us at ~2 GHz


def die(msg):
    print(f"peer_torch: {msg}", file=sys.stderr)
    sys.exit(2)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--captures", required=True, help="capture set directory (manifest.json)")
    p.add_argument("--out", required=True, help="results.jsonl to append to")
    p.add_argument("--cells", default="*", help="glob over cell ids (default: all)")
    p.add_argument("--batches", default="1,2,4,8,16,32,64,128,256,512,1024",
                   help="comma-separated batch sizes")
    p.add_argument("--rows", choices=["replicate", "independent"], default="replicate",
                   help="batch formation mode (as gvr-bench --rows)")
    p.add_argument("--limit", type=int, default=0, help="stop after N cases (0 = no limit)")
    p.add_argument("--cases-file", help="file with one case id per line (e.g. v4_flash_64k_L02@b16)")
    p.add_argument("--graph", action="store_true", help="time CUDA-graph replay instead of eager calls")
    p.add_argument("--device", type=int, default=0)
    return p.parse_args()


def load_manifest(captures):
    path = os.path.join(captures, "manifest.json")
    try:
        with open(path) as f:
            manifest = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        die(f"{path}: manifest: {e}")
    cells = manifest.get("cells")
    if not isinstance(cells, list):
        die(f"{path}: cells: missing or not a list")
    for i, c in enumerate(cells):
        for key in ("id", "model", "isl", "layer", "n", "k", "cr", "next_n", "file", "steps", "npad"):
            if key not in c:
                die(f"{path}: cells[{i}].{key}: missing")
    return cells


def load_cell(captures, entry):
    from safetensors import safe_open

    path = os.path.join(captures, entry["file"])
    try:
        with safe_open(path, framework="np") as f:
            meta = f.metadata() or {}
            logits = f.get_tensor("logits")
            n = f.get_tensor("n")
            hints = f.get_tensor("hints")
    except Exception as e:  # safetensors raises several types
        die(f"{path}: safetensors: {e}")
    steps, npad, k = int(entry["steps"]), int(entry["npad"]), int(entry["k"])
    if logits.dtype != np.float32 or logits.shape != (steps, npad):
        die(f"{path}: logits: expected f32 [{steps}, {npad}], got {logits.dtype} {list(logits.shape)}")
    if n.shape != (steps,):
        die(f"{path}: n: expected [{steps}], got {list(n.shape)}")
    if hints.shape != (steps, k):
        die(f"{path}: hints: expected [{steps}, {k}], got {list(hints.shape)}")
    if (n < 0).any() or (n > npad).any():
        die(f"{path}: n: values outside [0, {npad}]")
    pad_value = float(meta.get("pad_value", "-3.4028235e38"))
    return logits, n.astype(np.int64), pad_value


def form_rows(n_steps, b, mode):
    """Step index of each batch row (grid::Batch::form)."""
    if mode == "replicate":
        return [n_steps - 1] * b
    return [r % n_steps for r in range(b)]


def sorted_values_desc(values):
    """Descending sort with -0.0 normalised to +0.0 (adding +0.0 does it)."""
    v = values.astype(np.float32) + np.float32(0.0)
    return np.sort(v)[::-1]


def reference_topk_values(row, k):
    """The K largest values of `row` (sorted descending, signed zeros normalised)."""
    if k >= row.size:
        return sorted_values_desc(row)
    part = np.partition(row, row.size - k)[row.size - k:]
    return sorted_values_desc(part)


def check_exact(out, logits, n, steps_of_row, k):
    """Tie-aware exactness of `out` ([B, K] int) row by row (METHOD.md §4)."""
    ref_cache = {}
    for r, s in enumerate(steps_of_row):
        idx = out[r]
        nr = int(n[s])
        if (idx < 0).any() or (idx >= nr).any():
            bad = int(idx[(idx < 0) | (idx >= nr)][0])
            return {"status": "wrong", "row": r, "reason": f"index {bad} outside [0, {nr})"}
        if np.unique(idx).size != k:
            return {"status": "wrong", "row": r, "reason": "duplicate indices"}
        if s not in ref_cache:
            ref_cache[s] = reference_topk_values(logits[s, :nr], k)
        got = sorted_values_desc(logits[s, idx])
        want = ref_cache[s]
        if not np.array_equal(got.view(np.uint32), want.view(np.uint32)):
            first = int(np.nonzero(got.view(np.uint32) != want.view(np.uint32))[0][0])
            return {"status": "wrong", "row": r,
                    "reason": f"value rank {first}: got {float(got[first])!r}, want {float(want[first])!r}"}
    return {"status": "exact"}


class Bench:
    def __init__(self, torch, device, graph):
        self.torch = torch
        self.device = device
        self.graph = graph
        self.flush_buf = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device=device)
        self.flush_salt = 0
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)

    def flush(self):
        # A full write of 512 MiB (~8x the H200 L2) evicts the arm's inputs.
        self.flush_salt += 1
        self.flush_buf.fill_(self.flush_salt)

    def measure(self, x, k):
        torch = self.torch
        call = lambda: torch.topk(x, k, dim=-1, largest=True, sorted=False)  # noqa: E731
        for _ in range(WARMUP):
            result = call()
        torch.cuda.synchronize()
        if self.graph:
            graph = torch.cuda.CUDAGraph()
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                call()  # warm on the capture stream
            torch.cuda.current_stream().wait_stream(stream)
            with torch.cuda.graph(graph):
                result = call()
            run = graph.replay
        else:
            run = None

        def rep(cold):
            nonlocal result
            if cold:
                self.flush()
            else:
                torch.cuda._sleep(WARM_SPIN_CYCLES)
            self.start.record()
            if run is not None:
                run()
            else:
                result = call()
            self.end.record()
            self.end.synchronize()
            return self.start.elapsed_time(self.end) * 1e3  # ms -> us

        warm = [rep(False) for _ in range(WARM_REPS)]
        cold = [rep(True) for _ in range(COLD_REPS)]
        indices = result[1].to(torch.int64).cpu().numpy()
        return warm, cold, indices


def main():
    args = parse_args()
    try:
        batches = [int(b) for b in args.batches.split(",") if b.strip()]
    except ValueError:
        die(f"--batches: not a list of integers: {args.batches!r}")
    if not batches or min(batches) < 1:
        die("--batches: batch sizes must be >= 1")
    wanted_cases = None
    if args.cases_file:
        try:
            with open(args.cases_file) as f:
                wanted_cases = [l.strip() for l in f if l.strip() and not l.startswith("#")]
        except OSError as e:
            die(f"{args.cases_file}: {e}")

    cells = load_manifest(args.captures)
    by_id = {c["id"]: c for c in cells}
    plan = []  # (cell entry, b)
    if wanted_cases is not None:
        for case in wanted_cases:
            cell_id, sep, b = case.rpartition("@b")
            if not sep or cell_id not in by_id or not b.isdigit() or int(b) < 1:
                die(f"{args.cases_file}: case {case!r}: unknown cell or bad batch size")
            plan.append((by_id[cell_id], int(b)))
    else:
        for c in cells:
            if fnmatch.fnmatchcase(c["id"], args.cells):
                plan.extend((c, b) for b in batches)
    if args.limit > 0:
        plan = plan[: args.limit]
    if not plan:
        die("no case selected")

    import torch

    if not torch.cuda.is_available():
        print("peer_torch: CUDA is not available to torch", file=sys.stderr)
        sys.exit(3)
    torch.cuda.set_device(args.device)
    device = torch.device("cuda", args.device)
    bench = Bench(torch, device, args.graph)
    method = "graph-replay" if args.graph else "cuda-events"
    variant = f"torch-{torch.__version__} sorted=False"

    loaded_id, loaded = None, None
    with open(args.out, "a") as out_file:
        for entry, b in plan:
            if entry["id"] != loaded_id:
                loaded_id, loaded = entry["id"], load_cell(args.captures, entry)
            logits, n, pad_value = loaded
            k = int(entry["k"])
            steps_of_row = form_rows(logits.shape[0], b, args.rows)
            row_n = np.array([n[s] for s in steps_of_row], dtype=np.int64)
            record = {
                "case": f"{entry['id']}@b{b}", "cell": entry["id"], "model": entry["model"],
                "isl": entry["isl"], "layer": int(entry["layer"]), "n": int(entry["n"]), "k": k,
                "cr": int(entry["cr"]), "next_n": int(entry["next_n"]), "b": b, "rows": args.rows,
                "arm": "torch", "variant": variant, "cold_us": [], "warm_us": [], "method": None,
                "bytes": int(4 * (row_n.sum() + b * k)),
            }
            started = time.time()
            if row_n.min() < k:
                record["exact"] = {"status": "unsupported",
                                   "reason": f"a row has n = {int(row_n.min())} < K = {k}"}
            else:
                n_max = int(row_n.max())
                host = np.full((b, n_max), -np.inf, dtype=np.float32)
                for r, s in enumerate(steps_of_row):
                    host[r, : n[s]] = logits[s, : n[s]]
                x = torch.from_numpy(host).to(device).contiguous()
                try:
                    warm, cold, indices = bench.measure(x, k)
                    record.update(cold_us=cold, warm_us=warm, method=method)
                    record["exact"] = check_exact(indices, logits, n, steps_of_row, k)
                except RuntimeError as e:  # CUDA errors surface as RuntimeError
                    record["exact"] = {"status": "failed", "message": str(e)}
                del x
            out_file.write(json.dumps(record) + "\n")
            out_file.flush()
            status = record["exact"]["status"]
            mean = sum(record["cold_us"]) / len(record["cold_us"]) if record["cold_us"] else float("nan")
            print(f"{record['case']}: {status}, cold mean {mean:.2f} us ({time.time() - started:.1f} s)")


if __name__ == "__main__":
    main()
