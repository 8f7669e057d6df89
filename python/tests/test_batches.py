"""Dataset.batches: every cell once per epoch over ranks, each row equal to the input's, obs
labels, outputs, resuming, genes, errors; and torch_dataset's split over ranks and workers."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import deltacells
from deltacells._loader import loader_options
from deltacells._shards import EpochShards, worker_shard


def rows_of(src, cells):
    return sp.csr_matrix(src.X[cells], dtype=np.float32)


@pytest.mark.parametrize("world_size", [1, 3])
def test_an_epoch_over_every_rank_holds_every_cell_once_each_row_equal_to_the_inputs(datasets, sources, world_size) -> None:
    src = sources["pbmc"]
    ds = deltacells.open(datasets["pbmc"])
    seen: list[np.ndarray] = []
    counts = []
    for rank in range(world_size):
        stream = ds.batches(batch_size=64, seed=3, epoch=1, rank=rank, world_size=world_size, obs=["louvain"])
        got = list(stream)
        assert len(got) == len(stream) == stream.info["batches"]
        counts.append(len(got))
        for b in got:
            assert isinstance(b.X, sp.csr_matrix) and b.X.dtype == np.float32
            assert b.X.shape == (len(b.cells), src.n_vars)
            assert (b.X != rows_of(src, b.cells)).nnz == 0
            np.testing.assert_array_equal(b.labels("louvain"), src.obs["louvain"].to_numpy()[b.cells].astype(object))
            real = len(b.cells) - b.padded
            seen.append(b.cells[:real])
    assert len(set(counts)) == 1  # every rank the same number of batches
    cells = np.concatenate(seen)
    assert sorted(cells.tolist()) == list(range(src.n_obs))


def test_the_batches_are_a_function_of_seed_and_epoch(datasets) -> None:
    ds = deltacells.open(datasets["pbmc"])
    a = [b.cells.copy() for b in ds.batches(batch_size=100, seed=1, epoch=2)]
    b = [b.cells.copy() for b in ds.batches(batch_size=100, seed=1, epoch=2)]
    c = [b.cells.copy() for b in ds.batches(batch_size=100, seed=1, epoch=3)]
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))


def test_start_batch_resumes_with_the_same_remaining_batches(datasets) -> None:
    ds = deltacells.open(datasets["pbmc"])
    whole = [b.cells.copy() for b in ds.batches(batch_size=64, seed=5)]
    rest = list(ds.batches(batch_size=64, seed=5, start_batch=4))
    assert [b.index for b in rest] == list(range(4, len(whole)))
    assert all(np.array_equal(x.cells, y) for x, y in zip(rest, whole[4:], strict=True))


def test_dense_output_and_chosen_genes_in_their_order(datasets, sources) -> None:
    src = sources["pbmc"]
    genes = list(src.var_names[[10, 700, 2]])
    ds = deltacells.open(datasets["pbmc"])
    for b in ds.batches(batch_size=200, genes=genes, output="dense", shuffle=False):
        assert b.genes == genes
        assert isinstance(b.X, np.ndarray) and b.X.shape == (len(b.cells), 3)
        np.testing.assert_array_equal(b.X, src[b.cells, genes].X.toarray().astype(np.float32))
    by_position = next(iter(ds.batches(batch_size=200, genes=[10, 700, 2], shuffle=False)))
    assert by_position.genes == genes


def test_int32_counts_on_request(datasets, sources) -> None:
    b = next(iter(deltacells.open(datasets["csr"]).batches(batch_size=57, dtype=np.int32)))
    assert b.X.dtype == np.int32
    assert (b.X != sp.csr_matrix(sources["csr"].X[b.cells]).astype(np.int32)).nnz == 0


def test_drop_last_drops_the_remainder_and_padding_is_reported(datasets) -> None:
    ds = deltacells.open(datasets["csr"])  # 57 cells
    dropped = list(ds.batches(batch_size=10, drop_last=True))
    assert [len(b) for b in dropped] == [10] * 5
    # 4 tiles of 16, 16, 16, 9 on 2 ranks: rank 1 holds fewer cells and pads its last batch
    ranks = [list(ds.batches(batch_size=10, rank=r, world_size=2)) for r in range(2)]
    assert len(ranks[0]) == len(ranks[1])
    padded = sum(b.padded for r in ranks for b in r)
    assert padded == sum(s.info["padded"] for s in [ds.batches(batch_size=10, rank=r, world_size=2) for r in range(2)])
    assert sum(len(b) - b.padded for r in ranks for b in r) == 57


def test_leaving_early_stops_the_command(datasets) -> None:
    stream = deltacells.open(datasets["pbmc"]).batches(batch_size=16)
    for _ in stream:
        break
    stream.close()
    assert stream._stream._proc.poll() is not None
    with pytest.raises(RuntimeError, match="read once"):
        next(iter(stream))


def test_unknown_obs_and_options_are_refused(datasets) -> None:
    ds = deltacells.open(datasets["csr"])
    with pytest.raises(deltacells.Usage, match="no obs column"):
        list(ds.batches(obs=["nope"]))
    with pytest.raises(TypeError, match="unknown loader option"):
        ds.batches(shuffle_window=8)
    with pytest.raises(ValueError, match="not below world_size"):
        ds.batches(rank=2, world_size=2)


def test_a_killed_command_raises_never_a_short_epoch(datasets) -> None:
    stream = deltacells.open(datasets["pbmc"]).batches(batch_size=8, threads=1)
    it = iter(stream)
    next(it)
    stream._stream._proc.kill()
    with pytest.raises(deltacells.DeltacellsError):
        for _ in it:
            pass


def test_worker_shards_tile_the_ranks() -> None:
    shards = {worker_shard(r, 3, w, 2) for r in range(3) for w in range(2)}
    assert shards == {(s, 6) for s in range(6)}
    with pytest.raises(ValueError):
        worker_shard(3, 3, 0, 1)


@pytest.mark.parametrize(("world_size", "workers"), [(1, 1), (1, 3), (2, 2)])
def test_torch_datasets_split_covers_every_cell_once_over_ranks_and_workers(datasets, world_size, workers) -> None:
    """What TorchDataset runs per DataLoader worker (EpochShards), without torch."""
    ds = deltacells.open(datasets["csr"])
    options = loader_options(batch_size=5, seed=2, threads=1)
    for epoch in (0, 1):
        seen = []
        lengths = set()
        for rank in range(world_size):
            shards = EpochShards(ds, options, output="csr", dtype=np.float32, transport="pipe", rank=rank, world_size=world_size)
            shards.set_epoch(epoch)
            for worker in range(workers):
                got = list(shards.iterate(worker, workers))
                lengths.add(len(got))
                assert all(b.epoch == epoch for b in got)
                seen += [c for b in got for c in b.cells[: len(b) - b.padded].tolist()]
        assert len(lengths) == 1
        assert sorted(seen) == list(range(57))


@pytest.mark.parametrize("transport", ["shm", "pipe"])
@pytest.mark.parametrize(
    "resume",
    [{"start_batch": 3}, {"order": "elastic", "lanes": 2, "start_global_batch": 5}],
    ids=["start_batch", "start_global_batch"],
)
def test_a_resumed_epochs_start_applies_to_it_alone_and_later_epochs_hold_every_cell(datasets, transport, resume) -> None:
    """torch_dataset(epoch=e, start_batch=k): epoch e resumes after k batches, the next ones start at 0."""
    ds = deltacells.open(datasets["pbmc"])
    plain = {k: v for k, v in resume.items() if not k.startswith("start")}
    shards = EpochShards(ds, loader_options(batch_size=64, seed=4, epoch=2, threads=1, **resume), output="csr", dtype=np.float32, transport=transport)

    def shard_epoch(epoch: int) -> list[list[int]]:
        """Each batch's cells of the two workers of rank 0 of 1 (shards 0 and 1 of 2)."""
        return [b.cells.tolist() for worker in range(2) for b in shards.iterate(worker, 2)]

    def whole(epoch: int, **start: int) -> list[list[int]]:
        """The same through batches(), shard by shard."""
        return [
            b.cells.tolist()
            for shard in range(2)
            for b in ds.batches(
                batch_size=64, seed=4, epoch=epoch, rank=shard, world_size=2, threads=1, transport=transport, **plain, **start
            )
        ]

    start = {k: v for k, v in resume.items() if k.startswith("start")}
    resumed = shard_epoch(2)
    assert resumed == whole(2, **start)
    assert len(resumed) < len(whole(2))
    for epoch in (3, 4):
        shards.set_epoch(epoch)
        assert shard_epoch(epoch) == whole(epoch)
    # Back to the resumed epoch after another: a whole epoch, the resume was consumed.
    shards.set_epoch(2)
    assert shard_epoch(2) == whole(2)


