"""The Python side of the sporadik benchmark: a long-lived worker that times sporadik 1.1.1's reader
on the commands the driver (bench/sporadik/run.ts) sends, one JSON object per line on stdin, and
answers one JSON object per line on stdout. Timing happens here, with perf_counter around the read
only, so neither process start-up nor the pipe is in any figure.

Commands:
  {"op": "single", "path", "axis", "positions": [...], "cold": bool, "warmup": [...]}
      one slice_at per position; cold opens a fresh reader inside the timed region (and closes it),
      warm opens one reader for the command and warms it with one untimed slices_at(warmup).
  {"op": "batch", "path", "axis", "batches": [[...], ...], "cold": bool, "warmup": [...]}
      one slices_at per batch.
Answers {"times": [seconds...], "requests": [...], "waves": [...], "nnz": [...], "sums": [...]}:
per measurement, the requests and waves the store saw (waves = times the store went from idle to
busy), and what came back (nnz, sum of values) so the driver can check both readers agree.

Requests are counted at zarr's LocalStore: each `get` is one, each range of a `get_partial_values`
is one. sporadik 1.1.1 reads local paths only (it wraps its argument in pathlib.Path and opens it
with zarr.open_group), so there is no HTTP side here.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import numpy as np
import sporadik
from zarr.storage import LocalStore


class Counter:
    requests = 0
    waves = 0
    in_flight = 0


def _track(cost: int) -> None:
    Counter.requests += cost
    if Counter.in_flight == 0:
        Counter.waves += 1
    Counter.in_flight += 1


_get = LocalStore.get
_get_partial_values = LocalStore.get_partial_values


async def _counted_get(self: Any, *args: Any, **kwargs: Any) -> Any:
    _track(1)
    try:
        return await _get(self, *args, **kwargs)
    finally:
        Counter.in_flight -= 1


async def _counted_get_partial_values(self: Any, prototype: Any, key_ranges: Any) -> Any:
    pairs = list(key_ranges)
    _track(len(pairs))
    try:
        return await _get_partial_values(self, prototype, pairs)
    finally:
        Counter.in_flight -= 1


LocalStore.get = _counted_get  # type: ignore[method-assign]
LocalStore.get_partial_values = _counted_get_partial_values  # type: ignore[method-assign]


def measure(reader: sporadik.SparseReader | None, path: str, axis: int, work: Any) -> dict[str, Any]:
    """One timed read; with no ``reader`` (cold) opening one is inside the timed region."""
    Counter.requests = Counter.waves = 0
    t0 = time.perf_counter()
    fresh = reader is None
    if fresh:
        reader = sporadik.SparseReader(path, axis)
    nnz, total = work(reader)
    elapsed = time.perf_counter() - t0
    if fresh:
        reader.close()
    return {"time": elapsed, "requests": Counter.requests, "waves": Counter.waves, "nnz": nnz, "sum": total}


def single(reader: sporadik.SparseReader, position: int) -> tuple[int, float]:
    _, values = reader.slice_at(position)
    return int(values.size), float(np.sum(values, dtype=np.float64))


def batch(reader: sporadik.SparseReader, positions: list[int]) -> tuple[int, float]:
    selection = reader.slices_at(np.asarray(positions, dtype=np.int64))
    return int(selection.nnz), float(np.sum(selection.data, dtype=np.float64))


def run(command: dict[str, Any]) -> dict[str, Any]:
    path, axis, cold = command["path"], int(command["axis"]), bool(command["cold"])
    if command["op"] == "single":
        items = [(lambda r, p=p: single(r, p)) for p in command["positions"]]
    elif command["op"] == "batch":
        items = [(lambda r, b=b: batch(r, b)) for b in command["batches"]]
    elif command["op"] == "version":
        return {"version": sporadik.__version__, "python": sys.version.split()[0]}
    else:
        raise ValueError(f"unknown op {command['op']!r}")
    reader = None
    if not cold:
        # Warm: one reader for the whole command, warmed by one untimed batch (as the driver does).
        reader = sporadik.SparseReader(path, axis)
        reader.slices_at(np.asarray(command["warmup"], dtype=np.int64))
    results = [measure(reader, path, axis, work) for work in items]
    if reader is not None:
        reader.close()
    return {
        "times": [r["time"] for r in results],
        "requests": [r["requests"] for r in results],
        "waves": [r["waves"] for r in results],
        "nnz": [r["nnz"] for r in results],
        "sums": [r["sum"] for r in results],
    }


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = run(json.loads(line))
        except Exception as error:  # the driver reports it and stops
            answer = {"error": f"{type(error).__name__}: {error}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
