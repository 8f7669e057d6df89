"""The torch outputs and torch_dataset under a DataLoader with workers (where torch is importable)."""

from __future__ import annotations

import numpy as np
import pytest

import deltacells

torch = pytest.importorskip("torch", reason="torch is not installed here (about 540 MB): the torch outputs and DataLoader are tested where it is")


def test_torch_outputs_equal_the_csr_batches(datasets) -> None:
    ds = deltacells.open(datasets["csr"])
    ref = [b.X.toarray() for b in ds.batches(batch_size=20, seed=1)]
    for output in ("torch_csr", "torch_dense"):
        got = [b.X.to_dense().numpy() for b in ds.batches(batch_size=20, seed=1, output=output)]
        assert all(np.array_equal(x, y) for x, y in zip(got, ref, strict=True))


def test_a_dataloader_with_workers_yields_every_cell_once_per_epoch(datasets) -> None:
    from torch.utils.data import DataLoader

    ds = deltacells.open(datasets["csr"])
    train = ds.torch_dataset(batch_size=5, seed=0, threads=1, output="torch_csr")
    loader = DataLoader(train, batch_size=None, num_workers=2, persistent_workers=True)
    firsts = []
    for epoch in range(2):
        train.set_epoch(epoch)
        batches = list(loader)
        assert all(b.epoch == epoch for b in batches)
        cells = sorted(c for b in batches for c in b.cells[: len(b) - b.padded].tolist())
        assert cells == list(range(57))
        firsts.append(batches[0].cells.tolist())
    assert firsts[0] != firsts[1]
