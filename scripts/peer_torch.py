#!/usr/bin/env python3
"""torch.topk as a peer arm for gvr-bench.

Reads a gvr-bench capture set (manifest.json + one safetensors file per cell),
forms batches exactly as `grid::Batch::form` does (replicate: the last step's
row B times; independent: row r takes step r mod S), times
`torch.topk(x, K, dim=-1, sorted=False)` under the gvr-bench protocol
(docs/method.md, "Timing a case": warm-up calls, warm reps, cold reps each preceded by a
write of --flush-bytes outside the timed window), checks every row for
tie-aware exactness (docs/method.md, "What exact means"), and appends one CaseRecord JSON line
per case (same fields as src/run/record.rs) to --out.
`gvr-bench grid --peer torch` runs this on the run's own cases and joins the
records into the run.

Timing (recorded in each record's `method`):
  graph-replay  (--graph) the topk call captured once per case in a CUDA graph
                and replayed; events are recorded while the GPU is still busy
                with the flush (cold) or a spin kernel (warm), so no host or
                launch time is inside the window.
  cuda-events   (default) the same bracketing around eager calls; gaps between
                torch's kernels are counted.

What torch sees: a contiguous [B, n_max] batch whose pad [n_r, n_max) is -inf
(torch scans whole rows, as FlashInfer does upstream). Batches with a row
shorter than K are reported `unsupported` (torch.topk cannot return K indices
from fewer values).

Speed (why it is fast): each cell is uploaded once and every batch size is
built from it on the GPU; one flush buffer and one set of events serve every
case; each case's graph is captured with capture_begin/end into its own private
memory pool, released with the graph (a pool handle shared across deleted
graphs trips a CUDACachingAllocator assert in torch 2.11; the
`torch.cuda.graph` context manager would also run gc.collect and empty_cache
on every capture); the exactness check runs on the GPU; the host waits once
per case.

--backend numpy is a host stand-in (argpartition, wall clock, method
host-clock) that exercises the same plumbing without a GPU, for tests only.
--dry-run lists the selected cases and exits.
"""

import argparse
import fnmatch
import json
import os
import sys
import time

import numpy as np

# Spin ahead of a warm rep so the start event fires when the GPU frees up.
WARM_SPIN_CYCLES = 60_000  # ~30 us at ~2 GHz
ARM = "torch"


def die(msg, code=2):
    print(f"peer_torch: {msg}", file=sys.stderr)
    sys.exit(code)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--captures", required=True, help="capture set directory (manifest.json)")
    p.add_argument("--out", help="results.jsonl to append to (required unless --dry-run)")
    p.add_argument("--cells", default="*", help="glob over cell ids (default: all)")
    p.add_argument("--batches", default="1,2,4,8,16,32,64,128,256,512,1024",
                   help="comma-separated batch sizes")
    p.add_argument("--rows", choices=["replicate", "independent"], default="replicate",
                   help="batch formation mode (as gvr-bench --rows)")
    p.add_argument("--limit", type=int, default=0, help="stop after N cases (0 = no limit)")
    p.add_argument("--cases-file", help="file with one case id per line (e.g. v4_flash_64k_L02@b16)")
    p.add_argument("--graph", action="store_true", help="time CUDA-graph replay instead of eager calls")
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--warmup", type=int, default=10, help="untimed calls before measuring")
    p.add_argument("--warm-reps", type=int, default=5, help="timed reps with a warm L2")
    p.add_argument("--cold-reps", type=int, default=10, help="timed reps after an L2 flush")
    p.add_argument("--flush-bytes", type=int, default=512 << 20, help="size of the L2 flush write")
    p.add_argument("--backend", choices=["torch", "numpy"], default="torch",
                   help="numpy: host stand-in for testing the plumbing (not a peer)")
    p.add_argument("--dry-run", action="store_true", help="list the selected cases and exit")
    args = p.parse_args(argv)
    if not args.dry_run and not args.out:
        p.error("--out is required unless --dry-run")
    if min(args.warmup, args.warm_reps) < 0 or args.cold_reps < 1 or args.flush_bytes < 4:
        p.error("--warmup/--warm-reps must be >= 0, --cold-reps >= 1, --flush-bytes >= 4")
    return args


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


