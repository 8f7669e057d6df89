"""The loader's elastic order and its mixing report through Dataset.batches and torch_dataset:
order, lanes, start_global_batch, report_mixing and each batch's global_index, every one checked
against what ``deltacells stream`` itself writes for the same flags."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pyarrow as pa
import pytest

import deltacells
from deltacells._cli import cli_entry, environment
from deltacells._shards import EpochShards
from deltacells._loader import loader_options


def command_batches(dataset, *flags: str) -> list[tuple[list[int], dict]]:
    """Each batch's cells and ``deltacells.batch`` metadata as the command writes them itself."""
    out = subprocess.run(
        [deltacells.find_node().path, cli_entry(), "stream", str(dataset), "--float32", *flags],
        stdout=subprocess.PIPE,
        env=environment(),
        check=True,
    ).stdout
    reader = pa.ipc.open_stream(out)
    got = []
    while True:
        try:
            batch, meta = reader.read_next_batch_with_custom_metadata()
        except StopIteration:
            break
        if b"deltacells.batch" in meta:
            got.append((batch.column("cell").to_pylist(), json.loads(meta[b"deltacells.batch"])))
    return got


def package_batches(stream) -> list[tuple[list[int], int | None, int]]:
    return [(b.cells.tolist(), b.global_index, b.padded) for b in stream]


@pytest.mark.parametrize("transport", ["shm", "pipe"])
def test_order_elastic_with_lanes_yields_the_commands_global_batches_on_each_rank(datasets, transport) -> None:
    ds = deltacells.open(datasets["pbmc"])
    for world in (1, 2, 4):
        for rank in range(world):
            mine = package_batches(
                ds.batches(batch_size=64, seed=2, epoch=1, rank=rank, world_size=world, order="elastic", lanes=4, transport=transport)
            )
            flags = ["--batch-size", "64", "--seed", "2", "--epoch", "1", "--order", "elastic", "--lanes", "4"]
            flags += ["--rank", str(rank), "--world-size", str(world)]
            theirs = command_batches(datasets["pbmc"], *flags)
            assert [(cells, meta["global_index"], meta["padded"]) for cells, meta in theirs] == mine
            assert [g for _, g, _ in mine] == list(range(rank, rank + world * len(mine), world))


def test_the_ranks_of_any_world_size_dividing_lanes_yield_the_same_global_batches(datasets) -> None:
    ds = deltacells.open(datasets["pbmc"])

    def by_global(world: int) -> dict[int, list[int]]:
        out = {}
        for rank in range(world):
            for b in ds.batches(batch_size=64, seed=4, rank=rank, world_size=world, order="elastic", lanes=4):
                out[b.global_index] = b.cells.tolist()
        return out

    assert by_global(1) == by_global(2) == by_global(4)


def test_start_global_batch_resumes_on_another_world_size_as_the_command_does(datasets) -> None:
    ds = deltacells.open(datasets["pbmc"])
    whole = {b.global_index: b.cells.tolist() for b in ds.batches(batch_size=64, seed=6, order="elastic", lanes=4)}
    # 3 batches per rank on 2 ranks consumed: 4 ranks take over from global batch 6.
    resumed = {}
    for rank in range(4):
        stream = ds.batches(batch_size=64, seed=6, rank=rank, world_size=4, order="elastic", lanes=4, start_global_batch=6)
        mine = package_batches(stream)
        assert len(mine) == len(stream)
        flags = ["--batch-size", "64", "--seed", "6", "--order", "elastic", "--lanes", "4"]
        flags += ["--rank", str(rank), "--world-size", "4", "--start-global-batch", "6"]
        assert [(c, m["global_index"], m["padded"]) for c, m in command_batches(datasets["pbmc"], *flags)] == mine
        for cells, g, padded in mine:
            if padded < len(cells):
                resumed[g] = cells
    assert resumed == {g: cells for g, cells in whole.items() if g >= 6}


