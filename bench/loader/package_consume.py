"""The Python package's side of the loader benchmark: one epoch of ``ds.batches()`` (the package in
python/src, run on the repository's built command) as scipy CSR float32 batches with their obs
codes, as a training loop takes them, through the transport given.

Usage: conformance/.venv/bin/python bench/loader/package_consume.py DATASET [--transport shm|pipe]
       [--batch-size 4096] [--threads N] [--obs cell_type] [--seed S] [--ring N] [--command-only]

With --command-only, the Node loader alone: the same ``deltacells stream`` (float32 counts, the
same obs) with its stdout on /dev/null and nothing reading it, timed from its start to its exit.

The clock starts after the imports and ``deltacells.open`` (once per job: it reads the manifest),
before ``ds.batches()``: what each epoch costs, the command's start included (each epoch is a new
``deltacells stream``). With ``--epochs N`` the epochs 0 .. N - 1 run one after the other in this
process, as in a training job (from the second on, the shared-memory transport finds its memory
allocated and mapped). Prints one JSON line: the last epoch's cells, batches, nonzeros, seconds to
its first batch and over it from ``ds.batches()``, and its CPU seconds (this process and the
command, every thread of both); the seconds of ``deltacells.open`` (open_s); and every epoch's
figures under "epochs".
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "src"))
import deltacells  # noqa: E402


def _cpu() -> float:
    """CPU seconds of this process and of its children waited for (the command, once it exits)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _running_cpu(pid: int) -> float:
    """CPU seconds so far of a process still running (/proc), 0 once it has exited and been waited."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def command_only(a: argparse.Namespace, obs: list[str]) -> dict:
    """The command that ``ds.batches()`` runs, its Arrow stream written to /dev/null."""
    import subprocess

    from deltacells._cli import command, environment

    args = ["stream", a.dataset, "--batch-size", str(a.batch_size), "--seed", str(a.seed), "--float32"]
    args += ["--obs", ",".join(obs)] if obs else []
    args += ["--threads", str(a.threads)] if a.threads else []
    cmd = command(args)
    cpu0 = _cpu()
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=sink, env=environment(), check=True)
    seconds = time.perf_counter() - t0
    return {"reader": "deltacells stream > /dev/null", "cells": None, "first_batch_s": 0.0, "seconds": round(seconds, 3), "cpu_s": round(_cpu() - cpu0, 3)}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("dataset")
    p.add_argument("--transport", default="shm")
    p.add_argument("--batch-size", type=int, default=4096)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--obs", default="cell_type")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ring", type=int, default=None)
    p.add_argument("--command-only", action="store_true")
    p.add_argument("--epochs", type=int, default=1)
    a = p.parse_args()
    obs = [c for c in a.obs.split(",") if c]
    if a.command_only:
        print(json.dumps(command_only(a, obs)), flush=True)
        return
    t_open = time.perf_counter()
    ds = deltacells.open(a.dataset)
    open_s = time.perf_counter() - t_open
    epochs = [one_epoch(ds, a, obs, e) for e in range(a.epochs)]
    # The last epoch's figures (a training job's from its second epoch on), every epoch's in "epochs".
    print(json.dumps({**epochs[-1], "open_s": round(open_s, 3), "epochs": epochs}), flush=True)


def one_epoch(ds: deltacells.Dataset, a: argparse.Namespace, obs: list[str], epoch: int) -> dict:
    cpu0 = _cpu()
    t0 = time.perf_counter()
    first = None
    cells = nnz = batches = labelled = 0
    stream = ds.batches(batch_size=a.batch_size, seed=a.seed, epoch=epoch, obs=obs, threads=a.threads, transport=a.transport, ring=a.ring)
    # A command kept from the last epoch (transport="shm") is not waited for: its CPU from /proc.
    command = stream._stream._proc.pid
    command0 = _running_cpu(command)
    for batch in stream:
        if not isinstance(batch.X, sp.csr_matrix) or batch.X.dtype != np.float32:
            raise TypeError(f"expected scipy CSR float32, got {type(batch.X)}")
        if first is None:
            first = time.perf_counter() - t0
        cells += batch.X.shape[0]
        nnz += batch.X.nnz
        batches += 1
        for name in obs:
            labelled += int(len(batch.obs[name]) == batch.X.shape[0])
    seconds = time.perf_counter() - t0
    running = stream._stream._proc.poll() is None
    cpu = _cpu() - cpu0 + (_running_cpu(command) - command0 if running else 0.0)
    return {
        "reader": f"deltacells {deltacells.__version__} ds.batches(transport={a.transport!r}) -> scipy",
        "epoch": epoch,
        "cells": cells,
        "batches": batches,
        "nnz": nnz,
        "first_batch_s": round(first or 0.0, 3),
        "seconds": round(seconds, 3),
        "cells_per_s": round(cells / seconds, 1),
        "cpu_s": round(cpu, 3),
        **({"shm_bytes": stream.info["shm"]["bytes"], "shm_slots": stream.info["shm"]["slots"]} if "shm" in stream.info else {}),
    }


if __name__ == "__main__":
    sys.exit(main())
