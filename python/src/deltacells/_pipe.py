"""The pipe transport: ``deltacells stream``'s Arrow IPC stream read from its stdout.

Each large message body (a batch's: ~50 MB at 4,096 cells) is read into one of a few bytearrays
kept here, each reused once nothing refers to the batch read into it any more (a batch the caller
keeps keeps its memory), instead of new memory per body that the kernel would clear page by page
as the pipe filled it; and the numpy views of a batch are views of that writable memory, so
scipy can sort a row's indices in place without a copy.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc

from ._batch import Parts
from ._cli import StderrReader, command, environment, stop
from .errors import IncompleteEpoch

#: Linux's F_SETPIPE_SZ: a 1 MiB pipe instead of 64 KiB, 16x fewer wake-ups of both processes.
_PIPE_BYTES = 1 << 20
#: Message bodies at least this large are read into recycled memory.
_RECYCLE_FROM = 1 << 20
#: Recycled bodies kept at most (the batch a loop holds, the one being read, one spare, and one more).
_RECYCLE_KEEP = 4


class _ArrowPipe:
    """The command's stdout for pyarrow's reader (``read_buffer``), bodies in recycled memory."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self.closed = False
        self._last: pa.Buffer | None = None
        self._bodies: list[bytearray] = []

    def _body(self, nbytes: int) -> pa.Buffer:
        bodies = self._bodies
        for i in range(len(bodies)):
            # Free when only the list and this call refer to it (a batch's views hold a reference).
            if sys.getrefcount(bodies[i]) == 2 and len(bodies[i]) >= nbytes + 64:
                bodies.append(bodies.pop(i))
                break
        else:
            bodies.append(bytearray(nbytes + (nbytes >> 3) + 64))
            if len(bodies) > _RECYCLE_KEEP:
                del bodies[0]
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
        """``values`` (a view of the last message read) as a writable view of the same memory, or a copy."""
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


