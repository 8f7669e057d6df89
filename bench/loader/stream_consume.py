"""Side (c) of the loader benchmark: one epoch of ``deltacells stream`` consumed in Python through
the example module (examples/python/deltacells_stream.py) as scipy CSR float32 batches with their
obs labels, as a training loop would take them.

Usage: conformance/.venv/bin/python bench/loader/stream_consume.py DATASET [--batch-size 4096]
       [--threads N] [--obs cell_type] [--seed S]
       conformance/.venv/bin/python bench/loader/stream_consume.py --raw-pipe BYTES --cells N [--chunk BYTES]
With --raw-pipe, the pipe alone: node writes a buffer of --chunk bytes (a batch's Arrow message)
to its stdout until BYTES are written, and this side reads them into a reused buffer; the JSON
line counts N cells for those bytes (the epoch's), so the rate compares with the stream's.
The command is $DELTACELLS (see the module). Prints one JSON line: cells, batches, nonzeros, seconds
to the first batch and cells per second over the epoch, both from the moment the command starts,
and the CPU seconds of the epoch (this process and the command, every thread of both).
"""

from __future__ import annotations

import argparse
import contextlib
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


_WRITER = """
const buf = Buffer.alloc(Number(process.argv[2]), 7);
let left = Number(process.argv[1]);
const next = () => {
  while (left > 0) {
    const n = Math.min(left, buf.length);
    left -= n;
    if (!process.stdout.write(n === buf.length ? buf : buf.subarray(0, n))) return process.stdout.once("drain", next);
  }
};
next();
"""


def raw_pipe(total: int, chunk: int, cells: int) -> dict:
    """The pipe's own throughput: node writing `chunk`-byte buffers, read here into a reused buffer."""
    import fcntl
    import subprocess

    cpu0 = _cpu()
    t0 = time.perf_counter()
    proc = subprocess.Popen(["node", "-e", _WRITER, str(total), str(chunk)], stdout=subprocess.PIPE)
    with contextlib.suppress(OSError):
        fcntl.fcntl(proc.stdout.fileno(), fcntl.F_SETPIPE_SZ, 1 << 20)
    buf = memoryview(bytearray(1 << 20))
    got = 0
    first = None
    while True:
        n = proc.stdout.readinto(buf)
        if not n:
            break
        got += n
        if first is None and got >= chunk:
            first = time.perf_counter() - t0
    proc.wait()
    seconds = time.perf_counter() - t0
    if got != total:
        raise RuntimeError(f"read {got} bytes of {total}")
    return {"reader": "raw pipe", "cells": cells, "bytes": got, "first_batch_s": round(first or 0.0, 3), "seconds": round(seconds, 3), "cpu_s": round(_cpu() - cpu0, 3)}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("dataset", nargs="?")
    p.add_argument("--raw-pipe", type=int, default=None)
    p.add_argument("--chunk", type=int, default=52_000_000)
    p.add_argument("--cells", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=4096)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--obs", default="cell_type")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    if a.raw_pipe is not None:
        print(json.dumps(raw_pipe(a.raw_pipe, a.chunk, a.cells)), flush=True)
        return
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