def parse_case(case):
    """`<cell>@b<B>` -> (cell id, B), or None when malformed."""
    cell_id, sep, b = case.rpartition("@b")
    if not sep or not cell_id or not b.isdigit() or int(b) < 1:
        return None
    return cell_id, int(b)


def plan_cases(cells, wanted_cases, cell_glob, batches, limit):
    """[(cell entry, B)] grouped by cell (first-appearance order) so every
    cell is loaded once; within a cell the given order is kept."""
    by_id = {c["id"]: c for c in cells}
    plan = []
    if wanted_cases is not None:
        for case in wanted_cases:
            parsed = parse_case(case)
            if parsed is None or parsed[0] not in by_id:
                die(f"case {case!r}: unknown cell or bad batch size")
            plan.append((by_id[parsed[0]], parsed[1]))
    else:
        for c in cells:
            if fnmatch.fnmatchcase(c["id"], cell_glob):
                plan.extend((c, b) for b in batches)
    if limit > 0:
        plan = plan[:limit]
    first = {}
    for i, (entry, _) in enumerate(plan):
        first.setdefault(entry["id"], i)
    return sorted(plan, key=lambda eb: first[eb[0]["id"]])  # stable: keeps order inside a cell


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


def build_batch(logits, n, steps_of_row):
    """What torch sees, on the host: [B, n_max] with -inf past each row's n."""
    n_max = int(max(n[s] for s in steps_of_row))
    host = np.full((len(steps_of_row), n_max), -np.inf, dtype=np.float32)
    for r, s in enumerate(steps_of_row):
        host[r, : n[s]] = logits[s, : n[s]]
    return host


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


def check_exact(out, logits, n, steps_of_row, k, rows=None):
    """Tie-aware exactness of `out` ([B, K] int) row by row (docs/method.md, "What exact means").
    `rows` limits the check to those row indices (the GPU check names them)."""
    ref_cache = {}
    for r in (range(len(steps_of_row)) if rows is None else rows):
        s = steps_of_row[r]
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


def base_record(entry, b, rows_mode, row_n, variant):
    k = int(entry["k"])
    return {
        "case": f"{entry['id']}@b{b}", "cell": entry["id"], "model": entry["model"],
        "isl": entry["isl"], "layer": int(entry["layer"]), "n": int(entry["n"]), "k": k,
        "cr": int(entry["cr"]), "next_n": int(entry["next_n"]), "b": b, "rows": rows_mode,
        "arm": ARM, "variant": variant, "cold_us": [], "warm_us": [], "method": None,
        "exact": {"status": "unsupported", "reason": "not run"},
        "bytes": int(4 * (int(np.sum(row_n)) + b * k)),
    }


class NumpyBench:
    """Host stand-in with the torch bench's interface (tests only)."""

    method = "host-clock"

    def __init__(self, protocol):
        self.protocol = protocol
        self.variant = f"numpy-{np.__version__} stand-in (not torch)"

    def load(self, logits, n, k):
        self.logits, self.n, self.k = logits, n, k

    def run_case(self, steps_of_row):
        x = build_batch(self.logits, self.n, steps_of_row)
        k = self.k

        def call():
            return np.argpartition(x, x.shape[1] - k, axis=1)[:, x.shape[1] - k:]

        for _ in range(self.protocol["warmup"]):
            call()
        times = []
        for _ in range(self.protocol["warm_reps"] + self.protocol["cold_reps"]):
            t0 = time.perf_counter()
            out = call()
            times.append((time.perf_counter() - t0) * 1e6)
        warm = times[: self.protocol["warm_reps"]]
        cold = times[self.protocol["warm_reps"]:]
        return warm, cold, check_exact(out, self.logits, self.n, steps_of_row, k)


