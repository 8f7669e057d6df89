"""Shuffled mini-batches of a deltacells dataset in Python, decoded by ``deltacells stream``.

``deltacells stream`` (the Node command) reads a dataset (a folder, ``s3://`` or ``http(s)://``),
shuffles, shards and decodes it and writes one Arrow record batch per mini-batch to its stdout.
This module starts that command and turns its batches into what a training loop consumes; nothing
is reimplemented in Python, and only pyarrow and numpy are needed (scipy for sparse batches, torch
for :class:`DeltacellsDataset`).

Without torch::

    from deltacells_stream import iter_batches

    for batch in iter_batches("s3://bucket/atlas", batch_size=4096, obs=["cell_type"], seed=0, epoch=0):
        batch.X            # scipy.sparse.csr_matrix, float32, cells x genes (batch.genes)
        batch.cells        # int64 global cell numbers
        batch.obs["cell_type"]   # int codes; labels in batch.categories["cell_type"]

With torch, one ``deltacells stream`` process per rank and per DataLoader worker::

    from torch.utils.data import DataLoader
    from deltacells_stream import DeltacellsDataset

    ds = DeltacellsDataset("s3://bucket/atlas", batch_size=4096, obs=["cell_type"], output="torch_csr")
    loader = DataLoader(ds, batch_size=None, num_workers=4, persistent_workers=True)   # batches come ready-made
    for epoch in range(10):
        ds.set_epoch(epoch)   # shared memory: reaches the workers, persistent ones too
        for batch in loader:
            ...

Process ``p`` of ``P`` (``P`` = world size x workers per rank, ``p`` = rank x workers + worker id)
runs ``deltacells stream --rank p --world-size P``: each reads only its own tiles of the epoch, all
yield the same number of batches (the command pads the epoch by repeating cells, or drops the
remainder with ``drop_last``), and together they cover every cell of the epoch exactly once.

The command is found as ``$DELTACELLS`` (a command line, split like a shell would) or ``deltacells``
on the PATH. Its errors come back as :class:`StreamError` with the command's message; a stream that
ends without its end batch (the command killed mid-epoch) raises :class:`IncompleteEpoch`; stopping
early (``break``) closes the pipe and the command exits quietly.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.ipc

try:
    import torch
    from torch.utils.data import IterableDataset, get_worker_info
except ImportError:  # torch is optional: iter_batches works without it
    torch = None
    IterableDataset = object  # type: ignore[assignment,misc]

Output = Literal["scipy", "numpy", "arrow", "torch_csr", "torch_dense"]

#: Linux's F_SETPIPE_SZ (Python >= 3.10 names it fcntl.F_SETPIPE_SZ): a 1 MiB pipe instead of 64 KiB
#: means 16x fewer wake-ups of both processes for the same bytes.
_PIPE_BYTES = 1 << 20

#: Message bodies at least this large (a batch's: ~50 MB at 4,096 cells) are read into recycled memory.
_RECYCLE_FROM = 1 << 20
#: Recycled body buffers kept at most (the batch a loop holds, the one being read, one spare).
_RECYCLE_KEEP = 4


class _ArrowPipe:
    """The command's stdout for pyarrow's reader, each message body read into a buffer of Arrow's own
    memory pool (``read_buffer``, which pyarrow prefers to ``read``).

    Read through a Python file, each 50 MB body became a fresh ``bytes`` object: memory that malloc
    maps anew and the kernel faults in page by page for every batch (half of this side's CPU time
    in the loader benchmark). Arrow's pool keeps freed blocks for the next bodies. The buffers are
    writable and owned here, so :meth:`writable` can give numpy views of them that scipy may sort in
    place, without the copies read-only Arrow buffers needed.
    """

    def __init__(self, raw: Any):
        self._raw = raw
        self.closed = False
        self._last: pa.Buffer | None = None
        self._bodies: list[bytearray] = []

    def _body(self, nbytes: int) -> pa.Buffer:
        """A writable buffer of ``nbytes`` for a large message body, in memory no batch still uses.

        Arrow's pool (mimalloc) gives a freed 50 MB block back to the system, so every body was new
        memory that the kernel zeroed as the pipe's data came in: 2 MB huge pages cleared one by one,
        a third of this process's CPU per epoch. The bodies are now read into a few bytearrays kept
        here, each reused once nothing refers to it any more: a record batch, an array or a numpy view
        made from a body holds a reference to its bytearray until it is gone, so ``sys.getrefcount``
        (the list's reference and the call's) says when a bytearray is free.
        """
        bodies = self._bodies
        for i in range(len(bodies)):
            if sys.getrefcount(bodies[i]) == 2 and len(bodies[i]) >= nbytes + 64:
                bodies.append(bodies.pop(i))  # most recently used last
                break
        else:
            # Room for somewhat larger batches, and for aligning the start to 64 bytes as Arrow's pool does.
            bodies.append(bytearray(nbytes + (nbytes >> 3) + 64))
            if len(bodies) > _RECYCLE_KEEP:
                del bodies[0]  # the least recently used: freed once nothing refers to it
        body = bodies[-1]
        pad = -pa.py_buffer(body).address % 64
        return pa.py_buffer(memoryview(body)[pad : pad + nbytes])

    def read_buffer(self, nbytes: int) -> pa.Buffer:
        buf = self._body(nbytes) if nbytes >= _RECYCLE_FROM else pa.allocate_buffer(nbytes)
        view = memoryview(buf)
        got = 0
        while got < nbytes:
            n = self._raw.readinto(view[got:])
            if not n:
                break
            got += n
        view.release()
        self._last = buf if got == nbytes else buf.slice(0, got)
        return self._last

    def read(self, nbytes: int = -1) -> bytes:
        if nbytes < 0:
            return self._raw.read()
        return self.read_buffer(nbytes).to_pybytes()

    def writable(self, values: np.ndarray) -> np.ndarray:
        """``values`` (a numpy view of the last message read) as a writable view of the same memory;
        a copy when it lies elsewhere."""
        body = self._last
        if body is not None and values.size:
            base = body.address
            at = values.__array_interface__["data"][0]
            if base <= at and at + values.nbytes <= base + body.size:
                return np.frombuffer(memoryview(body), dtype=values.dtype, count=values.size, offset=at - base)
        return values.copy()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True


class StreamError(RuntimeError):
    """``deltacells stream`` failed: the message is what it printed on stderr."""

    def __init__(self, message: str, returncode: int):
        super().__init__(message)
        self.returncode = returncode


class IncompleteEpoch(StreamError):
    """The stream ended without its end batch (``deltacells.end``): it holds part of an epoch only.

    The command writes that batch after the epoch's last one; Arrow's own end of stream cannot tell,
    since a reader sees a command killed between two batches as a clean end. ``received`` batches
    came; ``start_batch`` resumes after them."""

    def __init__(self, message: str, returncode: int, received: int, start_batch: int):
        super().__init__(message, returncode)
        self.received = received
        self.start_batch = start_batch


#: The metadata key of the stream's last record batch (no rows), which only a complete epoch carries.
END_KEY = b"deltacells.end"


def deltacells_command() -> list[str]:
    """The command that runs deltacells: ``$DELTACELLS`` split like a shell would, else ``deltacells`` on the PATH."""
    env = os.environ.get("DELTACELLS")
    if env:
        return shlex.split(env)
    found = shutil.which("deltacells")
    if found is None:
        raise FileNotFoundError(
            "deltacells is not on the PATH: install it (npm install -g @deltacells/cli) or set DELTACELLS "
            "to the command that runs it (in a checkout's root: export DELTACELLS=\"node $PWD/packages/cli/bin/deltacells.js\")"
        )
    return [found]


def stream_arguments(
    dataset: str,
    *,
    batch_size: int = 4096,
    shuffle: bool = True,
    seed: int = 0,
    epoch: int = 0,
    rank: int = 0,
    world_size: int = 1,
    drop_last: bool = False,
    obs: Sequence[str] = (),
    genes_file: str | None = None,
    start_batch: int = 0,
    dense: bool = False,
    sort_indices: bool = False,
    threads: int | None = None,
    float32: bool = False,
) -> list[str]:
    """The ``deltacells stream`` arguments for these options (the command's own spelling)."""
    args = ["stream", dataset, "--batch-size", str(batch_size), "--seed", str(seed), "--epoch", str(epoch)]
    if not shuffle:
        args.append("--no-shuffle")
    if world_size != 1 or rank != 0:
        args += ["--rank", str(rank), "--world-size", str(world_size)]
    if drop_last:
        args.append("--drop-last")
    if obs:
        args += ["--obs", ",".join(obs)]
    if genes_file is not None:
        args += ["--genes", genes_file]
    if start_batch:
        args += ["--start-batch", str(start_batch)]
    if dense:
        args.append("--dense")
    if sort_indices:
        args.append("--sort-indices")
    if threads is not None:
        args += ["--threads", str(threads)]
    if float32:
        args.append("--float32")
    return args


@dataclass
class Batch:
    """One mini-batch: ``X`` is cells x genes in the requested output type."""

    cells: np.ndarray
    """int64 global cell numbers (row i of X is cell cells[i]); a padded epoch repeats some."""
    X: Any
    genes: list[str]
    """The gene of each column of X."""
    obs: dict[str, np.ndarray] = field(default_factory=dict)
    """obs columns: numbers, or the integer codes of a categorical (-1 = missing)."""
    categories: dict[str, list[str]] = field(default_factory=dict)
    """The labels of each categorical obs column (code i is categories[name][i])."""
    record_batch: pa.RecordBatch | None = None


def _view(array: pa.Array, dtype: Any) -> np.ndarray:
    """A primitive Arrow array's values as a numpy view of its data buffer (nulls not looked at).

    Not ``Array.to_numpy``: its first call imports pandas and pyarrow.compute (0.3-0.5 s on an
    idle machine, over a second on a loaded one), which would land on the first batch of every
    process; nothing here needs them.
    """
    dt = np.dtype(dtype)
    return np.frombuffer(array.buffers()[1], dtype=dt, count=len(array), offset=array.offset * dt.itemsize)


def _list_parts(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A list<int32> column's offsets (from 0) and values, as numpy views of the (read-only) Arrow buffers."""
    offsets = _view(column.offsets, np.int32)
    values = column.values
    values = _view(values, values.type.to_pandas_dtype())
    start, end = int(offsets[0]), int(offsets[-1])
    return (offsets - start if start else offsets), values[start:end]


def _codes(indices: pa.Array) -> np.ndarray:
    """A dictionary column's int32 codes, -1 where missing (read from the buffers, see :func:`_view`)."""
    codes = _view(indices, indices.type.to_pandas_dtype())
    if indices.null_count == 0:
        return codes
    bits = np.unpackbits(np.frombuffer(indices.buffers()[0], dtype=np.uint8), bitorder="little")
    return np.where(bits[indices.offset : indices.offset + len(indices)] == 1, codes, codes.dtype.type(-1))


def _obs_columns(batch: pa.RecordBatch) -> tuple[dict[str, np.ndarray], dict[str, list[str]]]:
    obs: dict[str, np.ndarray] = {}
    categories: dict[str, list[str]] = {}
    for name, column in zip(batch.schema.names, batch.columns, strict=True):
        if name in ("cell", "indices", "counts"):
            continue
        if pa.types.is_dictionary(column.type):
            obs[name] = _codes(column.indices)
            categories[name] = column.dictionary.to_pylist()
        elif column.null_count == 0 and (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
            obs[name] = _view(column, column.type.to_pandas_dtype())
        else:  # missing numbers (as NaN), bools, strings
            obs[name] = column.to_numpy(zero_copy_only=False)
    return obs, categories


def convert(
    batch: pa.RecordBatch,
    genes: list[str],
    output: Output = "scipy",
    dtype: Any = np.float32,
    writable: Any = np.copy,
) -> Batch:
    """One record batch of the stream as a :class:`Batch` with ``X`` of type ``output``.

    A row's columns come in the dataset's order, not increasing, unless the stream was made with
    ``sort_indices=True``: valid CSR for scipy (``X.sort_indices()`` sorts in place when needed).

    ``scipy``: a ``scipy.sparse.csr_matrix`` (``dense`` streams: a numpy array); ``numpy``: a dense
    array; ``arrow``: the record batch itself; ``torch_csr``/``torch_dense``: torch tensors.
    Counts are converted to ``dtype`` (float32 by default, what models take). ``writable`` turns a
    read-only numpy view of the record batch into a writable array (default: a copy; a
    :class:`Stream` gives views of the memory it read the batch into).
    """
    n = batch.num_rows
    g = len(genes)
    cells = _view(batch.column("cell"), np.int64)
    counts = batch.column("counts")
    obs, categories = _obs_columns(batch)
    if output == "arrow":
        x: Any = batch
    elif pa.types.is_fixed_size_list(counts.type):  # a --dense stream: float32 rows
        x = _view(counts.values, np.float32)[counts.offset * g : (counts.offset + n) * g]
        x = x.reshape(n, g).astype(dtype, copy=False)
        if output == "torch_dense" or output == "torch_csr":
            x = torch.from_numpy(x)
            if output == "torch_csr":
                x = x.to_sparse_csr()
    else:
        indptr, indices = _list_parts(batch.column("indices"))
        _, data = _list_parts(counts)
        # Writable (scipy sorts in place: X.sort_indices()), and Arrow's views are read-only: views of
        # the memory the Stream read the batch into, else copies. (indptr: a copy, 4 bytes a cell.)
        indptr, indices = indptr.copy(), writable(indices)
        data = writable(data) if data.dtype == np.dtype(dtype) else data.astype(dtype)
        if output == "scipy":
            import scipy.sparse as sp

            x = sp.csr_matrix((data, indices, indptr), shape=(n, g))
        elif output == "numpy":
            x = np.zeros((n, g), dtype=dtype)
            rows = np.repeat(np.arange(n), np.diff(indptr))
            x[rows, indices] = data
        elif output in ("torch_csr", "torch_dense"):
            # torch wants each row's columns increasing; scipy sorts in C (a no-op once sorted).
            import scipy.sparse as sp

            csr = sp.csr_matrix((data, indices, indptr), shape=(n, g))
            csr.sort_indices()
            x = torch.sparse_csr_tensor(
                torch.from_numpy(csr.indptr.astype(np.int64)),
                torch.from_numpy(csr.indices.astype(np.int64)),
                torch.from_numpy(csr.data),
                size=(n, g),
            )
            if output == "torch_dense":
                x = x.to_dense()
        else:
            raise ValueError(f"output must be scipy, numpy, arrow, torch_csr or torch_dense, got {output!r}")
    return Batch(cells=cells, X=x, genes=genes, obs=obs, categories=categories, record_batch=batch)


class Stream:
    """A running ``deltacells stream``: its schema metadata, then its record batches.

    Use as a context manager; leaving it early closes the pipe (the command stops quietly) and waits
    for the process. A failure of the command raises :class:`StreamError` with its message.
    """

    def __init__(self, dataset: str, *, command: Sequence[str] | None = None, genes: Sequence[str] | None = None, **options: Any):
        self._tmp = None
        if genes is not None:  # the command reads a selection from a file, one name per line
            self._tmp = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
            self._tmp.write("".join(f"{name}\n" for name in genes))
            self._tmp.close()
            options["genes_file"] = self._tmp.name
        argv = [*(command or deltacells_command()), *stream_arguments(dataset, **options)]
        self._stderr = tempfile.TemporaryFile()  # read after exit: a pipe nobody drains could block the command
        self._proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self._stderr)
        with contextlib.suppress(AttributeError, OSError):
            import fcntl

            fcntl.fcntl(self._proc.stdout.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        self._pipe = _ArrowPipe(self._proc.stdout)
        try:
            self._reader = pa.ipc.open_stream(self._pipe)
        except (pa.ArrowInvalid, OSError) as err:
            self._fail(err)  # the command failed before its first byte: raise its error, not Arrow's
        meta = self._reader.schema.metadata or {}
        self.genes: list[str] = json.loads(meta[b"deltacells.genes"])
        """The gene of each column."""
        self.info: dict[str, Any] = json.loads(meta[b"deltacells.stream"])
        """What the command streams: dataset, cells, batches of this rank, padding, ... (see the README)."""

    def writable(self, values: np.ndarray) -> np.ndarray:
        """A writable numpy view of ``values``, a view of the last record batch read (no copy: that
        batch's memory was allocated here; writing into it changes the record batch too)."""
        return self._pipe.writable(values)

    @property
    def schema(self) -> pa.Schema:
        return self._reader.schema

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        received = 0
        end = None
        while True:
            try:
                batch, meta = self._reader.read_next_batch_with_custom_metadata()
            except StopIteration:
                break
            except (pa.ArrowInvalid, OSError) as err:
                self._fail(err)  # a damaged stream: the command's error says why
            if meta is not None and END_KEY in meta:
                end = json.loads(meta[END_KEY])
                continue
            if end is not None:
                self._proc.stdout.close()
                raise StreamError("deltacells stream wrote a batch after its end batch: not a stream of this version", 0)
            received += 1
            yield batch
        # The end of the stream is also where a failing command stops writing: its exit code tells.
        code = self._proc.wait()
        self._raise_if_failed(code)
        self._check_end(end, received, code)

    def _check_end(self, end: dict | None, received: int, code: int) -> None:
        """Raises :class:`IncompleteEpoch` unless ``end`` (the end batch's metadata) is there and
        counts the ``received`` batches: a command whose exit code was lost (a wrapper, a pipe from
        elsewhere) may have stopped mid-epoch."""
        start = int(self.info.get("start_batch", 0))
        expected = int(self.info["batches"]) - start
        if end is not None and int(end["batches"]) == received:
            return
        what = "without its end batch (deltacells.end)" if end is None else f"with an end batch counting {end['batches']}"
        raise IncompleteEpoch(
            f"deltacells stream ended after {received} of {expected} batches {what}: this is part of an epoch "
            f"(the command was stopped before it finished); run it again, or resume with start_batch={start + received}",
            code,
            received,
            start + received,
        )

    def _raise_if_failed(self, code: int) -> None:
        if code != 0:
            self._stderr.seek(0)
            message = self._stderr.read().decode(errors="replace").strip()
            if not message:
                message = (
                    f"deltacells stream was killed by signal {-code} before the epoch was complete"
                    if code < 0
                    else f"deltacells stream exited with code {code}"
                )
            raise StreamError(message, code)

    def _fail(self, err: Exception) -> None:
        # Close our end first: a command still writing then stops (EPIPE) instead of waiting forever.
        self._proc.stdout.close()
        self._raise_if_failed(self._proc.wait())
        raise err

    def close(self) -> None:
        """Stop the command (closing the pipe makes it exit quietly) and wait for it."""
        if self._proc.stdout and not self._proc.stdout.closed:
            self._proc.stdout.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._stderr.close()
        if self._tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._tmp.name)
            self._tmp = None

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def iter_batches(dataset: str, *, output: Output = "scipy", dtype: Any = np.float32, **options: Any) -> Iterator[Batch]:
    """The mini-batches of one epoch of ``dataset`` (options as :func:`stream_arguments`, plus
    ``genes``: a list of gene names whose columns, in that order, make X; ``command``)."""
    # float32 counts (what models take) come decoded as such, not converted here.
    options.setdefault("float32", np.dtype(dtype) == np.float32 and not options.get("dense", False))
    with Stream(dataset, **options) as stream:
        for batch in stream:
            yield convert(batch, stream.genes, output, dtype, stream.writable)


class EpochStreams:
    """The batches of each epoch of a dataset, for any shard, with the epoch in shared memory.

    :meth:`set_epoch` in the process that made this object reaches every process it was handed to
    when that process was started (by fork, or pickled at its start by spawn or forkserver), even
    one started before: each reads the epoch when it starts iterating (:meth:`batches`). This is
    what makes ``DataLoader(..., persistent_workers=True)`` see each new epoch; a plain attribute
    would be the workers' own copy, frozen at the epoch they were started in. Needs no torch.
    """

    def __init__(self, dataset: str, *, output: Output = "scipy", dtype: Any = np.float32, **options: Any):
        self.dataset, self.output, self.dtype, self.options = dataset, output, dtype, options
        # A raw shared int64: one writer (this process, between epochs), readers that only read it.
        self._epoch = multiprocessing.RawValue("q", int(options.pop("epoch", 0)))

    @property
    def epoch(self) -> int:
        """The epoch the next iteration yields, in whichever process asks."""
        return int(self._epoch.value)

    @epoch.setter
    def epoch(self, epoch: int) -> None:
        self.set_epoch(epoch)

    def set_epoch(self, epoch: int) -> None:
        """Makes every process's next iteration yield epoch ``epoch`` (before the epoch's loop, as
        with ``DistributedSampler.set_epoch``)."""
        if isinstance(epoch, bool) or not isinstance(epoch, int | np.integer) or epoch < 0:
            raise ValueError(f"set_epoch takes an integer >= 0, got {epoch!r}")
        self._epoch.value = int(epoch)

    def batches(self, shard: int = 0, shards: int = 1) -> Iterator[Batch]:
        """Shard ``shard`` of ``shards`` of the current epoch (:func:`iter_batches` as rank of world size)."""
        yield from iter_batches(
            self.dataset,
            output=self.output,
            dtype=self.dtype,
            epoch=self.epoch,
            rank=shard,
            world_size=shards,
            **self.options,
        )


class DeltacellsDataset(EpochStreams, IterableDataset):
    """A torch ``IterableDataset`` of ready-made mini-batches (use ``DataLoader(ds, batch_size=None)``).

    Each DataLoader worker of each rank starts its own ``deltacells stream`` as shard
    ``rank * workers + worker`` of ``world_size * workers``. ``rank`` and ``world_size`` default to
    torch.distributed's when it is initialised. Call :meth:`set_epoch` before each epoch, as with
    ``DistributedSampler``: the shuffle depends on the seed and the epoch only, so every process
    agrees on it without talking to the others. The epoch is shared memory (see
    :class:`EpochStreams`), so it reaches persistent workers too (``persistent_workers=True``).
    ``threads`` is the decoding threads per process.
    """

    def __init__(
        self,
        dataset: str,
        *,
        batch_size: int = 4096,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
        obs: Sequence[str] = (),
        genes: Sequence[str] | None = None,
        output: Output = "torch_csr",
        dtype: Any = np.float32,
        rank: int | None = None,
        world_size: int | None = None,
        threads: int | None = None,
        command: Sequence[str] | None = None,
    ):
        if torch is None:
            raise ImportError("DeltacellsDataset needs torch; iter_batches and EpochStreams work without it")
        super().__init__(
            dataset,
            output=output,
            dtype=dtype,
            batch_size=batch_size,
            shuffle=shuffle,
            seed=seed,
            drop_last=drop_last,
            obs=tuple(obs),
            genes=genes,
            threads=threads,
            command=command,
        )
        self.rank, self.world_size = rank, world_size

    def shard(self) -> tuple[int, int]:
        """(shard, shards) of the calling process: its rank and DataLoader worker folded into one."""
        rank, world = self.rank, self.world_size
        if rank is None or world is None:
            dist = torch.distributed
            on = dist.is_available() and dist.is_initialized()
            rank = rank if rank is not None else (dist.get_rank() if on else 0)
            world = world if world is not None else (dist.get_world_size() if on else 1)
        info = get_worker_info()
        workers, worker = (info.num_workers, info.id) if info is not None else (1, 0)
        return rank * workers + worker, world * workers

    def __iter__(self) -> Iterator[Batch]:
        # Called in the worker at the start of each epoch, persistent workers included: the epoch
        # is read from shared memory now, not from a copy made when the worker started.
        yield from self.batches(*self.shard())
