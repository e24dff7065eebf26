#!/usr/bin/env python3
"""Library top-K peers for gvr-bench: torch.topk and flashinfer.top_k.

Reads a gvr-bench capture set (manifest.json + one safetensors file per cell),
forms batches exactly as `grid::Batch::form` does (replicate: the last step's
row B times; independent: row r takes step r mod S), times each arm of the
chosen peer under the gvr-bench protocol (docs/method.md, "Timing a case": warm-up calls,
warm reps, cold reps each preceded by a write of --flush-bytes outside the
timed window), checks every row for tie-aware exactness (docs/method.md,
"What 'exact' means"), and appends one CaseRecord JSON line per (case, arm) to --out.
`gvr-bench grid --peer torch,flashinfer` runs this on the run's own cases and
joins the records into the run.

Peers and their arms:
  torch       torch     torch.topk(x, K, dim=-1, sorted=False)
  flashinfer  fi-auto   flashinfer.top_k(x, K, sorted=False), its own dispatch
              fi-cub    the same with FLASHINFER_TOPK_ALGO=cub (CUB DeviceBatchedTopK)
              fi-filtered        FLASHINFER_TOPK_ALGO=filtered (FilteredTopK)
              fi-radix  FLASHINFER_TOPK_ALGO=multi_cta (RadixTopKMultiCTA:
                        one or several CTAs per row)
FlashInfer 0.7.2.post1 offers these three backends on sm_90 for fp32 input;
its fourth, the clusters kernel, is dispatched on sm_100 only. The variable is
read by flashinfer at every call (Python and C++), so one process serves every
arm. Each fi record's variant starts with the backend that ran (read off the
kernel names under --timing cupti, else predicted by the dispatcher's rules,
and it says which), so `report` gives fi-auto a table per backend. The
module is built by flashinfer's JIT (nvcc) once, before anything is timed;
that time is written to --meta, not to any record.

Timing (--timing; recorded in each record's `method`):
  cupti         (default) kernel time: eager calls, each rep bracketed by two
                marker kernels (torch.cuda._sleep(0)); torch.profiler (Kineto,
                which reads CUPTI activity records, as gvr-bench's own timer
                does) gives every GPU activity's device start and end, and a
                rep's time is the sum of the durations of the kernels, memsets
                and copies between its markers: gaps and launch overhead are
                not counted. One profiler session per cell.
  graph-replay  the call captured once per (case, arm) in a CUDA graph and
                replayed; events are recorded while the GPU is still busy
                with the flush (cold) or a spin kernel (warm), so no host or
                launch time is inside the window.
  cuda-events   the same bracketing around eager calls; gaps between the
                call's kernels are counted.
`--graph` is kept as another spelling of `--timing graph-replay`.

What a peer sees: a contiguous [B, n_max] fp32 batch whose pad [n_r, n_max)
is -inf (both libraries scan whole rows). Batches with a row shorter than K
are reported `unsupported` (neither can return K indices from fewer values).

Speed: each cell is uploaded once and every batch size is built from it on
the GPU; one flush buffer and one set of events serve every case; each
graph is captured with capture_begin/end into its own private memory pool,
released with the graph (a pool handle shared across deleted graphs trips a
CUDACachingAllocator assert in torch 2.11); the exactness check runs on the
GPU; the host waits once per (case, arm).

--backend numpy is a host stand-in (argpartition, wall clock, method
host-clock) with the chosen peer's arm names; it exercises the same plumbing
without a GPU, for tests only. --dry-run lists the selected cases and exits.
"""

import argparse
import bisect
import fnmatch
import json
import os
import sys
import time

import numpy as np

# Spin ahead of a warm rep so the start event fires when the GPU frees up.
WARM_SPIN_CYCLES = 60_000  # ~30 us at ~2 GHz

PEER_ARMS = {
    "torch": ["torch"],
    "flashinfer": ["fi-auto", "fi-cub", "fi-filtered", "fi-radix"],
}
# FLASHINFER_TOPK_ALGO per flashinfer arm (None: unset, flashinfer decides).
FI_ALGO = {"fi-auto": None, "fi-cub": "cub", "fi-filtered": "filtered", "fi-radix": "multi_cta"}
FI_ALGO_ENV = "FLASHINFER_TOPK_ALGO"

METHODS = ("cupti", "graph-replay", "cuda-events")