class TorchBench:
    def __init__(self, torch, device, graph, protocol):
        self.torch = torch
        self.device = device
        self.graph = graph
        self.protocol = protocol
        self.method = "graph-replay" if graph else "cuda-events"
        self.variant = f"torch-{torch.__version__} sorted=False"
        self.flush_buf = torch.empty(protocol["flush_bytes"] // 4, dtype=torch.int32, device=device)
        self.flush_salt = 0
        reps = protocol["warm_reps"] + protocol["cold_reps"]
        self.events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                       for _ in range(reps)]
        self.side = torch.cuda.Stream(device=device)

    def flush(self):
        # A full write of the buffer (512 MiB ~ 8x the H200 L2) evicts the inputs.
        self.flush_salt += 1
        self.flush_buf.fill_(self.flush_salt)

    def load(self, logits, n, k):
        """Upload a cell once: rows with -inf past n, per-step reference values."""
        torch = self.torch
        self.k = k
        self.n_host = n
        cell = torch.from_numpy(np.ascontiguousarray(logits)).to(self.device)
        steps, npad = cell.shape
        col = torch.arange(npad, device=self.device)
        self.n = torch.from_numpy(n).to(self.device)
        self.cell = cell.masked_fill(col[None, :] >= self.n[:, None], float("-inf"))
        # Reference: the K largest values of each step by a full sort (an
        # algorithm independent of topk), signed zeros normalised.
        ref = torch.zeros((steps, k), dtype=torch.float32, device=self.device)
        for s in range(steps):
            if n[s] >= k:
                ref[s] = torch.sort(self.cell[s, : int(n[s])] + 0.0, descending=True).values[:k]
        self.ref = ref

    def run_case(self, steps_of_row):
        torch = self.torch
        p = self.protocol
        k = self.k
        rows = torch.tensor(steps_of_row, dtype=torch.int64, device=self.device)
        n_max = int(max(self.n_host[s] for s in steps_of_row))
        x = self.cell[:, :n_max].index_select(0, rows)  # contiguous [B, n_max]

        def call():
            return torch.topk(x, k, dim=-1, largest=True, sorted=False)

        graph = None
        if self.graph:
            current = torch.cuda.current_stream()
            self.side.wait_stream(current)
            with torch.cuda.stream(self.side):
                call()  # lazy initialisation happens outside the capture
                graph = torch.cuda.CUDAGraph()
                graph.capture_begin()  # private pool, released with the graph
                try:
                    result = call()
                finally:
                    # Leave capture mode even if topk failed inside it, so
                    # the next case does not inherit a capturing stream.
                    graph.capture_end()
            current.wait_stream(self.side)
            run = graph.replay
        else:
            result = None
            run = call
        for _ in range(p["warmup"]):
            out = run()
            result = out if graph is None else result
        for i in range(p["warm_reps"] + p["cold_reps"]):
            cold = i >= p["warm_reps"]
            if cold:
                self.flush()
            else:
                torch.cuda._sleep(WARM_SPIN_CYCLES)
            start, end = self.events[i]
            start.record()
            out = run()
            end.record()
            result = out if graph is None else result
        idx = result[1]
        bad = self.bad_rows(x, idx, rows)  # enqueued behind the reps
        self.events[-1][1].synchronize()  # the one host wait of the case
        times = [s.elapsed_time(e) * 1e3 for s, e in self.events]  # ms -> us
        bad_rows = bad.nonzero().flatten().tolist()
        if bad_rows:
            exact = check_exact(idx.cpu().numpy(), self.cell.cpu().numpy(), self.n_host,
                                steps_of_row, k, rows=bad_rows[:1])
            if exact["status"] == "exact":  # GPU and host checks disagree: say so
                exact = {"status": "wrong", "row": bad_rows[0], "reason": "GPU check failed"}
        else:
            exact = {"status": "exact"}
        del graph, x
        return times[: p["warm_reps"]], times[p["warm_reps"]:], exact

    def bad_rows(self, x, idx, rows):
        """Boolean [B]: row fails index range, distinctness or the value multiset."""
        torch = self.torch
        n_rows = self.n.index_select(0, rows)
        out_of_range = ((idx < 0) | (idx >= n_rows[:, None])).any(dim=1)
        sorted_idx = idx.sort(dim=1).values
        duplicate = (sorted_idx[:, 1:] == sorted_idx[:, :-1]).any(dim=1)
        safe = idx.clamp(0, x.shape[1] - 1)
        got = torch.sort(x.gather(1, safe) + 0.0, dim=1, descending=True).values
        want = self.ref.index_select(0, rows)
        differ = (got.view(torch.int32) != want.view(torch.int32)).any(dim=1)
        return out_of_range | duplicate | differ


