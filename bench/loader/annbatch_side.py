"""The Python reference of the loader benchmark: annbatch 0.3.1 (the fastest published AnnData
mini-batch loader) on the same cells as the deltacells side.

    PY=$(/path/to/annbatch-py311.sh)        # a Python 3.11 venv with annbatch (see bench/loader/README.md)
    $PY bench/loader/annbatch_side.py write IN.h5ad OUT.zarr
    $PY bench/loader/annbatch_side.py read OUT.zarr [--batch-size 4096] [--cells N] [--obs cell_type] [--epochs N]

``write`` builds annbatch's recommended store: a ``DatasetCollection`` (pre-shuffled, sharded zarr,
its default chunking, shard size and lz4 Blosc compression) from the .h5ad, through the zarrs codec
pipeline as annbatch's README asks for local folders. It writes OUT.zarr.complete (a marker) last.

``read`` iterates annbatch's ``Loader`` as its README shows (batch size 4096, chunk_size 32,
preload_nchunks 512, shuffle on, scipy CSR output on the CPU) over the collection and prints one
JSON line: cells, batches, nonzeros, seconds to the first batch and cells per second over all of
them (from the moment the collection is opened, after the imports, so opening it, building the Loader
and the first batch's cost are included, as on the stream's side), and the seconds (and CPU
seconds) of opening the collection and building the Loader alone (open_s, open_cpu_s), which a
job pays once and bench/loader/run.ts takes out of the per-epoch figures. With ``--epochs N`` the
same Loader runs N epochs (as a training job does); the line gives the last one's figures (its
clock from its own start) and every epoch's under "epochs".
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

import numpy as np
import scipy.sparse as sp
import zarr

zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline"})

import annbatch  # noqa: E402


def write(src: str, out: str) -> None:
    if os.path.exists(out + ".complete"):
        print(f"{out} exists, nothing to do")
        return
    t0 = time.perf_counter()
    annbatch.DatasetCollection(out).add_adatas([src], rng=np.random.default_rng(0))
    open(out + ".complete", "w").close()
    print(json.dumps({"annbatch_write_seconds": round(time.perf_counter() - t0, 1)}), flush=True)


def _cpu() -> float:
    """CPU seconds of this process (every thread) and of any children waited for."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def read(store: str, batch_size: int, limit: int | None, obs: str | None, seed: int, epochs: int = 1) -> None:
    # The clock starts after the imports and before the store is opened, as the stream's side
    # (stream_consume.py) starts it after its imports and before the command opens the dataset:
    # opening the collection and building the Loader (0.14 s here) are part of the epoch's cost.
    cpu0 = _cpu()
    t0 = time.perf_counter()
    collection = annbatch.DatasetCollection(store, mode="r")
    loader = annbatch.Loader(
        batch_size=batch_size,
        chunk_size=32,
        preload_nchunks=512,
        shuffle=True,
        preload_to_gpu=False,
        rng=np.random.default_rng(seed),
    ).use_collection(collection)
    opened, cpu_opened = time.perf_counter() - t0, _cpu() - cpu0
    done = []
    for epoch in range(epochs):
        if epoch > 0:  # the next epoch's clock from its own start: the Loader is built
            cpu0, t0, opened, cpu_opened = _cpu(), time.perf_counter(), 0.0, 0.0
        done.append(_epoch(loader, limit, obs, t0, cpu0) | {"epoch": epoch, "open_s": round(opened, 3), "open_cpu_s": round(cpu_opened, 3)})
    # The last epoch's figures (a training job's from its second epoch on), every epoch's in "epochs".
    print(json.dumps({**done[-1], "epochs": done}), flush=True)


def _epoch(loader, limit: int | None, obs: str | None, t0: float, cpu0: float) -> dict:
    first = None
    cells = nnz = batches = 0
    labels = 0
    for batch in loader:
        x = batch["X"]
        if not isinstance(x, sp.csr_matrix | sp.csr_array):
            raise TypeError(f"annbatch yielded {type(x)}, expected a scipy CSR matrix")
        if first is None:
            first = time.perf_counter() - t0
        if obs is not None:
            labels += int(batch["obs"][obs].cat.codes.to_numpy().sum() >= 0)
        cells += x.shape[0]
        nnz += x.nnz
        batches += 1
        if limit is not None and cells >= limit:
            break
    seconds = time.perf_counter() - t0
    return {
        "reader": f"annbatch {annbatch.__version__}",
        "cells": cells,
        "batches": batches,
        "nnz": nnz,
        "first_batch_s": round(first or 0.0, 3),
        "seconds": round(seconds, 3),
        "cells_per_s": round(cells / seconds, 1),
        "cpu_s": round(_cpu() - cpu0, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("src")
    w.add_argument("out")
    r = sub.add_parser("read")
    r.add_argument("store")
    r.add_argument("--batch-size", type=int, default=4096)
    r.add_argument("--cells", type=int, default=None)
    r.add_argument("--obs", default=None)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--epochs", type=int, default=1)
    args = parser.parse_args()
    if args.cmd == "write":
        write(args.src, args.out)
    else:
        read(args.store, args.batch_size, args.cells, args.obs, args.seed, args.epochs)


if __name__ == "__main__":
    sys.exit(main())