def die(msg, code=2):
    print(f"peer: {msg}", file=sys.stderr)
    sys.exit(code)


def parse_args(argv=None, default_peer=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--peer", choices=sorted(PEER_ARMS), default=default_peer,
                   required=default_peer is None, help="library to time")
    p.add_argument("--arms", help="comma-separated subset of the peer's arms (default: all)")
    p.add_argument("--captures", required=True, help="capture set directory (manifest.json)")
    p.add_argument("--out", help="results .jsonl to append to (required unless --dry-run)")
    p.add_argument("--meta", help="write what the peer ran (versions, JIT build time) here as JSON")
    p.add_argument("--cells", default="*", help="glob over cell ids (default: all)")
    p.add_argument("--batches", default="1,2,4,8,16,32,64,128,256,512,1024",
                   help="comma-separated batch sizes")
    p.add_argument("--rows", choices=["replicate", "independent"], default="replicate",
                   help="batch formation mode (as gvr-bench --rows)")
    p.add_argument("--limit", type=int, default=0, help="stop after N cases (0 = no limit)")
    p.add_argument("--cases-file", help="file with one case id per line (e.g. v4_flash_64k_L02@b16)")
    p.add_argument("--timing", choices=METHODS, default="cupti", help="how each rep is timed")
    p.add_argument("--graph", action="store_true", help="same as --timing graph-replay")
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--warmup", type=int, default=10, help="untimed calls before measuring")
    p.add_argument("--warm-reps", type=int, default=5, help="timed reps with a warm L2")
    p.add_argument("--cold-reps", type=int, default=10, help="timed reps after an L2 flush")
    p.add_argument("--flush-bytes", type=int, default=512 << 20, help="size of the L2 flush write")
    p.add_argument("--backend", choices=["real", "torch", "numpy"], default="real",
                   help="numpy: host stand-in for testing the plumbing (not a peer); "
                        "torch is the old name of real")
    p.add_argument("--dry-run", action="store_true", help="list the selected cases and exit")
    args = p.parse_args(argv)
    if args.graph:
        args.timing = "graph-replay"
    if not args.dry_run and not args.out:
        p.error("--out is required unless --dry-run")
    if min(args.warmup, args.warm_reps) < 0 or args.cold_reps < 1 or args.flush_bytes < 4:
        p.error("--warmup/--warm-reps must be >= 0, --cold-reps >= 1, --flush-bytes >= 4")
    all_arms = PEER_ARMS[args.peer]
    if args.arms:
        args.arm_list = [a.strip() for a in args.arms.split(",") if a.strip()]
        unknown = [a for a in args.arm_list if a not in all_arms]
        if unknown or not args.arm_list:
            p.error(f"--arms: {', '.join(unknown) or 'empty'}; {args.peer} has {', '.join(all_arms)}")
    else:
        args.arm_list = list(all_arms)
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
    """What a peer sees, on the host: [B, n_max] with -inf past each row's n."""
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
    """Tie-aware exactness of `out` ([B, K] int) row by row (docs/method.md, "What 'exact' means").
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


def base_record(entry, b, rows_mode, row_n, arm, variant):
    k = int(entry["k"])
    return {
        "case": f"{entry['id']}@b{b}", "cell": entry["id"], "model": entry["model"],
        "isl": entry["isl"], "layer": int(entry["layer"]), "n": int(entry["n"]), "k": k,
        "cr": int(entry["cr"]), "next_n": int(entry["next_n"]), "b": b, "rows": rows_mode,
        "arm": arm, "variant": variant, "cold_us": [], "warm_us": [], "method": None,
        "exact": {"status": "unsupported", "reason": "not run"},
        "bytes": int(4 * (int(np.sum(row_n)) + b * k)),
    }


# ---------------------------------------------------------------------------
# Kernel time from profiler records (pure: no torch, unit-tested on the host)
# ---------------------------------------------------------------------------

def rep_kernel_times(events, marker_name, brackets):
    """Per-rep kernel time from one profiler session.

    `events`: every GPU activity of the session as (start_ns, end_ns, name),
    in any order; `marker_name`: the name of the marker kernel; `brackets`:
    per rep, the (open, close) ordinal of its two markers among all markers
    the session enqueued (one stream, so markers run in enqueue order).
    A rep's time is the summed duration of the non-marker activities that
    start after its open marker ends and end before its close marker starts.
    Returns ([us per rep], [activities per rep]); raises ValueError when the
    session's marker count is not what was enqueued.
    """
    ordered = sorted(events)
    markers = [e for e in ordered if e[2] == marker_name]
    others = [e for e in ordered if e[2] != marker_name]
    needed = 1 + max((max(o, c) for o, c in brackets), default=-1)
    if len(markers) < needed:
        raise ValueError(f"{len(markers)} marker records for {needed} markers enqueued")
    starts = [e[0] for e in others]
    times, counts = [], []
    for open_i, close_i in brackets:
        lo, hi = markers[open_i][1], markers[close_i][0]
        i = bisect.bisect_left(starts, lo)
        total, count = 0, 0
        while i < len(others) and others[i][0] < hi:
            if others[i][1] <= hi:
                total += others[i][1] - others[i][0]
                count += 1
            i += 1
        times.append(total / 1e3)
        counts.append(count)
    return times, counts


def check_rep_counts(counts):
    """None when every rep saw the same (non-zero) number of activities, else why not."""
    if not counts or max(counts) == 0:
        return "the profiler recorded no kernel for the call"
    if min(counts) != max(counts):
        rep = counts.index(min(counts))
        return f"rep {rep} has {counts[rep]} of {max(counts)} kernel records"
    return None


# ---------------------------------------------------------------------------
# FlashInfer: which backend ran (pure, unit-tested)
# ---------------------------------------------------------------------------

FI_CUB_MAX_D = 1 << 21
FI_FILTERED_MAX_K = 2048


def fi_predict_backend(algo, rows, d, k, capturing):
    """The backend flashinfer 0.7.2.post1's `top_k` picks on sm_90 for fp32
    input, sorted=False, deterministic=False, no tie-break (flashinfer/topk.py:
    can_use_cub_topk, is_cub_topk_beneficial; include/flashinfer/topk.cuh:
    ShouldUseFilteredTopK), with FLASHINFER_TOPK_ALGO = `algo` (None: unset).
    Returns "cub", "filtered" or "radix"."""
    cub_supported = (algo is None or algo == "cub") and d <= FI_CUB_MAX_D
    if cub_supported:
        if algo == "cub":
            return "cub"
        if capturing:
            use_cub = rows < 128 or d <= 8192 or d >= 32768
        else:
            use_cub = rows < 128 or d <= 8192 or (k >= 4096 and d >= 65536)
        if use_cub:
            return "cub"
    if not (k <= FI_FILTERED_MAX_K and d > k):
        return "radix"
    if algo == "filtered":
        return "filtered"
    if algo == "multi_cta":
        return "radix"
    if d <= 32768:
        return "filtered"
    return "filtered" if rows > d // 16384 else "radix"


def fi_backend_of_kernels(names):
    """The backend named by the kernels one call ran, or None."""
    text = " ".join(names)
    found = []
    if "DeviceBatchedTopK" in text or "cub::" in text or "BatchedTopK" in text:
        found.append("cub")
    if "FilteredTopK" in text:
        found.append("filtered")
    if "RadixTopK" in text:
        found.append("radix")
    return "+".join(found) if found else None


# ---------------------------------------------------------------------------
# Benches
# ---------------------------------------------------------------------------

class NumpyBench:
    """Host stand-in with the GPU bench's interface (tests only)."""

    method = "host-clock"

    def __init__(self, peer, protocol):
        self.peer = peer
        self.protocol = protocol

    def meta(self):
        return {"peer": self.peer, "stand_in": f"numpy-{np.__version__}", "jit_build_s": 0.0}

    def variant(self, arm):
        return f"numpy-{np.__version__} stand-in (not {self.peer})"

    def load(self, logits, n, k):
        self.logits, self.n, self.k = logits, n, k

    def begin_cell(self):
        pass

    def end_cell(self):
        return []

    def run_case(self, arm, steps_of_row):
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
        exact = check_exact(out, self.logits, self.n, steps_of_row, k)
        return {"warm": warm, "cold": cold, "exact": exact, "variant": self.variant(arm)}