def repair_torn_tail(path):
    """Cut a partial last line (a peer killed mid-write) so the next record
    starts on its own line (as results.rs does for results.jsonl)."""
    try:
        with open(path, "rb+") as f:
            data = f.read()
            if data and not data.endswith(b"\n"):
                f.truncate(data.rfind(b"\n") + 1)
    except FileNotFoundError:
        pass


def make_bench(args, protocol):
    if args.backend == "numpy":
        return NumpyBench(protocol)
    try:
        import torch
    except ImportError as e:
        die(f"torch is not importable ({e}); install torch or run gvr-bench grid without --peer")
    if not torch.cuda.is_available():
        die("CUDA is not available to torch", code=3)
    torch.cuda.set_device(args.device)
    return TorchBench(torch, torch.device("cuda", args.device), args.graph, protocol)


def main(argv=None):
    args = parse_args(argv)
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
    plan = plan_cases(cells, wanted_cases, args.cells, batches, args.limit)
    if args.dry_run:
        for entry, b in plan:
            print(f"{entry['id']}@b{b}")
        return
    if not plan:
        die("no case selected")

    protocol = {"warmup": args.warmup, "warm_reps": args.warm_reps,
                "cold_reps": args.cold_reps, "flush_bytes": args.flush_bytes}
    bench = make_bench(args, protocol)
    repair_torn_tail(args.out)
    started = time.time()
    loaded_id, loaded = None, None
    counts = {}
    with open(args.out, "a") as out_file:
        for done, (entry, b) in enumerate(plan, 1):
            k = int(entry["k"])
            if entry["id"] != loaded_id:
                loaded_id, loaded = entry["id"], load_cell(args.captures, entry)
                bench.load(loaded[0], loaded[1], k)
            logits, n, _pad_value = loaded
            steps_of_row = form_rows(logits.shape[0], b, args.rows)
            row_n = np.array([n[s] for s in steps_of_row], dtype=np.int64)
            record = base_record(entry, b, args.rows, row_n, bench.variant)
            if row_n.min() < k:
                record["exact"] = {"status": "unsupported",
                                   "reason": f"a row has n = {int(row_n.min())} < K = {k}"}
            else:
                try:
                    warm, cold, exact = bench.run_case(steps_of_row)
                    record.update(cold_us=cold, warm_us=warm, method=bench.method, exact=exact)
                except RuntimeError as e:  # CUDA errors surface as RuntimeError
                    record["exact"] = {"status": "failed", "message": str(e)}
            out_file.write(json.dumps(record) + "\n")
            out_file.flush()
            status = record["exact"]["status"]
            counts[status] = counts.get(status, 0) + 1
            if status not in ("exact", "unsupported") or done % 500 == 0 or done == len(plan):
                elapsed = time.time() - started
                print(f"{done}/{len(plan)} cases in {elapsed:.1f} s ({1e3 * elapsed / done:.2f} ms/case) "
                      f"{counts}; last {record['case']}: {status}", flush=True)


if __name__ == "__main__":
    main()
