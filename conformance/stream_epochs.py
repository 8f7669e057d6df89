"""Checks that each epoch reaches processes started before it: the example module's shared epoch
(examples/python/deltacells_stream.py), as ``DataLoader(..., persistent_workers=True)`` needs.

Usage: stream_epochs.py DATASET multiprocessing|torch
The command is run as ``$DELTACELLS stream ...`` (a command line). Prints one JSON line
{"ok": bool, "problems": [...], "checked": {...}} (or {"skipped": "why"} for ``torch`` where torch
is not importable); exit code 0 unless a check failed.

- ``multiprocessing``: two worker processes (spawn, then fork) are started once, each with the
  same ``EpochStreams``; the parent sets epochs 0, 1, 2 and each time asks the workers for their
  shard's batches. Each epoch's batches must equal a fresh stream of that epoch and shard, and
  epoch 1's order must differ from epoch 0's.
- ``torch``: the same through ``DataLoader(DeltacellsDataset(...), num_workers=2,
  persistent_workers=True)``.
"""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
import shlex
import sys

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "python")
sys.path.insert(0, EXAMPLES)
import deltacells_stream as dcs  # noqa: E402

SHARDS = 2
EPOCHS = (0, 1, 2)
OPTIONS = dict(batch_size=7, seed=5, threads=1)


def command() -> list[str]:
    return shlex.split(os.environ["DELTACELLS"])


@functools.cache
def expected(dataset: str, epoch: int, shard: int) -> list[list[int]]:
    """The cells of each batch of a fresh stream of this epoch and shard."""
    batches = dcs.iter_batches(dataset, epoch=epoch, rank=shard, world_size=SHARDS, command=command(), **OPTIONS)
    return [b.cells.tolist() for b in batches]


def worker(streams: dcs.EpochStreams, shard: int, jobs, results) -> None:
    """A persistent worker: one epoch of its shard per job, at whatever epoch is set then."""
    while jobs.get() is not None:
        results.put((shard, streams.epoch, [b.cells.tolist() for b in streams.batches(shard, SHARDS)]))


def check_multiprocessing(dataset: str, problems: list[str], checked: dict) -> None:
    for method in ("spawn", "fork"):
        ctx = multiprocessing.get_context(method)
        streams = dcs.EpochStreams(dataset, command=command(), **OPTIONS)
        results = ctx.Queue()
        queues = [ctx.Queue() for _ in range(SHARDS)]
        procs = [ctx.Process(target=worker, args=(streams, s, queues[s], results)) for s in range(SHARDS)]
        for p in procs:
            p.start()
        orders = {}
        try:
            for epoch in EPOCHS:
                streams.set_epoch(epoch)
                for q in queues:
                    q.put("epoch")
                got = dict((shard, (seen, cells)) for shard, seen, cells in (results.get(timeout=120) for _ in range(SHARDS)))
                for shard in range(SHARDS):
                    seen, cells = got[shard]
                    if seen != epoch:
                        problems.append(f"{method}: worker {shard} read epoch {seen} after set_epoch({epoch})")
                    if cells != expected(dataset, epoch, shard):
                        problems.append(f"{method}: worker {shard}'s epoch {epoch} differs from a fresh stream of epoch {epoch}")
                orders[epoch] = got[0][1]
        finally:
            for q in queues:
                q.put(None)
            for p in procs:
                p.join(timeout=60)
        if orders.get(0) == orders.get(1):
            problems.append(f"{method}: epoch 1 came in epoch 0's order")
        checked[method] = sum(len(b) for b in orders.get(2, []))


def check_torch(dataset: str, problems: list[str], checked: dict) -> None:
    from torch.utils.data import DataLoader

    ds = dcs.DeltacellsDataset(dataset, output="scipy", rank=0, world_size=1, command=command(), **OPTIONS)
    loader = DataLoader(ds, batch_size=None, num_workers=SHARDS, persistent_workers=True)
    orders = {}
    for epoch in EPOCHS:
        ds.set_epoch(epoch)
        got = sorted(b.cells.tolist() for b in loader)
        want = sorted(b for shard in range(SHARDS) for b in expected(dataset, epoch, shard))
        if got != want:
            problems.append(f"torch: epoch {epoch} through persistent workers differs from fresh streams of epoch {epoch}")
        orders[epoch] = got
    if orders[0] == orders[1]:
        problems.append("torch: epoch 1 came in epoch 0's order")
    checked["torch"] = sum(len(b) for b in orders[2])


def main() -> int:
    dataset, part = sys.argv[1], sys.argv[2]
    problems: list[str] = []
    checked: dict = {}
    if part == "torch":
        try:
            import torch  # noqa: F401
        except ImportError as err:
            print(json.dumps({"skipped": f"torch is not importable here ({err}); the multiprocessing check covers the mechanism"}))
            return 0
        check_torch(dataset, problems, checked)
    else:
        check_multiprocessing(dataset, problems, checked)
    print(json.dumps({"ok": not problems, "problems": problems[:20], "checked": checked}))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