class PipeStream:
    """A running ``deltacells stream``: its schema's metadata, then its record batches.

    Leaving early (:meth:`close`) closes the pipe: the command stops quietly. Its failure raises
    the exception of its tag. A complete epoch ends with a record batch of no rows whose metadata
    ``deltacells.end`` counts the batches before it: a stream that ends without it, or with one
    counting other batches, raises :class:`~deltacells.errors.IncompleteEpoch`, never a short
    epoch (Arrow's own end of stream looks clean when the command is killed between two batches).
    """

    def __init__(self, args: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        self._proc = self._start(args, env)
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._stderr = StderrReader(self._proc.stderr)
        with contextlib.suppress(AttributeError, OSError):
            import fcntl

            fcntl.fcntl(self._proc.stdout.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        self._pipe = _ArrowPipe(self._proc.stdout)
        try:
            self._reader = pa.ipc.open_stream(self._pipe)
        except (pa.ArrowInvalid, OSError) as err:
            self._fail(err)  # the command failed before its first byte: its error, not Arrow's
        meta = self._reader.schema.metadata or {}
        self.genes: list[str] = json.loads(meta[b"deltacells.genes"])
        self.info: dict[str, Any] = json.loads(meta[b"deltacells.stream"])

    def _start(self, args: Sequence[str], env: Mapping[str, str] | None) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            command(["stream", *args]),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment(env),
        )

    def _parts(self, batch: pa.RecordBatch, meta: dict[str, Any]) -> Parts:
        """A record batch's arrays: views of the memory its message was read into."""
        return _parts(batch, meta, self._pipe.writable)

    #: Whether the command goes on after an epoch's end batch (the shared-memory transport's sessions).
    _serving = False

    def _before_read(self) -> None:
        """Runs before each wait for the next message (the shared-memory transport's spill check)."""

    def __iter__(self) -> Iterator[Parts]:
        """Each batch's arrays and metadata."""
        start = int(self.info.get("start_batch", 0))
        received = 0
        end: dict[str, Any] | None = None
        while True:
            self._before_read()
            try:
                batch, meta = self._reader.read_next_batch_with_custom_metadata()
            except StopIteration:
                break
            except (pa.ArrowInvalid, OSError) as err:
                self._fail(err, received, start)
            if meta is not None and _END_KEY in meta:
                end = json.loads(meta[_END_KEY])
                if self._serving:
                    break  # the command waits for the next epoch asked for: nothing more to read now
                continue
            if end is not None:
                self.close()
                raise IncompleteEpoch("deltacells stream wrote a batch after its end batch: not a stream this package reads")
            received += 1
            # Yielded, not kept in a variable: only the caller holds the batch (shm: its slot).
            yield self._parts(batch, json.loads((meta or {}).get(b"deltacells.batch", b"{}")))
        if not (self._serving and end is not None):
            code = self._proc.wait()
            self._stderr.join()
            if code != 0:
                raise self._stderr.failure(code, "deltacells stream")
        if end is None or int(end["batches"]) != received:
            how = "without its end batch" if end is None else f"with an end batch counting {end['batches']}"
            raise _incomplete(self.info, received, start, how)

    def _fail(self, err: Exception, received: int = 0, start: int = 0) -> None:
        # Close our end first: a command still writing then stops (EPIPE) instead of waiting.
        assert self._proc.stdout is not None
        self._proc.stdout.close()
        code = self._proc.wait()
        self._stderr.join()
        if code != 0:
            raise self._stderr.failure(code, "deltacells stream") from None
        raise _incomplete(getattr(self, "info", {}), received, start, f"on a damaged message ({err})") from err

    def close(self) -> None:
        """Stop the command (closing the pipe makes it exit quietly) and wait for it."""
        if self._proc.stdout is not None and not self._proc.stdout.closed:
            self._proc.stdout.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            stop(self._proc, grace=5)
        self._stderr.join()


#: The metadata key of the stream's last record batch (no rows), which only a complete epoch carries.
_END_KEY = b"deltacells.end"


def _incomplete(info: dict[str, Any], received: int, start: int, how: str) -> IncompleteEpoch:
    expected = int(info["batches"]) - start if "batches" in info else None
    err = IncompleteEpoch(
        f"the stream of {info.get('dataset', 'the dataset')} ended after {received}"
        f"{'' if expected is None else f' of {expected}'} batches {how}: this is part of an epoch",
        hint=f"the command was stopped before the epoch was complete: run it again, or resume with start_batch={start + received}",
        expected=expected,
        found=received,
    )
    err.received, err.start_batch = received, start + received
    return err


class PipeTransport:
    """``transport="pipe"``: the batches over the command's stdout (one copy through the kernel)."""

    name = "pipe"

    def open(self, args: Sequence[str], env: Mapping[str, str] | None = None) -> PipeStream:
        return PipeStream(args, env)


#: The transports by name (``"shm"`` registers from ``deltacells._shm``): ``open(args, env)``
#: returns an object with ``genes``, ``info`` (the stream's metadata), iteration over
#: :class:`~deltacells._batch.Parts` and ``close()``.
TRANSPORTS: dict[str, Any] = {"pipe": PipeTransport()}


def transport(name: str) -> Any:
    try:
        return TRANSPORTS[name]
    except KeyError:
        raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, got {name!r}") from None


def _view(array: pa.Array, dtype: Any) -> np.ndarray:
    """A primitive Arrow array's values as a numpy view of its data buffer (nulls not looked at).

    Not ``Array.to_numpy``: its first call imports pandas and pyarrow.compute (0.3-0.5 s), which
    would land on the first batch of every process.
    """
    dt = np.dtype(dtype)
    return np.frombuffer(array.buffers()[1], dtype=dt, count=len(array), offset=array.offset * dt.itemsize)


def _list_parts(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A list column's offsets (from 0) and values, as numpy views of the Arrow buffers."""
    offsets = _view(column.offsets, np.int32)
    values = column.values
    values = _view(values, values.type.to_pandas_dtype())
    start, end = int(offsets[0]), int(offsets[-1])
    return (offsets - start if start else offsets), values[start:end]


def _codes(indices: pa.Array) -> np.ndarray:
    """A dictionary column's codes, -1 where missing."""
    codes = _view(indices, indices.type.to_pandas_dtype())
    if indices.null_count == 0:
        return codes
    bits = np.unpackbits(np.frombuffer(indices.buffers()[0], dtype=np.uint8), bitorder="little")
    return np.where(bits[indices.offset : indices.offset + len(indices)] == 1, codes, codes.dtype.type(-1))


def _parts(batch: pa.RecordBatch, meta: dict[str, Any], writable: Any) -> Parts:
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
    indptr, indices = _list_parts(batch.column("indices"))
    _, data = _list_parts(batch.column("counts"))
    # Writable (scipy sorts in place) views of the memory the batch was read into; indptr a copy.
    return Parts(
        cells=_view(batch.column("cell"), np.int64),
        indptr=indptr.copy(),
        indices=writable(indices),
        data=writable(data),
        obs=obs,
        categories=categories,
        meta=meta,
    )


__all__ = ["TRANSPORTS", "PipeStream", "PipeTransport", "transport"]