class TorchLibrary:
    """torch.topk."""

    name = "torch"

    def __init__(self, torch):
        self.torch = torch
        self.version = torch.__version__

    def meta(self):
        return {"library": f"torch {self.version}", "jit_build_s": 0.0}

    def make_call(self, arm, x, k):
        torch = self.torch
        return lambda: torch.topk(x, k, dim=-1, largest=True, sorted=False)

    def prepare(self, arm):
        return None

    def finish(self, arm, token):
        pass

    def variant(self, arm, rows, d, k, method, kernels):
        return f"torch-{self.version} sorted=False"


class FlashinferLibrary:
    """flashinfer.top_k with each sm_90 backend forced in turn."""

    name = "flashinfer"

    def __init__(self, torch, device):
        try:
            import importlib

            import flashinfer
            # Not `import flashinfer.topk as ...`: the package re-exports a
            # function named `topk`, which that spelling would bind instead
            # of the module.
            fi_topk = importlib.import_module("flashinfer.topk")
        except Exception as e:  # ImportError, or a failing import inside flashinfer
            die(f"flashinfer is not importable ({type(e).__name__}: {e}); install the carried wheels "
                "(python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && "
                "export PYTHONPATH=/tmp/site) or run gvr-bench grid without --peer flashinfer")
        self.torch = torch
        self.fi = flashinfer
        self.fi_topk = fi_topk
        self.version = getattr(flashinfer, "__version__", "unknown")
        self.trimmed = bool(getattr(flashinfer, "GVR_TRIMMED", False))
        # The JIT build (nvcc through ninja, cached under ~/.cache/flashinfer):
        # once, before anything is timed; its time goes to --meta only.
        os.environ.pop(FI_ALGO_ENV, None)
        started = time.perf_counter()
        try:
            fi_topk.get_topk_module()
        except Exception as e:  # nvcc, ninja or tvm-ffi: say which, then stop
            die(f"flashinfer's JIT build of the top-K module failed after "
                f"{time.perf_counter() - started:.0f} s: {type(e).__name__}: {e}", code=3)
        self.jit_build_s = time.perf_counter() - started
        # Which way the module came: flashinfer loads a prebuilt one from this
        # path (scripts/build_flashinfer_aot.sh) before it would compile one.
        prebuilt = os.path.join(os.path.dirname(flashinfer.__file__), "data", "aot", "topk", "topk.so")
        if os.path.exists(prebuilt):
            import hashlib

            with open(prebuilt, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            self.module_source = f"prebuilt {prebuilt} (sha256 {digest})"
        else:
            self.module_source = "flashinfer's JIT on this machine"
        # A first call of each backend on a small batch: lazy initialisation
        # (workspaces, function attributes) also stays out of every record.
        x = torch.randn(4, 65536, device=device)
        for algo in ("cub", "filtered", "multi_cta"):
            os.environ[FI_ALGO_ENV] = algo
            flashinfer.top_k(x, 512, sorted=False)
        os.environ.pop(FI_ALGO_ENV, None)
        torch.cuda.synchronize()
        self.first_calls_s = time.perf_counter() - started - self.jit_build_s
        self.filtered_ok = bool(fi_topk.can_implement_filtered_topk())

    def meta(self):
        return {
            "library": f"flashinfer-python {self.version}" + (" (trimmed to top_k)" if self.trimmed else ""),
            "jit_build_s": round(self.jit_build_s, 3),
            "module": self.module_source,
            "first_calls_s": round(self.first_calls_s, 3),
            "filtered_supported": self.filtered_ok,
            "algorithms": {arm: (algo or "unset (flashinfer's dispatch)") for arm, algo in FI_ALGO.items()},
            "not_on_sm90": "clusters (flashinfer dispatches it on sm_100 only)",
        }

    def prepare(self, arm):
        """Force the arm's backend for the calls that follow; returns the old value."""
        old = os.environ.get(FI_ALGO_ENV)
        if FI_ALGO[arm] is None:
            os.environ.pop(FI_ALGO_ENV, None)
        else:
            os.environ[FI_ALGO_ENV] = FI_ALGO[arm]
        return old

    def finish(self, arm, token):
        if token is None:
            os.environ.pop(FI_ALGO_ENV, None)
        else:
            os.environ[FI_ALGO_ENV] = token

    def make_call(self, arm, x, k):
        fi = self.fi
        return lambda: fi.top_k(x, k, sorted=False)

    def pregrow_workspace(self, x, k):
        """Grow flashinfer's cached CUB workspace for this shape before a graph
        capture, so a capture that picks CUB allocates nothing."""
        try:
            from flashinfer.utils import _get_cache_buf

            module = self.fi_topk.get_topk_module()
            size = module.cub_topk_workspace_size(x, k, 0)
            _get_cache_buf(f"cub_topk_workspace_{x.device}", size, x.device)
        except Exception:
            pass  # the capture itself then says what failed

    def variant(self, arm, rows, d, k, method, kernels):
        algo = FI_ALGO[arm]
        setting = f"{FI_ALGO_ENV}={algo}" if algo else f"{FI_ALGO_ENV} unset"
        seen = fi_backend_of_kernels(kernels) if kernels else None
        if seen:
            backend, how = seen, "kernels seen"
        else:
            backend = fi_predict_backend(algo, rows, d, k, capturing=method == "graph-replay")
            if not self.filtered_ok and backend == "filtered":
                backend = "radix"
            how = "dispatch rule"
        return f"{backend} (flashinfer {self.version}, {setting}; {how})"


class KernelClock:
    """Kernel time of marked reps from one torch.profiler session per cell."""

    def __init__(self, torch):
        self.torch = torch
        from torch.profiler import ProfilerActivity, profile

        self._profile = lambda: profile(activities=[ProfilerActivity.CUDA])
        self.session = None
        self.markers = 0
        # The marker kernel's name, as the profiler reports it.
        with self._profile() as prof:
            torch.cuda._sleep(0)
            torch.cuda.synchronize()
        names = {e[2] for e in self.gpu_events(prof)}
        if len(names) != 1:
            raise RuntimeError(f"profiling one marker kernel gave {sorted(names)}")
        self.marker_name = names.pop()

    def gpu_events(self, prof):
        """(start_ns, end_ns, name) of every GPU activity of a finished session."""
        torch = self.torch
        out = []
        results = getattr(getattr(prof, "profiler", None), "kineto_results", None)
        if results is not None:
            cuda = torch.autograd.DeviceType.CUDA
            for e in results.events():
                if e.device_type() == cuda:
                    start = int(e.start_ns())
                    out.append((start, start + int(e.duration_ns()), e.name()))
            return out
        for e in prof.events():  # older API: microsecond floats
            if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA:
                out.append((int(e.time_range.start * 1e3), int(e.time_range.end * 1e3), e.name))
        return out

    def begin(self):
        self.session = self._profile()
        self.session.__enter__()
        self.markers = 0

    def mark(self):
        self.torch.cuda._sleep(0)
        self.markers += 1
        return self.markers - 1

    def end(self):
        self.torch.cuda.synchronize()
        self.session.__exit__(None, None, None)
        events = self.gpu_events(self.session)
        self.session = None
        return events


class GpuBench:
    """Times one library's arms on the GPU."""

    def __init__(self, torch, library, device, timing, protocol):
        self.torch = torch
        self.lib = library
        self.device = device
        self.method = timing
        self.protocol = protocol
        self.flush_buf = torch.empty(protocol["flush_bytes"] // 4, dtype=torch.int32, device=device)
        self.flush_salt = 0
        reps = protocol["warm_reps"] + protocol["cold_reps"]
        self.events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                       for _ in range(reps)]
        self.side = torch.cuda.Stream(device=device)
        self.clock = KernelClock(torch) if timing == "cupti" else None
        self.pending = []  # cupti: (result, brackets) awaiting the cell's session
        self._graph = None  # graph-replay: the case's graph until its replays are done

    def meta(self):
        meta = {"peer": self.lib.name, "torch": self.torch.__version__,
                "device": self.torch.cuda.get_device_name(self.device), "method": self.method}
        meta.update(self.lib.meta())
        if self.clock is not None:
            meta["marker_kernel"] = self.clock.marker_name
        return meta

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
        # algorithm independent of any top-K), signed zeros normalised.
        ref = torch.zeros((steps, k), dtype=torch.float32, device=self.device)
        for s in range(steps):
            if n[s] >= k:
                ref[s] = torch.sort(self.cell[s, : int(n[s])] + 0.0, descending=True).values[:k]
        self.ref = ref

    def begin_cell(self):
        if self.clock is not None:
            self.clock.begin()

    def end_cell(self):
        """cupti: close the cell's session and give each pending result its
        times; returns the results completed (others were final already)."""
        if self.clock is None:
            return []
        pending, self.pending = self.pending, []
        try:
            events = self.clock.end()
        except Exception as e:  # a profiler failure fails the cell's timings, loudly
            for result, _ in pending:
                result["exact"] = {"status": "failed", "message": f"profiler: {e}"}
            return [r for r, _ in pending]
        for result, brackets in pending:
            try:
                times, counts = rep_kernel_times(events, self.clock.marker_name, brackets)
            except ValueError as e:
                result["exact"] = {"status": "failed", "message": f"kernel records: {e}"}
                continue
            why = check_rep_counts(counts)
            if why is not None:
                result["exact"] = {"status": "failed", "message": f"kernel records: {why}"}
                continue
            w = self.protocol["warm_reps"]
            result["warm"], result["cold"] = times[:w], times[w:]
            names = self._names_in(events, brackets[-1])
            result["variant"] = self.lib.variant(result["arm"], *result["shape"], self.method, names)
        return [r for r, _ in pending]

    def _names_in(self, events, bracket):
        markers = sorted(e for e in events if e[2] == self.clock.marker_name)
        lo, hi = markers[bracket[0]][1], markers[bracket[1]][0]
        return sorted({e[2] for e in events if e[2] != self.clock.marker_name and lo <= e[0] and e[1] <= hi})

    def run_case(self, arm, steps_of_row):
        """Measure one (case, arm). Returns a result dict; under cupti its
        times are filled by `end_cell` (`deferred` is then True)."""
        torch = self.torch
        p = self.protocol
        k = self.k
        rows = torch.tensor(steps_of_row, dtype=torch.int64, device=self.device)
        n_max = int(max(self.n_host[s] for s in steps_of_row))
        x = self.cell[:, :n_max].index_select(0, rows)  # contiguous [B, n_max]
        shape = (len(steps_of_row), n_max, k)
        token = self.lib.prepare(arm)
        try:
            call = self.lib.make_call(arm, x, k)
            if self.method == "graph-replay":
                result, brackets = self._graph_reps(arm, call, x)
            elif self.method == "cupti":
                result, brackets = self._marked_reps(call)
            else:
                result, brackets = self._event_reps(call)
        finally:
            self.lib.finish(arm, token)
        idx = result[1]
        bad = self.bad_rows(x, idx, rows)  # enqueued behind the reps
        torch.cuda.synchronize()  # the one host wait of the (case, arm)
        self._graph = None  # a replayed graph is released once its replays are done
        bad_rows = bad.nonzero().flatten().tolist()
        if bad_rows:
            exact = check_exact(idx.cpu().numpy(), self.cell.cpu().numpy(), self.n_host,
                                steps_of_row, k, rows=bad_rows[:1])
            if exact["status"] == "exact":  # GPU and host checks disagree: say so
                exact = {"status": "wrong", "row": bad_rows[0], "reason": "GPU check failed"}
        else:
            exact = {"status": "exact"}
        out = {"arm": arm, "exact": exact, "shape": shape, "warm": [], "cold": []}
        if brackets is None:
            times = [s.elapsed_time(e) * 1e3 for s, e in self.events]  # ms -> us
            out["warm"], out["cold"] = times[: p["warm_reps"]], times[p["warm_reps"]:]
            out["variant"] = self.lib.variant(arm, *shape, self.method, None)
        else:
            out["deferred"] = True
            out["variant"] = self.lib.variant(arm, *shape, self.method, None)
            self.pending.append((out, brackets))
        del x
        return out

    def _graph_reps(self, arm, call, x):
        torch = self.torch
        p = self.protocol
        current = torch.cuda.current_stream()
        self.side.wait_stream(current)
        with torch.cuda.stream(self.side):
            call()  # lazy initialisation happens outside the capture
            if hasattr(self.lib, "pregrow_workspace"):
                self.lib.pregrow_workspace(x, self.k)
            graph = torch.cuda.CUDAGraph()
            graph.capture_begin()  # private pool, released with the graph
            try:
                result = call()
            finally:
                # Leave capture mode even if the call failed inside it, so
                # the next case does not inherit a capturing stream.
                graph.capture_end()
        current.wait_stream(self.side)
        for _ in range(p["warmup"]):
            graph.replay()
        for i in range(p["warm_reps"] + p["cold_reps"]):
            if i >= p["warm_reps"]:
                self.flush()
            else:
                torch.cuda._sleep(WARM_SPIN_CYCLES)
            start, end = self.events[i]
            start.record()
            graph.replay()
            end.record()
        self._graph = graph  # released by run_case after its wait
        return result, None

    def _event_reps(self, call):
        torch = self.torch
        p = self.protocol
        result = None
        for _ in range(p["warmup"]):
            result = call()
        for i in range(p["warm_reps"] + p["cold_reps"]):
            if i >= p["warm_reps"]:
                self.flush()
            else:
                torch.cuda._sleep(WARM_SPIN_CYCLES)
            start, end = self.events[i]
            start.record()
            result = call()
            end.record()
        return result, None

    def _marked_reps(self, call):
        p = self.protocol
        result = None
        for _ in range(p["warmup"]):
            result = call()
        brackets = []
        for i in range(p["warm_reps"] + p["cold_reps"]):
            if i >= p["warm_reps"]:
                self.flush()
            opened = self.clock.mark()
            result = call()
            brackets.append((opened, self.clock.mark()))
        if result is None:  # no warm-up and no reps cannot happen (cold >= 1)
            result = call()
        return result, brackets

    def bad_rows(self, x, idx, rows):
        """Boolean [B]: row fails index range, distinctness or the value multiset."""
        torch = self.torch
        idx = idx.long()
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
        return NumpyBench(args.peer, protocol)
    try:
        import torch
    except ImportError as e:
        die(f"torch is not importable ({e}); install torch or run gvr-bench grid without --peer")
    if not torch.cuda.is_available():
        die("CUDA is not available to torch", code=3)
    torch.cuda.set_device(args.device)
    device = torch.device("cuda", args.device)
    library = FlashinferLibrary(torch, device) if args.peer == "flashinfer" else TorchLibrary(torch)
    return GpuBench(torch, library, device, args.timing, protocol)


def write_meta(path, meta):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def main(argv=None, default_peer=None):
    args = parse_args(argv, default_peer)
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
    if args.meta:
        meta = bench.meta()
        meta["arms"] = args.arm_list
        write_meta(args.meta, meta)
    repair_torn_tail(args.out)
    started = time.time()
    counts = {}
    done = 0
    total = len(plan) * len(args.arm_list)

    def emit(out_file, record):
        nonlocal done
        out_file.write(json.dumps(record) + "\n")
        out_file.flush()
        done += 1
        status = record["exact"]["status"]
        counts[status] = counts.get(status, 0) + 1
        if status not in ("exact", "unsupported") or done % 500 == 0 or done == total:
            elapsed = time.time() - started
            print(f"{done}/{total} records in {elapsed:.1f} s ({1e3 * elapsed / done:.2f} ms each) "
                  f"{counts}; last {record['arm']} {record['case']}: {status}"
                  + (f" ({record['exact'].get('message') or record['exact'].get('reason')})"
                     if status not in ("exact", "unsupported") else ""), flush=True)

    def finish(record, result):
        record.update(variant=result.get("variant", record["variant"]), exact=result["exact"])
        if result["exact"]["status"] != "failed" and result["cold"]:
            record.update(cold_us=result["cold"], warm_us=result["warm"], method=bench.method)
        return record

    with open(args.out, "a") as out_file:
        i = 0
        while i < len(plan):
            # One cell at a time (cupti: one profiler session per cell).
            entry = plan[i][0]
            j = i
            while j < len(plan) and plan[j][0]["id"] == entry["id"]:
                j += 1
            k = int(entry["k"])
            logits, n, _pad_value = load_cell(args.captures, entry)
            bench.load(logits, n, k)
            bench.begin_cell()
            deferred = []
            for entry_b in plan[i:j]:
                b = entry_b[1]
                steps_of_row = form_rows(logits.shape[0], b, args.rows)
                row_n = np.array([n[s] for s in steps_of_row], dtype=np.int64)
                for arm in args.arm_list:
                    record = base_record(entry, b, args.rows, row_n, arm, None)
                    if row_n.min() < k:
                        record["exact"] = {"status": "unsupported",
                                           "reason": f"a row has n = {int(row_n.min())} < K = {k}"}
                        emit(out_file, record)
                        continue
                    try:
                        result = bench.run_case(arm, steps_of_row)
                    except RuntimeError as e:  # CUDA errors surface as RuntimeError
                        record["exact"] = {"status": "failed", "message": str(e)}
                        emit(out_file, record)
                        continue
                    if result.get("deferred"):
                        deferred.append((record, result))
                    else:
                        emit(out_file, finish(record, result))
            bench.end_cell()
            for record, result in deferred:
                emit(out_file, finish(record, result))
            i = j


if __name__ == "__main__":
    main()
