"""``Dataset.torch_dataset``: a ``torch.utils.data.IterableDataset`` of ready-made mini-batches.

::

    from torch.utils.data import DataLoader

    train = ds.torch_dataset(batch_size=4096, seed=0, obs=["cell_type"], output="torch_csr", threads=2)
    loader = DataLoader(train, batch_size=None, num_workers=4, persistent_workers=True)
    for epoch in range(10):
        train.set_epoch(epoch)
        for batch in loader:
            ...

Each DataLoader worker of each rank runs its own stream as one shard (see
:mod:`deltacells._shards`): every cell once per epoch across ranks and workers.
"""

from __future__ import annotations

from collections.abc import Iterator

from torch.utils.data import IterableDataset, get_worker_info

from ._batch import Batch
from ._shards import EpochShards


class TorchDataset(IterableDataset[Batch]):
    """Batches of one epoch per iteration, split across ranks (``torch.distributed``'s when
    initialised, unless given) and DataLoader workers; use ``DataLoader(ds, batch_size=None)``."""

    def __init__(self, shards: EpochShards) -> None:
        super().__init__()
        self.shards = shards

    @property
    def epoch(self) -> int:
        return self.shards.epoch

    def set_epoch(self, epoch: int) -> None:
        """The epoch of the next iteration, seen by every worker (even persistent ones)."""
        self.shards.set_epoch(epoch)

    def __iter__(self) -> Iterator[Batch]:
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        yield from self.shards.iterate(worker, workers)
