#!/usr/bin/env python3
"""Convert TensorRT-LLM DSA indexer decode captures into a gvr-bench capture set.

Input: one or more ISL directories written by the DSA capture hook in the
per-layer layout (docs/captures.md, "Importing TensorRT-LLM captures"):

    <ISL dir>/manifest.json          hook manifest (model_variant, index_topk, ...)
    <ISL dir>/_COMPLETE              marker written when the run finished
    <ISL dir>/layer_NN/decode.logits.in.{npz,pt}   fp32 [1, >=N] per step
    <ISL dir>/layer_NN/decode.preidx.in.{npz,pt}   int32 [K] per step (V4 only)
    <ISL dir>/layer_NN/decode.topk.out.{npz,pt}    int32 [K] per step

`.pt` files are dicts keyed by step (or by (layer, step)); `.npz` files use
keys `L<layer>_S<step>`. `.npz` needs only numpy; `.pt` needs torch, which is
imported only when such a file is met.

Output: docs/captures.md (manifest.json + one .safetensors per layer).

Rules applied (each is a documented quirk of the upstream captures):
  * an ISL dir without manifest.json or _COMPLETE is refused (partial runs);
  * a step is valid when its topk max >= 0 (warm-up steps carry -1);
  * a step is usable when it and the previous step are valid, because the
    previous step's top-K is the hint (V3.2 has no preidx stream: hints are
    rebuilt as topk[s-1]; V4 uses preidx as-is);
  * N per step = max over layers of (max topk index + 1); the logits tail
    beyond N (dtype-min or garbage) is never read;
  * rows are stored with npad = ceil64(max N) and padded with float32 min.

Usage:
    import_trtllm_captures.py --out OUT_DIR ISL_DIR [ISL_DIR ...]
        [--model v32|flash|pro] [--isl 64k] [--max-steps S] [--layers 2,4]
"""

import argparse
import json
import os
import re
import sys

try:
    import numpy as np
except ImportError:  # pragma: no cover - environment problem, not a bug
    sys.exit("error: numpy is required (pip install numpy safetensors)")
try:
    from safetensors.numpy import save_file
except ImportError:  # pragma: no cover
    sys.exit("error: the safetensors python package is required (pip install safetensors)")

FORMAT_VERSION = 1
PAD_VALUE = float(np.finfo(np.float32).min)  # -3.4028235e38
MODEL_K = {"v32": 2048, "flash": 512, "pro": 1024}
MODEL_CR = {"v32": 1, "flash": 4, "pro": 4}
STREAMS = ("decode.logits.in", "decode.preidx.in", "decode.topk.out")
LAYER_DIR = re.compile(r"^layer_(\d+)$")
NPZ_KEY = re.compile(r"^L(\d+)_S(\d+)$")


class CaptureInputError(Exception):
    """A problem with the input dump; reported as `error: ...` with exit 2."""


