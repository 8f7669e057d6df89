"""How ``torch_dataset`` splits an epoch across ranks and DataLoader workers (without torch).

Worker ``w`` of ``W`` on rank ``r`` of ``R`` streams shard ``r * W + w`` of ``R * W``: each shard
reads only its own tiles, every shard yields the same number of batches (the command pads a short
shard by repeating its cells, or cuts with ``drop_last``), and together they hold every cell of
the epoch exactly once. The shuffle is a function of the seed and the epoch only, so the processes
agree on it without talking to each other.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ._batch import Batch
from ._loader import BatchStream, LoaderOptions

if TYPE_CHECKING:
    from .dataset import Dataset


def worker_shard(rank: int, world_size: int, worker: int, workers: int) -> tuple[int, int]:
    """``(shard, shards)`` of DataLoader worker ``worker`` of ``workers`` on rank ``rank`` of ``world_size``."""
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is not below world_size {world_size}")
    if not 0 <= worker < workers:
        raise ValueError(f"worker {worker} is not below workers {workers}")
    return rank * workers + worker, world_size * workers


def distributed(rank: int | None, world_size: int | None) -> tuple[int, int]:
    """The rank and world size: those given, else torch.distributed's when it is initialised, else 0 of 1."""
    if rank is not None and world_size is not None:
        return rank, world_size
    dist: Any = None
    try:
        import torch.distributed as dist
    except ImportError:
        pass
    on = dist is not None and dist.is_available() and dist.is_initialized()
    return (
        rank if rank is not None else (dist.get_rank() if on else 0),
        world_size if world_size is not None else (dist.get_world_size() if on else 1),
    )


class EpochShards:
    """The epochs of a dataset split into shards; what :class:`deltacells.torch.TorchDataset` runs.

    The epoch lives in shared memory (``set_epoch`` in the main process reaches DataLoader workers
    that persist across epochs); everything else is fixed when made. A resume (``start_batch`` or
    ``start_global_batch``) is the epoch made with's alone: once ``set_epoch`` moves to another
    epoch, every epoch starts at its first batch (also that one again).
    """

    def __init__(
        self,
        dataset: Dataset,
        options: LoaderOptions,
        *,
        output: str,
        dtype: Any,
        transport: str,
        ring: int | None = None,
        copy: bool = False,
        rank: int | None = None,
        world_size: int | None = None,
    ) -> None:
        self.dataset = dataset
        self.options = options
        self.output, self.dtype, self.transport, self.ring, self.copy = output, dtype, transport, ring, copy
        self.rank, self.world_size = rank, world_size
        context = multiprocessing.get_context()
        self._epoch = context.Value("q", options.epoch, lock=False)
        # Shared as the epoch is: a worker persisting across epochs sees the resume consumed.
        resumes = options.start_batch > 0 or options.start_global_batch is not None
        self._resuming = context.Value("b", resumes, lock=False)

    @property
    def epoch(self) -> int:
        return int(self._epoch.value)

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration streams (call it before each epoch, as with ``DistributedSampler``)."""
        if epoch < 0:
            raise ValueError(f"epoch must not be negative, got {epoch}")
        if epoch != self.options.epoch:
            self._resuming.value = False
        self._epoch.value = epoch

    def stream(self, worker: int = 0, workers: int = 1) -> BatchStream:
        """The batch stream of DataLoader worker ``worker`` of ``workers`` on this rank."""
        rank, world = distributed(self.rank, self.world_size)
        shard, shards = worker_shard(rank, world, worker, workers)
        options = self.options.replace(epoch=self.epoch, rank=shard, world_size=shards)
        if not self._resuming.value:
            options = options.replace(start_batch=0, start_global_batch=None)
        return self.dataset._stream(
            options,
            output=self.output,
            dtype=self.dtype,
            transport=self.transport,
            ring=self.ring,
            copy=self.copy,
            mixing_report=False,
        )

    def iterate(self, worker: int = 0, workers: int = 1) -> Iterator[Batch]:
        yield from self.stream(worker, workers)
