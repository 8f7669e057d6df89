"""The shared-memory transport: batches made by the command's decoders in memory this process maps.

``deltacells stream --shm-fd FD`` makes each batch's indices and counts in a file both processes
map (a ring of slots), with its cells and category codes, and sends over its stdout (an Arrow
stream, as the pipe transport reads it) only a record batch of no rows naming the batch's slot
(or, with obs of other kinds, the cells and obs); numpy, scipy and torch then wrap the slot's
memory without a copy. The file is a Linux memfd (or, elsewhere, a file on ``/dev/shm`` or the
temporary folder, created exclusively and unlinked before the command starts): it has no name
anywhere, so no other process can open it, and it disappears when both processes are gone
(however they end: nothing to clean up after a SIGKILL).

The command serves epoch after epoch (``--serve``): once a stream has yielded a whole epoch, its
command waits, with its loader, its pool and its ring, and the next stream of the same options
asks it for its epoch (``epoch E`` on its stdin) instead of starting another command; a few wait
at most, each for ``--serve-idle`` seconds (300) before it exits.

A slot is the caller's while anything refers to its arrays: the arrays' base object is one per
batch, and its finalizer sends ``release SLOT SEQ`` on the command's stdin when the last reference
goes (``copy=True`` copies and lets go at once). The command writes a slot again only once it is
released, waiting meanwhile; a caller that holds so many batches that the command could not make
the next one sends ``spill`` before it waits, and the command sends the next batches whole, as the
pipe transport does, until one is released: holding batches is never a deadlock, and never lets
a held batch change. A batch denser than a slot comes whole too. The end of the command's stdin
(this process exited or was killed) stops it; its end without the epoch's end batch raises
:class:`~deltacells.errors.IncompleteEpoch`, as with the pipe.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import mmap
import os
import subprocess
import tempfile
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ._batch import Parts
from ._cli import command, environment
from ._pipe import TRANSPORTS, PipeStream, _parts
from .errors import DeltacellsError, IncompleteEpoch

#: The first word of a slot's header ("DCSB" little-endian), then its version, then float64 seq,
#: epoch, index, size and nnz (`SLOT_MAGIC` in packages/deltacells/src/loader/ring.ts). Version 2:
#: the slot holds the batch's cell numbers and category codes too.
_SLOT_MAGIC = 0x42534344
_SLOT_VERSION = 2


def _new_file() -> int:
    """A new anonymous file for the ring, open read-write: its descriptor.

    A memfd on Linux: no name in any filesystem, and not bound by the size of ``/dev/shm`` (64 MB
    in a default Docker container). Elsewhere a file on ``/dev/shm`` (or the temporary folder)
    created exclusively under a random name and unlinked at once.
    """
    if hasattr(os, "memfd_create"):
        return os.memfd_create("deltacells-batches", getattr(os, "MFD_CLOEXEC", 0))
    folder = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryFile(dir=folder, prefix="deltacells-batches-") as f:
        return os.dup(f.fileno())


class _Segment:
    """The ring's memory: an anonymous file and this process's mapping of it, closed once its
    command has exited and nothing refers to its batches any more."""

    def __init__(self) -> None:
        self.fd = _new_file()
        self.map: mmap.mmap | None = None

    def mapped(self, nbytes: int) -> mmap.mmap:
        """This process's mapping of the file's first ``nbytes`` (the command sized it)."""
        self.map = mmap.mmap(self.fd, nbytes)
        return self.map

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)
        if self.map is not None:
            with contextlib.suppress(BufferError):
                self.map.close()


class _Releases:
    """The slots this process holds, each released on the command's stdin when its batch is gone;
    the segment closed once the command has exited and no batch is held."""

    def __init__(self, stdin: Any, slots: int, min_free: int, segment: _Segment) -> None:
        self._segment: _Segment | None = segment
        self._exited = False
        self._stdin = stdin
        self._fd = stdin.fileno()
        self._pid = os.getpid()
        self._lock = threading.RLock()
        self._closed = False
        self.slots = slots
        self.min_free = min_free
        self.held = 0
        """Slots given to this process and not yet released."""
        self.released = 0
        """Slots released so far."""
        _open_releases.add(self)

    def hold(self, owner: object, slot: int, seq: int) -> None:
        """``slot`` (batch ``seq``) is this process's until ``owner`` is collected."""
        with self._lock:
            self.held += 1
        weakref.finalize(owner, self._release, slot, seq)

    def _release(self, slot: int, seq: int) -> None:
        # A process forked from this one shares the memory but not the slots: only this one releases.
        if os.getpid() != self._pid:
            return
        with self._lock:
            self.held -= 1
            self.released += 1
            self._send(f"release {slot} {seq}\n")
            self._recycle()

    def exited(self) -> None:
        """The command has exited: it writes into the segment no more."""
        with self._lock:
            self._exited = True
            self._recycle()

    def _recycle(self) -> None:
        if self._exited and self.held == 0 and self._segment is not None:
            segment, self._segment = self._segment, None
            segment.close()

    def spill(self) -> None:
        self.send("spill\n")

    def send(self, line: str) -> None:
        with self._lock:
            self._send(line)

    def _send(self, line: str) -> None:
        if self._closed:
            return
        try:
            os.write(self._fd, line.encode("ascii"))  # one line, well under PIPE_BUF: atomic
        except OSError:
            self._closed = True  # the command has exited: nothing is waiting for the slot

    def close(self) -> None:
        """No more releases (the command is done): its stdin is closed, which stops it if running."""
        with self._lock:
            if not self._closed:
                self._closed = True
                with contextlib.suppress(OSError):
                    self._stdin.close()

    def forget(self) -> None:
        """In a forked child: the stdin is the parent's (closed here, so that only the parent's end
        keeps the command going), nothing is released from here, and the segment is left alone."""
        self._closed = True
        self._segment = None
        with contextlib.suppress(OSError):
            os.close(self._fd)