def ceil64(n):
    return max(1, -(-n // 64)) * 64


# ---------------------------------------------------------------------------
# Reading streams


def find_stream(layer_dir, stream):
    """Path of `<stream>.npz` or `<stream>.pt` (npz preferred), or None."""
    for ext in ("npz", "pt"):
        path = os.path.join(layer_dir, f"{stream}.{ext}")
        if os.path.isfile(path):
            return path
    return None


def load_stream(path, layer):
    """Dict step -> numpy array for one stream file of one layer."""
    if path.endswith(".npz"):
        return load_npz(path, layer)
    return load_pt(path, layer)


def load_npz(path, layer):
    steps = {}
    with np.load(path, allow_pickle=False) as archive:
        for key in archive.files:
            match = NPZ_KEY.match(key)
            if not match:
                raise CaptureInputError(f"{path}: key {key!r} is not of the form L<layer>_S<step>")
            key_layer, step = int(match.group(1)), int(match.group(2))
            if key_layer != layer:
                continue  # single files may hold several layers
            steps[step] = np.asarray(archive[key])
    return steps


def load_pt(path, layer):
    try:
        import torch  # lazy: only .pt dumps need it
    except ImportError:
        raise CaptureInputError(
            f"{path}: reading .pt captures needs torch (pip install torch), "
            "or re-capture with DSV4_INDEXER_CAPTURE_FORMAT=npz"
        ) from None
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any load failure is an input problem
        raise CaptureInputError(f"{path}: cannot load: {exc}") from None
    if not isinstance(data, dict):
        raise CaptureInputError(f"{path}: expected a dict keyed by step, got {type(data).__name__}")
    steps = {}
    for key, tensor in data.items():
        if isinstance(key, tuple) and len(key) == 2:
            key_layer, step = int(key[0]), int(key[1])
            if key_layer != layer:
                continue
        elif isinstance(key, str) and NPZ_KEY.match(key):
            match = NPZ_KEY.match(key)
            if int(match.group(1)) != layer:
                continue
            step = int(match.group(2))
        else:
            try:
                step = int(key)
            except (TypeError, ValueError):
                raise CaptureInputError(f"{path}: unexpected key {key!r}") from None
        tensor = tensor.detach().cpu()
        if tensor.dtype in (torch.bfloat16, torch.float16):
            tensor = tensor.float()  # exact upcast
        steps[step] = tensor.numpy()
    return steps


def as_row(array, path, step, what):
    """Flatten a `[1, W]` or `[W]` capture to 1-D; anything else is refused."""
    if array.ndim == 2 and array.shape[0] == 1:
        return array[0]
    if array.ndim == 1:
        return array
    raise CaptureInputError(f"{path}: step {step}: {what} has shape {array.shape}, expected [1, W] or [W]")


# ---------------------------------------------------------------------------
# Model / ISL identification


def model_from_manifest(source_manifest, override, isl_dir):
    if override:
        model = override
    else:
        variant = str(source_manifest.get("model_variant", "")).lower()
        if "flash" in variant:
            model = "flash"
        elif "pro" in variant:
            model = "pro"
        elif "3.2" in variant or "v32" in variant or "v3_2" in variant:
            model = "v32"
        else:
            by_k = {k: m for m, k in MODEL_K.items()}
            model = by_k.get(source_manifest.get("index_topk"))
            if model is None:
                raise CaptureInputError(
                    f"{isl_dir}: cannot tell the model from model_variant={variant!r} "
                    f"index_topk={source_manifest.get('index_topk')!r}; pass --model v32|flash|pro"
                )
    index_topk = source_manifest.get("index_topk")
    if index_topk is not None and int(index_topk) != MODEL_K[model]:
        raise CaptureInputError(
            f"{isl_dir}/manifest.json: index_topk={index_topk} does not match model {model} "
            f"(K = {MODEL_K[model]})"
        )
    return model


def isl_label(isl_dir, override):
    if override:
        return override
    name = os.path.basename(os.path.normpath(isl_dir))
    match = re.match(r"^ISL_(\w+)$", name, re.IGNORECASE)
    if not match:
        raise CaptureInputError(f"{isl_dir}: cannot tell the ISL rung from the directory name; pass --isl 64k")
    return match.group(1).lower()


def cell_id(model, isl, layer):
    prefix = "v32" if model == "v32" else f"v4_{model}"
    return f"{prefix}_{isl}_L{layer:02d}"


# ---------------------------------------------------------------------------
# Conversion


def read_layers(isl_dir, model, wanted_layers):
    """{layer: {stream: {step: array}}} plus the stream paths, for every layer dir.

    Layers not selected by --layers still contribute their topk stream,
    because N per step is the maximum over all captured layers.
    """
    layers = {}
    paths = {}
    for entry in sorted(os.listdir(isl_dir)):
        match = LAYER_DIR.match(entry)
        if not match or not os.path.isdir(os.path.join(isl_dir, entry)):
            continue
        layer = int(match.group(1))
        selected = wanted_layers is None or layer in wanted_layers
        layer_dir = os.path.join(isl_dir, entry)
        streams = {}
        for stream in STREAMS if selected else ("decode.topk.out",):
            path = find_stream(layer_dir, stream)
            if path is None:
                if stream == "decode.preidx.in" and model == "v32":
                    continue  # V3.2 has no preidx stream; hints are rebuilt
                raise CaptureInputError(f"{layer_dir}: missing {stream}.npz / {stream}.pt")
            streams[stream] = load_stream(path, layer)
            paths[(layer, stream)] = path
        layers[layer] = streams
    if not layers:
        raise CaptureInputError(f"{isl_dir}: no layer_NN directories found")
    missing = sorted(set(wanted_layers or ()) - set(layers))
    if missing:
        raise CaptureInputError(f"{isl_dir}: --layers asks for {missing}, which have no layer_NN directory")
    return layers, paths


def valid_topk(topk_by_step, step, path, k):
    """The step's top-K as int64 1-D, or None when absent or a warm-up sentinel."""
    raw = topk_by_step.get(step)
    if raw is None:
        return None
    row = as_row(np.asarray(raw), path, step, "topk").astype(np.int64)
    if row.size != k:
        raise CaptureInputError(f"{path}: step {step}: topk has {row.size} entries, expected K = {k}")
    if row.size == 0 or row.max() < 0:
        return None
    return row


def convert_isl_dir(isl_dir, args, out_dir, warnings):
    for required in ("manifest.json", "_COMPLETE"):
        if not os.path.isfile(os.path.join(isl_dir, required)):
            raise CaptureInputError(
                f"{isl_dir}: missing {required}; refusing an incomplete capture directory"
            )
    with open(os.path.join(isl_dir, "manifest.json")) as f:
        try:
            source_manifest = json.load(f)
        except json.JSONDecodeError as exc:
            raise CaptureInputError(f"{isl_dir}/manifest.json: not valid JSON: {exc}") from None
    model = model_from_manifest(source_manifest, args.model, isl_dir)
    isl = isl_label(isl_dir, args.isl)
    k, cr = MODEL_K[model], MODEL_CR[model]
    next_n = 1  # the hook records decode with multi-token prediction off

    layers, paths = read_layers(isl_dir, model, args.layers)

    # Valid top-K per (layer, step); N per step is the max over layers.
    topk = {}
    n_by_step = {}
    for layer, streams in layers.items():
        path = paths[(layer, "decode.topk.out")]
        topk[layer] = {}
        for step in streams["decode.topk.out"]:
            row = valid_topk(streams["decode.topk.out"], step, path, k)
            if row is None:
                continue
            topk[layer][step] = row
            n_by_step[step] = max(n_by_step.get(step, 0), int(row.max()) + 1)

    cells = []
    layer_reports = []
    for layer, streams in sorted(layers.items()):
        if "decode.logits.in" not in streams:
            continue  # not selected by --layers; its topk only fed N
        logits_path = paths[(layer, "decode.logits.in")]
        usable = sorted(s for s in topk[layer] if s - 1 in topk[layer])
        kept = []
        dropped = {}
        for step in usable:
            n = n_by_step[step]
            raw_logits = streams["decode.logits.in"].get(step)
            if raw_logits is None:
                dropped[step] = "no logits"
                continue
            row = as_row(np.asarray(raw_logits), logits_path, step, "logits")
            if row.dtype == np.float64 or not np.issubdtype(row.dtype, np.floating):
                raise CaptureInputError(f"{logits_path}: step {step}: logits dtype {row.dtype}, expected float32")
            if row.size < n:
                dropped[step] = f"logits width {row.size} < N {n}"
                continue
            if model == "v32":
                hints = topk[layer][step - 1]
            else:
                preidx_path = paths[(layer, "decode.preidx.in")]
                raw_hint = streams["decode.preidx.in"].get(step)
                if raw_hint is None:
                    dropped[step] = "no preidx"
                    continue
                hints = as_row(np.asarray(raw_hint), preidx_path, step, "preidx").astype(np.int64)
                if hints.size != k:
                    raise CaptureInputError(
                        f"{preidx_path}: step {step}: preidx has {hints.size} entries, expected K = {k}"
                    )
            bad = (hints < -1) | (hints >= n)
            if bad.any():
                dropped[step] = f"{int(bad.sum())} hints outside [-1, N={n})"
                continue
            kept.append((step, n, row, hints))
        if args.max_steps is not None:
            kept = kept[-args.max_steps:]
        for step, reason in dropped.items():
            warnings.append(f"{isl_dir} layer {layer}: dropped step {step}: {reason}")
        if not kept:
            warnings.append(f"{isl_dir} layer {layer}: no usable steps; no cell written")
            continue

        steps = len(kept)
        npad = ceil64(max(n for _, n, _, _ in kept))
        logits = np.full((steps, npad), PAD_VALUE, dtype=np.float32)
        n_arr = np.zeros(steps, dtype=np.int32)
        hints_arr = np.zeros((steps, k), dtype=np.int32)
        topk_arr = np.zeros((steps, k), dtype=np.int32)
        for i, (step, n, row, hints) in enumerate(kept):
            logits[i, :n] = row[:n].astype(np.float32)  # only the valid prefix
            n_arr[i] = n
            hints_arr[i] = hints
            topk_arr[i] = topk[layer][step]
        kv_lens = (n_arr.astype(np.int64) * cr + next_n - 1).astype(np.int32)

        cid = cell_id(model, isl, layer)
        nominal_n = int(n_arr[-1])  # the grid uses the last usable step's row
        file_name = f"{cid}.safetensors"
        metadata = {
            "format_version": str(FORMAT_VERSION),
            "id": cid,
            "model": model,
            "isl": isl,
            "layer": str(layer),
            "n": str(nominal_n),
            "k": str(k),
            "cr": str(cr),
            "next_n": str(next_n),
            "pad_value": repr(PAD_VALUE),
        }
        save_file(
            {"logits": logits, "n": n_arr, "hints": hints_arr, "topk": topk_arr, "kv_lens": kv_lens},
            os.path.join(out_dir, file_name),
            metadata=metadata,
        )
        cells.append(
            {
                "id": cid,
                "model": model,
                "isl": isl,
                "layer": layer,
                "n": nominal_n,
                "k": k,
                "cr": cr,
                "next_n": next_n,
                "file": file_name,
                "steps": steps,
                "npad": npad,
            }
        )
        layer_reports.append(
            {
                "layer": layer,
                "captured_steps": len(streams["decode.topk.out"]),
                "valid_steps": len(topk[layer]),
                "usable_steps": len(usable),
                "kept_steps": [s for s, _, _, _ in kept],
                "dropped_steps": {str(s): r for s, r in dropped.items()},
                "streams": {s: os.path.abspath(p) for (l, s), p in paths.items() if l == layer},
            }
        )
    provenance = {
        "isl_dir": os.path.abspath(isl_dir),
        "model": model,
        "isl": isl,
        "source_manifest": source_manifest,
        "hints": "topk.out of the previous step (V3.2 has no preidx)" if model == "v32" else "preidx.in as-is",
        "layers": layer_reports,
    }
    return cells, provenance


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("isl_dirs", nargs="+", metavar="ISL_DIR", help="TRT-LLM capture dir (ISL_<isl>)")
    parser.add_argument("--out", required=True, help="output capture set directory")
    parser.add_argument("--model", choices=sorted(MODEL_K), help="override the model (default: from manifest)")
    parser.add_argument("--isl", help="override the ISL rung label, e.g. 64k (default: from ISL_<isl> dir name)")
    parser.add_argument("--max-steps", type=int, help="keep only the last S usable steps per layer")
    parser.add_argument("--layers", help="comma-separated layer numbers to import (default: all)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing manifest.json in --out")
    args = parser.parse_args(argv)
    if args.max_steps is not None and args.max_steps < 1:
        parser.error("--max-steps must be >= 1")
    if args.layers is not None:
        try:
            args.layers = {int(x) for x in args.layers.split(",") if x.strip()}
        except ValueError:
            parser.error("--layers must be comma-separated integers")
    if args.isl is not None and len(args.isl_dirs) > 1:
        parser.error("--isl applies to a single ISL_DIR")
    return args


def main(argv=None):
    args = parse_args(argv)
    out_manifest = os.path.join(args.out, "manifest.json")
    if os.path.exists(out_manifest) and not args.force:
        print(f"error: {out_manifest} exists; pass --force to overwrite", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    warnings = []
    all_cells = []
    sources = []
    try:
        for isl_dir in args.isl_dirs:
            cells, provenance = convert_isl_dir(isl_dir, args, args.out, warnings)
            all_cells.extend(cells)
            sources.append(provenance)
        ids = [c["id"] for c in all_cells]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise CaptureInputError(f"duplicate cell ids across inputs: {duplicates}")
        if not all_cells:
            raise CaptureInputError("no usable steps in any layer; nothing imported")
    except CaptureInputError as exc:
        for w in warnings:
            print(f"warning: {w}", file=sys.stderr)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    manifest = {
        "format_version": FORMAT_VERSION,
        "source": "imported",
        "provenance": {
            "importer": "scripts/import_trtllm_captures.py",
            "arguments": {
                "model": args.model,
                "isl": args.isl,
                "max_steps": args.max_steps,
                "layers": sorted(args.layers) if args.layers is not None else None,
            },
            "pad_value": PAD_VALUE,
            "sources": sources,
        },
        "cells": all_cells,
    }
    tmp = out_manifest + ".tmp"
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    os.replace(tmp, out_manifest)
    print(f"imported {len(all_cells)} cells into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
