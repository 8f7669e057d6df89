"""Side (c) of the loader benchmark: one epoch of ``deltacells stream`` consumed in Python through
the example module (examples/python/deltacells_stream.py) as scipy CSR float32 batches with their
obs labels, as a training loop would take them.

Usage: conformance/.venv/bin/python bench/loader/stream_consume.py DATASET [--batch-size 4096]
       [--threads N] [--obs cell_type] [--seed S]
The command is $DELTACELLS (see the module). Prints one JSON line: cells, batches, nonzeros, seconds
to the first batch and cells per second over the epoch, both from the moment the command starts,
and the CPU seconds of the epoch (this process and the command, every thread of both).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

import scipy.sparse as sp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python"))
from deltacells_stream import iter_batches  # noqa: E402


def _cpu() -> float:
    """CPU seconds of this process and of its children waited for (the command, once it exits)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("dataset")
    p.add_argument("--batch-size", type=int, default=4096)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--obs", default="cell_type")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    obs = [c for c in a.obs.split(",") if c]
    cpu0 = _cpu()
    t0 = time.perf_counter()
    first = None
    cells = nnz = batches = labelled = 0
    for batch in iter_batches(a.dataset, batch_size=a.batch_size, seed=a.seed, obs=obs, threads=a.threads, output="scipy"):
        if not isinstance(batch.X, sp.csr_matrix):
            raise TypeError(f"expected scipy CSR, got {type(batch.X)}")
        if first is None:
            first = time.perf_counter() - t0
        cells += batch.X.shape[0]
        nnz += batch.X.nnz
        batches += 1
        for name in obs:
            labelled += int(len(batch.obs[name]) == batch.X.shape[0])
    seconds = time.perf_counter() - t0
    cpu = _cpu() - cpu0
    print(
        json.dumps(
            {
                "reader": "deltacells stream -> pyarrow -> scipy",
                "cells": cells,
                "batches": batches,
                "nnz": nnz,
                "first_batch_s": round(first or 0.0, 3),
                "seconds": round(seconds, 3),
                "cells_per_s": round(cells / seconds, 1),
                "cpu_s": round(cpu, 3),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