_open_releases: weakref.WeakSet[_Releases] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for releases in list(_open_releases):
        releases.forget()
    _forget_idle_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class ShmStream(PipeStream):
    """A running ``deltacells stream --shm-fd``: the pipe transport's stream, the indices and counts
    of each batch in its slot of the shared file (see the module's documentation)."""

    def __init__(
        self, args: Sequence[str], env: Mapping[str, str] | None = None, ring: int | None = None, session: Any = None
    ) -> None:
        self._segment = _Segment()
        self._fd = self._segment.fd
        self._ring = ring
        # A command that goes on with the next epoch asked for, kept between epochs under this key.
        self._session = session
        self._serving = session is not None
        self._complete = False
        try:
            super().__init__(args, env)
            if "shm" not in self.info:
                raise DeltacellsError(
                    "the deltacells command did not make its batches in shared memory (a command older than this package?)",
                    hint="use transport='pipe', or the command this package comes with",
                )
            layout = self.info["shm"]
            self._layout = layout
            self._map = self._segment.mapped(int(layout["bytes"]))
        except BaseException:
            if hasattr(self, "_proc"):
                self._shutdown()
            self._segment.close()
            raise
        self._first_info = dict(self.info)
        # A command kept between epochs that ends (--serve-idle, killed) is dropped at once.
        this = weakref.ref(self)
        self._stderr.on_end = lambda: _command_ended(this())
        assert self._proc.stdin is not None
        self._releases = _Releases(self._proc.stdin, int(layout["slots"]), int(layout["min_free"]), self._segment)
        self._collected_at = -1
        self._categories: dict[str, list[str]] = {}

    def __iter__(self) -> Iterator[Parts]:
        yield from super().__iter__()
        # Every batch and the end batch: a serving command can stream the next epoch.
        self._complete = True

    def next_epoch(self, epoch: int) -> None:
        """Asks the serving command for ``epoch`` (after a whole epoch) and reads what it holds."""
        if not (self._complete and self._proc.poll() is None):
            raise RuntimeError("a session streams the next epoch only after a whole one, its command running")
        self._complete = False
        self._releases.send(f"epoch {int(epoch)}\n")
        try:
            batch, meta = self._reader.read_next_batch_with_custom_metadata()
        except (StopIteration, pa.ArrowInvalid, OSError) as err:
            raise RuntimeError(f"the command ended between two epochs ({err})") from err
        if meta is None or _EPOCH_KEY not in meta or batch.num_rows != 0:
            raise self._broken(f"the command answered epoch {epoch} with no {_EPOCH_KEY.decode()} batch")
        self.info = {**self._first_info, **json.loads(meta[_EPOCH_KEY])}

    def _start(self, args: Sequence[str], env: Mapping[str, str] | None) -> subprocess.Popen[bytes]:
        ring = [] if self._ring is None else ["--ring", str(int(self._ring))]
        serve = ["--serve"] if self._serving else []
        return subprocess.Popen(
            command(["stream", *args, "--shm-fd", str(self._fd), *ring, *serve]),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment(env),
            pass_fds=(self._fd,),
        )

    def _before_read(self) -> None:
        # Holding this many, the command could not finish the next batch: it would wait for a
        # release while this process waits for the batch. Collected garbage may release some;
        # else the next batches come whole.
        r = self._releases
        if r.slots - r.held < r.min_free:
            # (Collected once until a slot is released: a caller keeping every batch pays it once.)
            if self._collected_at != r.released:
                self._collected_at = r.released
                gc.collect()
            if r.slots - r.held < r.min_free:
                r.spill()

    def _parts(self, batch: pa.RecordBatch, meta: dict[str, Any]) -> Parts:
        if "slot" not in meta:
            return _parts(batch, meta, self._pipe.writable)  # a batch that came whole
        slot, seq = int(meta["slot"]), int(meta["seq"])
        # A message of no rows: the cells and obs are in the slot too (every obs a category).
        in_slot = "size" in meta
        n = int(meta["size"]) if in_slot else batch.num_rows
        layout = self._layout
        size = int(layout["slot_bytes"])
        offsets = layout["offsets"]
        if not 0 <= slot < int(layout["slots"]) or not 0 <= n <= int(layout["cells"]) or (in_slot and batch.num_rows != 0):
            raise self._broken(
                f"batch {meta.get('index')} names slot {slot} of {layout['slots']} with {n} cells"
                f" ({batch.num_rows} rows in its message; a slot holds {layout['cells']})"
            )
        # One base object per batch: its finalizer releases the slot once no array refers to it.
        owner = (ctypes.c_ubyte * size).from_buffer(self._map, slot * size)
        header = np.frombuffer(owner, dtype=np.uint32, count=2, offset=int(offsets["header"]))
        fields = np.frombuffer(owner, dtype=np.float64, count=5, offset=int(offsets["header"]) + 8)
        indptr = np.frombuffer(owner, dtype=np.float64, count=n + 1, offset=int(offsets["indptr"]))
        nnz = int(fields[4])
        expected = [seq, meta.get("epoch", fields[1]), meta.get("index", fields[2]), n]
        if int(header[0]) != _SLOT_MAGIC or int(header[1]) != _SLOT_VERSION or [int(v) for v in fields[:4]] != [int(v) for v in expected]:
            raise self._broken(
                f"slot {slot} holds batch {int(fields[2])} (sequence {int(fields[0])}, {int(fields[3])} cells) where the stream announced"
                f" batch {meta.get('index')} (sequence {seq}, {n} cells)"
            )
        if not (indptr[0] == 0 and indptr[n] == nnz and 0 <= nnz <= int(layout["capacity"])):
            raise self._broken(f"slot {slot}'s row offsets do not end at its {nnz} nonzeros")
        values = np.float32 if layout["values"] == "float32" else np.int32
        indices = np.frombuffer(owner, dtype=np.int32, count=nnz, offset=int(offsets["indices"]))
        data = np.frombuffer(owner, dtype=values, count=nnz, offset=int(offsets["data"]))
        if in_slot:
            cells, obs, categories = self._slot_fields(batch, meta, owner, n)
            parts = Parts(cells=cells, indptr=indptr.astype(np.int32), indices=indices, data=data, obs=obs, categories=categories, meta=meta)
        else:
            parts = _parts(batch, meta, self._pipe.writable)
            parts.indptr, parts.indices, parts.data = indptr.astype(np.int32), indices, data
        self._releases.hold(owner, slot, seq)
        return parts

    def _slot_fields(self, batch: pa.RecordBatch, meta: dict[str, Any], owner: Any, n: int) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, list[str]]]:
        """The cells, obs codes and categories of a batch whose message has no rows: from its slot.

        Copies (48 KB at 4,096 cells): only ``X`` refers to the slot, so labels kept from each
        batch never hold its memory.
        """
        slot_obs = self._layout.get("obs") or {}
        obs: dict[str, np.ndarray] = {}
        categories: dict[str, list[str]] = {}
        for name, column in zip(batch.schema.names, batch.columns, strict=True):
            if name in ("cell", "indices", "counts"):
                continue
            if name not in slot_obs or not pa.types.is_dictionary(column.type):
                raise self._broken(f"batch {meta.get('index')} came without its obs column {name!r}, and its slot does not hold it")
            obs[name] = np.frombuffer(owner, dtype=np.int32, count=n, offset=int(slot_obs[name])).copy()
            if name not in self._categories:
                # The vocabulary crosses the stream once, with the first batch: the same for every batch.
                self._categories[name] = column.dictionary.to_pylist()
            categories[name] = list(self._categories[name])
        cells = np.frombuffer(owner, dtype=np.float64, count=n, offset=int(self._layout["offsets"]["cells"]))
        return cells.astype(np.int64), obs, categories

    def _broken(self, what: str) -> IncompleteEpoch:
        self._shutdown()
        return IncompleteEpoch(
            f"the shared-memory stream of {self.info.get('dataset', 'the dataset')} is inconsistent: {what}",
            hint="a bug in deltacells or another program writing the command's stdin: use transport='pipe' meanwhile and report it",
        )

    def close(self) -> None:
        """Done with this epoch: a serving command after a whole one waits for the next (kept for
        the next stream of the same options); otherwise the command stops."""
        if self._serving and self._complete and self._proc.poll() is None and _park(self._session, self):
            return
        self._shutdown()

    def _shutdown(self) -> None:
        """Stops the command (its stdin closed: it exits quietly) and waits for it."""
        self._complete = False
        releases = getattr(self, "_releases", None)
        if releases is not None:
            releases.close()
        elif self._proc.stdin is not None:
            with contextlib.suppress(OSError):
                self._proc.stdin.close()
        super().close()
        if releases is not None and self._proc.poll() is not None:
            releases.exited()