def test_batches_after_a_resumed_one_start_at_the_epochs_first_batch(datasets) -> None:
    """A later epoch served by the command that streamed the resumed one starts at its start."""
    ds = deltacells.open(datasets["pbmc"])
    whole = [b.cells.tolist() for b in ds.batches(batch_size=64, seed=5, epoch=1, transport="pipe")]
    assert len(list(ds.batches(batch_size=64, seed=5, epoch=0, start_batch=4))) > 0
    later = ds.batches(batch_size=64, seed=5, epoch=1)
    assert [b.cells.tolist() for b in later] == whole
    assert [b.index for b in ds.batches(batch_size=64, seed=5, epoch=2)] == list(range(len(whole)))


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_set_epoch_reaches_a_copy_made_by_a_worker_process(datasets, start) -> None:
    import multiprocessing

    shards = EpochShards(deltacells.open(datasets["csr"]), loader_options(), output="csr", dtype=np.float32, transport="pipe")
    ctx = multiprocessing.get_context(start)
    # One queue each way: on a single one the parent could read back its own "again".
    reports, asks = ctx.Queue(), ctx.Queue()
    shards.set_epoch(7)
    proc = ctx.Process(target=_report_epoch, args=(shards, reports, asks))
    proc.start()
    assert reports.get(timeout=60) == 7
    shards.set_epoch(8)
    asks.put("again")
    assert reports.get(timeout=60) == 8
    proc.join(timeout=60)


