"""The shared-memory transport (transport="shm", the default): batches equal the pipe's field by
field; X wraps the shared memory without a copy; a batch the caller holds is never overwritten
(the command waits, or spills; copy=True frees the slot at once); the ring is bounded and its
memory announced; a consumer killed stops the command and leaves nothing behind; a command killed
makes the consumer raise; two streams never share memory; a forked process never releases the
parent's batches."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import deltacells

CASES = [
    ("encodings", dict(batch_size=3, seed=2, obs=["cat", "Int32", "boolean", "text", "f64"])),
    ("pbmc", dict(batch_size=64, seed=3, epoch=1, obs=["louvain"], rank=1, world_size=3)),
    ("pbmc", dict(batch_size=50, seed=1, drop_last=True, start_batch=2, dtype=np.int32)),
    ("pbmc", dict(batch_size=40, seed=4, genes=[700, 10, 2, 33])),  # the copying path: genes left out
    ("csr", dict(batch_size=20, seed=5, sort_indices=True, buffer_tiles=1)),
    ("csr", dict(batch_size=16, seed=6, output="dense", shuffle=False)),
]


def fields(b) -> dict:
    """Everything a batch holds, as plain values."""
    x = b.X.toarray() if hasattr(b.X, "toarray") else np.asarray(b.X)
    out = {
        "X": x.tolist(),
        "dtype": str(x.dtype),
        "cells": b.cells.tolist(),
        "obs": {k: [None if (isinstance(v, float) and np.isnan(v)) else v for v in np.asarray(a).tolist()] for k, a in b.obs.items()},
        "categories": b.categories,
        "genes": b.genes,
        "epoch": b.epoch,
        "index": b.index,
        "padded": b.padded,
    }
    if hasattr(b.X, "indptr"):
        out.update(indptr=b.X.indptr.tolist(), indices=b.X.indices.tolist(), data=b.X.data.tolist())
    return out


def epoch(ds, transport: str, **kw) -> list[dict]:
    return [fields(b) for b in ds.batches(transport=transport, **kw)]


@pytest.mark.parametrize("name,options", CASES)
def test_every_batch_equals_the_pipe_transports_field_by_field(datasets, name, options) -> None:
    ds = deltacells.open(datasets[name])
    want = epoch(ds, "pipe", **options)
    assert want
    assert epoch(ds, "shm", **options) == want
    # a ring as small as the loader allows, every slot reused
    stream = ds.batches(transport="shm", **options)
    small = stream.info["shm"]["min_free"] + 1
    stream.close()
    assert epoch(ds, "shm", ring=small, **options) == want


def _memfd_spans() -> list[tuple[int, int]]:
    """The address ranges of this process's mappings of the package's memfds."""
    spans = []
    for line in Path("/proc/self/maps").read_text().splitlines():
        if "memfd:deltacells-batches" in line:
            lo, hi = line.split()[0].split("-")
            spans.append((int(lo, 16), int(hi, 16)))
    return spans


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="memfd is Linux's")
def test_x_wraps_the_shared_memory_the_command_wrote_without_a_copy(datasets) -> None:
    import scipy.sparse as sp

    stream = deltacells.open(datasets["pbmc"]).batches(batch_size=64, seed=1)
    batch = next(iter(stream))
    assert isinstance(batch.X, sp.csr_matrix)
    spans = _memfd_spans()
    for values in (batch.X.indices, batch.X.data):
        at = values.__array_interface__["data"][0]
        assert any(lo <= at and at + values.nbytes <= hi for lo, hi in spans), "X is a view of the shared memory"
        assert values.flags.writeable
    batch.X.sort_indices()  # in place, in the batch's own slot
    stream.close()


def test_the_ring_is_bounded_and_its_memory_announced(datasets) -> None:
    ds = deltacells.open(datasets["pbmc"])
    stream = ds.batches(batch_size=64, ring=12)
    shm = stream.info["shm"]
    assert shm["slots"] == 12 and shm["bytes"] == 12 * shm["slot_bytes"]
    assert shm["capacity"] >= 64 and shm["cells"] == 64
    stream.close()
    with pytest.raises(deltacells.Usage, match="--ring 1 is too few slots.*give --ring"):
        list(ds.batches(batch_size=64, ring=1))
    with pytest.raises(ValueError, match="ring= sets the slots of transport='shm'"):
        ds.batches(batch_size=64, transport="pipe", ring=4)


def test_batches_held_are_never_overwritten_however_many_the_caller_keeps(datasets) -> None:
    ds = deltacells.open(datasets["pbmc"])
    want = epoch(ds, "pipe", batch_size=16, seed=7, buffer_tiles=1)
    stream = ds.batches(batch_size=16, seed=7, buffer_tiles=1)
    ring = stream.info["shm"]["min_free"] + 1
    stream.close()
    # every batch kept: past the ring's slots the command sends them whole
    kept = list(ds.batches(batch_size=16, seed=7, buffer_tiles=1, ring=ring))
    assert len(kept) > 3 * ring
    assert [fields(b) for b in kept] == want
    # some kept, the others dropped at once: their slots are reused, the kept ones never
    held = []
    for i, b in enumerate(ds.batches(batch_size=16, seed=7, buffer_tiles=1, ring=ring)):
        if i % 5 == 0:
            held.append((i, b))
        del b
    assert [fields(b) for _, b in held] == [want[i] for i, _ in held]


def _in_shared_memory(values: np.ndarray) -> bool:
    at = values.__array_interface__["data"][0]
    return any(lo <= at < hi for lo, hi in _memfd_spans())


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="memfd is Linux's")
def test_cells_and_category_codes_come_from_the_slot_as_copies_that_never_hold_it(datasets) -> None:
    ds = deltacells.open(datasets["pbmc"])
    stream = ds.batches(batch_size=64, seed=2, obs=["louvain"])
    assert set(stream.info["shm"]["obs"]) == {"louvain"}
    parts = next(iter(stream._stream))
    # the message carried no rows: its cells and codes were read from the slot
    assert parts.meta["size"] == 64 and len(parts.cells) == 64 and len(parts.obs["louvain"]) == 64
    assert _in_shared_memory(parts.data)
    assert not _in_shared_memory(parts.cells) and not _in_shared_memory(parts.obs["louvain"])
    del parts
    stream.close()
    # the labels of every batch kept, each batch dropped: no slot stays held, nothing comes whole
    stream = ds.batches(batch_size=64, seed=2, obs=["louvain"])
    labels = [b.obs["louvain"] for b in stream]
    assert stream._stream._releases.held == 0
    want = [b.obs["louvain"].tolist() for b in ds.batches(batch_size=64, seed=2, obs=["louvain"], transport="pipe")]
    assert [a.tolist() for a in labels] == want


def test_a_torn_or_out_of_range_slot_descriptor_is_refused_with_what_it_names(datasets) -> None:
    import pyarrow as pa

    stream = deltacells.open(datasets["pbmc"]).batches(batch_size=64, seed=2, obs=["louvain"])
    shm = stream._stream
    parts = next(iter(shm))
    meta = parts.meta
    no_rows = pa.RecordBatch.from_arrays([pa.array([], type=f.type) for f in shm._reader.schema], schema=shm._reader.schema)
    layout = stream.info["shm"]
    for forged, says in [
        ({"slot": layout["slots"]}, f"names slot {layout['slots']} of {layout['slots']}"),
        ({"size": layout["cells"] + 1}, f"with {layout['cells'] + 1} cells"),
        ({"seq": meta["seq"] + 1}, f"slot {meta['slot']} holds batch {meta['index']} \\(sequence {meta['seq']}, 64 cells\\) where the stream announced"),
        ({"size": 63}, "where the stream announced .*63 cells"),
    ]:
        with pytest.raises(deltacells.IncompleteEpoch, match=says):
            shm._parts(no_rows, {**meta, **forged})
    # a message with rows that says its rows are in the slot
    with pytest.raises(deltacells.IncompleteEpoch, match="1 rows in its message"):
        shm._parts(pa.RecordBatch.from_pylist([{"cell": 1}]), meta)
    del parts
    stream.close()


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="memfd is Linux's")
def test_copy_gives_each_batch_its_own_arrays_and_frees_its_slot_at_once(datasets) -> None:
    ds = deltacells.open(datasets["pbmc"])
    stream = ds.batches(batch_size=16, seed=7, copy=True)
    kept = []
    for b in stream:
        kept.append(b)
        assert not any(_in_shared_memory(a) for a in (b.X.data, b.X.indices, b.X.indptr, b.cells))
        assert stream._stream._releases.held == 0
    assert [fields(b) for b in kept] == epoch(ds, "pipe", batch_size=16, seed=7)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def _wait_gone(pid: int, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def _shm_names() -> set[str]:
    return {p.name for p in Path("/dev/shm").iterdir()} if Path("/dev/shm").is_dir() else set()


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
@pytest.mark.parametrize("how", ["killed", "exits"])
def test_a_consumer_killed_or_gone_stops_the_command_and_leaves_no_memory_behind(datasets, how) -> None:
    before = _shm_names()
    child = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(Path(deltacells.__file__).parents[1])!r})
        import deltacells
        stream = deltacells.open({str(datasets["pbmc"])!r}).batches(batch_size=64, buffer_tiles=1, threads=1, ring=4)
        it = iter(stream)
        held = [next(it), next(it)]  # holding 2 of 4 slots: the command fills 2 more, waits
        print(stream._stream._proc.pid, flush=True)
        if {how!r} == "exits":
            import os
            os._exit(0)  # no cleanup: as a crash would leave it
        time.sleep(600)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    command = int(proc.stdout.readline())
    assert _alive(command)
    if how == "killed":
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert _wait_gone(command), "the command stopped once its consumer was gone"
    assert _shm_names() <= before, "nothing left in /dev/shm"


def test_a_command_killed_mid_epoch_raises_and_the_batches_held_stay_whole(datasets) -> None:
    ds = deltacells.open(datasets["pbmc"])
    want = epoch(ds, "pipe", batch_size=8, seed=1)
    stream = ds.batches(batch_size=8, seed=1, threads=1)
    it = iter(stream)
    held = [next(it), next(it)]
    stream._stream._proc.kill()
    with pytest.raises(deltacells.DeltacellsError):
        for b in it:
            held.append(b)
    assert [fields(b) for b in held] == want[: len(held)]


def test_two_streams_at_once_never_share_memory(datasets) -> None:
    ds = deltacells.open(datasets["pbmc"])
    a_want = epoch(ds, "pipe", batch_size=32, seed=1)
    b_want = epoch(ds, "pipe", batch_size=32, seed=2)
    a, b = iter(ds.batches(batch_size=32, seed=1)), iter(ds.batches(batch_size=32, seed=2))
    got_a, got_b = [], []
    for x, y in zip(a, b, strict=True):  # interleaved, both holding every batch
        got_a.append(x)
        got_b.append(y)
    assert [fields(x) for x in got_a] == a_want and [fields(y) for y in got_b] == b_want


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_process_dropping_the_parents_batches_never_releases_them(datasets) -> None:
    ds = deltacells.open(datasets["pbmc"])
    want = epoch(ds, "pipe", batch_size=64, seed=3, buffer_tiles=1)
    stream = ds.batches(batch_size=64, seed=3, buffer_tiles=1, ring=4)
    it = iter(stream)
    held = [next(it), next(it)]
    pid = os.fork()
    if pid == 0:  # the child drops its copies of the batches: their finalizers run here
        del held[:]
        gc.collect()
        os._exit(0)
    os.waitpid(pid, 0)
    rest = [fields(b) for b in it]  # the slots of other batches are reused meanwhile
    assert [fields(b) for b in held] == want[:2]
    assert rest == want[2:]


def test_the_next_epoch_is_served_by_the_same_command_and_batches_kept_from_the_last_stay_whole(datasets) -> None:
    ds = deltacells.open(datasets["pbmc"])
    want = {e: epoch(ds, "pipe", batch_size=64, seed=2, epoch=e) for e in range(3)}
    first = ds.batches(batch_size=64, seed=2, epoch=0)
    kept = [b for i, b in enumerate(first) if i in (3, 4)]  # two batches of epoch 0 kept
    pid = first._stream._proc.pid
    for e in (1, 2):
        stream = ds.batches(batch_size=64, seed=2, epoch=e)
        assert stream._stream._proc.pid == pid, "the command waiting after the last epoch serves this one"
        assert stream.info["epoch"] == e and len(stream) == len(want[e])
        assert [fields(b) for b in stream] == want[e]
    assert [fields(b) for b in kept] == want[0][3:5]


def test_an_epoch_left_early_other_options_or_a_command_gone_start_a_new_command(datasets) -> None:
    ds = deltacells.open(datasets["pbmc"])
    want = {e: epoch(ds, "pipe", batch_size=64, seed=4, epoch=e) for e in range(3)}
    stream = ds.batches(batch_size=64, seed=4, epoch=0)
    for _ in stream:
        break  # left early: the command stops
    stream.close()
    left = stream._stream._proc
    assert left.poll() is not None
    whole = ds.batches(batch_size=64, seed=4, epoch=1)
    assert whole._stream._proc is not left
    assert [fields(b) for b in whole] == want[1]
    other = ds.batches(batch_size=64, seed=5, epoch=1)  # other options: not that command
    assert other._stream._proc is not whole._stream._proc
    other.close()
    # the command kept after epoch 1 killed while it waits: epoch 2 comes whole from a new one
    kept = whole._stream._proc
    kept.kill()
    kept.wait()
    again = ds.batches(batch_size=64, seed=4, epoch=2)
    assert again._stream._proc is not kept
    assert [fields(b) for b in again] == want[2]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_process_never_takes_the_command_its_parent_keeps_between_epochs(datasets) -> None:
    ds = deltacells.open(datasets["pbmc"])
    want = {e: epoch(ds, "pipe", batch_size=64, seed=6, epoch=e) for e in range(3)}
    first = ds.batches(batch_size=64, seed=6, epoch=0)
    assert [fields(b) for b in first] == want[0]
    kept = first._stream._proc.pid
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child's epoch 1: a command of its own, equal to the pipe's
        os.close(read)
        stream = ds.batches(batch_size=64, seed=6, epoch=1)
        ok = stream._stream._proc.pid != kept and [fields(b) for b in stream] == want[1]
        os.write(write, b"1" if ok else b"0")
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"
    os.close(read)
    stream = ds.batches(batch_size=64, seed=6, epoch=2)
    assert stream._stream._proc.pid == kept
    assert [fields(b) for b in stream] == want[2]