#: The metadata key of the record batch that starts each epoch a serving command streams after its first.
_EPOCH_KEY = b"deltacells.epoch"

#: Serving commands between two epochs, by the options they stream (a few at most).
_idle: dict[Any, ShmStream] = {}
_IDLE_KEEP = 2


_idle_lock = threading.Lock()


def _park(key: Any, stream: ShmStream) -> bool:
    """Keeps ``stream`` for the next epoch of the same options; False when one is kept already."""
    with _idle_lock:
        if os.getpid() != stream._releases._pid or key in _idle:
            return False
        _idle[key] = stream
        evicted = [_idle.pop(next(iter(_idle))) for _ in range(len(_idle) - _IDLE_KEEP)]
    for old in evicted:
        old._shutdown()
    return True


def _take(key: Any) -> ShmStream | None:
    with _idle_lock:
        return _idle.pop(key, None)


def _command_ended(stream: ShmStream | None) -> None:
    """On the stderr thread, once a command has exited: a kept one is dropped, its memory freed
    once no batch of it is held."""
    if stream is None:
        return
    with _idle_lock:
        if _idle.get(stream._session) is stream:
            del _idle[stream._session]
        else:
            return
    stream._releases.close()
    stream._releases.exited()


def _forget_idle_in_child() -> None:
    global _idle_lock
    _idle_lock = threading.Lock()  # (another thread may have held it at the fork)
    for stream in _idle.values():
        stream._releases.forget()
    _idle.clear()


class ShmTransport:
    """``transport="shm"``: batches in shared memory, wrapped without a copy (``ring`` slots).

    With ``session`` (the options that make the batches, epoch aside), the command serves epoch
    after epoch: a stream of a whole epoch, once closed, keeps it waiting, and the next stream of
    the same options asks it for its epoch instead of starting a command (its start, its pool's
    and its loader's, are a large part of an epoch). ``reuse=False`` (an epoch resumed mid-way)
    starts a new one, kept afterwards too.
    """

    name = "shm"

    def open(
        self,
        args: Sequence[str],
        env: Mapping[str, str] | None = None,
        ring: int | None = None,
        *,
        session: Any = None,
        epoch: int = 0,
        reuse: bool = True,
    ) -> ShmStream:
        kept = _take(session) if session is not None and reuse else None
        if kept is not None and kept._releases._pid == os.getpid():
            try:
                kept.next_epoch(epoch)
                return kept
            except (RuntimeError, IncompleteEpoch):
                kept._shutdown()  # it ended while waiting (--serve-idle, killed): a new command
        return ShmStream(args, env, ring, session)


TRANSPORTS["shm"] = ShmTransport()

__all__ = ["ShmStream", "ShmTransport"]