def _report_epoch(shards, reports, asks) -> None:
    reports.put(shards.epoch)
    asks.get()
    reports.put(shards.epoch)


def _replay(tmp_path, stream_file):
    """A stand-in for node that answers --version and writes ``stream_file`` as the stream, exit 0
    (as a wrapper that lost the command's exit code would)."""
    fake = tmp_path / "fake-node"
    fake.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then echo v20.0.0; exit 0; fi\ncat {stream_file}\n')
    fake.chmod(0o755)
    return fake


def _rewrite(source, target, keep):
    """The stream in ``source`` with only the record batches ``keep(i, meta)`` allows, into ``target``."""
    import pyarrow as pa

    reader = pa.ipc.open_stream(source.read_bytes())
    with pa.OSFile(str(target), "wb") as sink, pa.ipc.new_stream(sink, reader.schema) as writer:
        i = 0
        while True:
            try:
                batch, meta = reader.read_next_batch_with_custom_metadata()
            except StopIteration:
                break
            if keep(i, meta):
                writer.write_batch(batch, custom_metadata=meta)
            i += 1


def test_a_stream_ending_cleanly_without_its_end_batch_is_an_incomplete_epoch(datasets, tmp_path, monkeypatch) -> None:
    from deltacells._node import cli_entry

    whole = tmp_path / "whole.arrows"
    with whole.open("wb") as out:
        import subprocess

        subprocess.run([deltacells.find_node().path, cli_entry(), "stream", str(datasets["pbmc"]), "--batch-size", "100", "--float32"], stdout=out, check=True)
    ds = deltacells.open(datasets["pbmc"])
    # every batch there, only the end batch missing: Arrow's end of stream looks clean
    no_end = tmp_path / "no-end.arrows"
    _rewrite(whole, no_end, lambda i, meta: meta is None or b"deltacells.end" not in meta)
    monkeypatch.setenv("DELTACELLS_NODE", str(_replay(tmp_path, no_end)))
    with pytest.raises(deltacells.IncompleteEpoch) as caught:
        list(ds.batches(batch_size=100, transport="pipe"))
    assert caught.value.received == 7 and caught.value.start_batch == 7
    # the first three batches only
    three = tmp_path / "three.arrows"
    _rewrite(whole, three, lambda i, meta: i < 3)
    monkeypatch.setenv("DELTACELLS_NODE", str(_replay(tmp_path, three)))
    got = []
    with pytest.raises(deltacells.IncompleteEpoch) as caught:
        for b in ds.batches(batch_size=100, transport="pipe"):
            got.append(b)
    assert len(got) == 3 and caught.value.start_batch == 3
    assert "start_batch=3" in (caught.value.hint or "")
    # the whole stream replayed is a whole epoch
    monkeypatch.setenv("DELTACELLS_NODE", str(_replay(tmp_path, whole)))
    assert sum(len(b) for b in ds.batches(batch_size=100, transport="pipe")) == 700