def test_report_mixing_gives_the_commands_report_once_the_stream_is_closed(datasets, tmp_path) -> None:
    ds = deltacells.open(datasets["pbmc"])
    for transport in ("shm", "pipe"):
        stream = ds.batches(batch_size=64, seed=1, obs=["louvain"], report_mixing="louvain", transport=transport)
        assert stream.mixing is None
        cells = [b.cells.copy() for b in stream]
        assert stream.mixing is not None and stream.mixing["complete"] is True
        file = tmp_path / f"mixing-{transport}.json"
        command_batches(datasets["pbmc"], "--batch-size", "64", "--seed", "1", "--report-mixing", f"louvain={file}")
        assert stream.mixing == json.loads(file.read_text())
        assert stream.mixing["batches"] == len(cells)
    # Left early: the report of the batches taken, said to be part of the epoch.
    stream = ds.batches(batch_size=64, seed=1, report_mixing="louvain")
    with stream:
        next(iter(stream))
    assert stream.mixing is not None and stream.mixing["complete"] is False


def test_a_mixing_report_never_keeps_the_command_for_the_next_epoch(datasets) -> None:
    ds = deltacells.open(datasets["pbmc"])
    first = ds.batches(batch_size=64, report_mixing="louvain")
    pid = first._stream._proc.pid
    list(first)
    second = ds.batches(batch_size=64, epoch=1, report_mixing="louvain")
    assert second._stream._proc.pid != pid
    list(second)
    assert second.mixing is not None and second.mixing["epoch"] == 1


def test_torch_shards_pass_the_elastic_order_on(datasets) -> None:
    ds = deltacells.open(datasets["pbmc"])
    options = loader_options(batch_size=64, seed=3, order="elastic", lanes=4)
    shards = EpochShards(ds, options, output="csr", dtype=np.float32, transport="shm", rank=0, world_size=2)
    # Worker 1 of 2 on rank 0 of 2: shard 1 of 4, global batches 1, 5, 9, ...
    mine = [(b.cells.tolist(), b.global_index) for b in shards.iterate(1, 2)]
    flags = ["--batch-size", "64", "--seed", "3", "--order", "elastic", "--lanes", "4", "--rank", "1", "--world-size", "4"]
    assert [(c, m["global_index"]) for c, m in command_batches(datasets["pbmc"], *flags)] == mine


def test_torch_shards_print_each_workers_mixing_report_on_stderr(datasets, capsys) -> None:
    ds = deltacells.open(datasets["pbmc"])
    options = loader_options(batch_size=64, seed=3, report_mixing="louvain")
    shards = EpochShards(ds, options, output="csr", dtype=np.float32, transport="shm", rank=0, world_size=1)
    batches = len(list(shards.iterate(0, 2)))
    err = capsys.readouterr().err
    assert f"mixing of louvain over {batches} batches" in err


def test_the_default_order_has_no_global_index(datasets) -> None:
    b = next(iter(deltacells.open(datasets["csr"]).batches(batch_size=10)))
    assert b.global_index is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"order": "random"}, "order must be 'default' or 'elastic'"),
        ({"lanes": 4}, "lanes applies to order='elastic'"),
        ({"start_global_batch": 2}, "start_global_batch applies to order='elastic'"),
        ({"order": "elastic", "lanes": 0}, "lanes must be at least 1"),
        ({"order": "elastic", "start_global_batch": -1}, "must not be negative"),
        ({"order": "elastic", "start_global_batch": 2, "start_batch": 1}, "say the same thing"),
    ],
)
def test_elastic_options_out_of_place_are_refused_naming_what_works(datasets, options, message) -> None:
    ds = deltacells.open(datasets["csr"])
    with pytest.raises(ValueError, match=message):
        ds.batches(batch_size=10, **options)


def test_lanes_that_the_world_size_does_not_divide_are_the_commands_usage_error(datasets) -> None:
    ds = deltacells.open(datasets["csr"])
    with pytest.raises(deltacells.DeltacellsError, match="lanes"):
        list(ds.batches(batch_size=10, rank=0, world_size=3, order="elastic", lanes=4))
