"""The training loader's options and its stream of batches (``Dataset.batches``)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from . import _shm  # noqa: F401 - registers transport="shm"
from ._batch import OUTPUTS, Batch, make_batch
from ._pipe import transport as find_transport


@dataclasses.dataclass(frozen=True)
class LoaderOptions:
    """What makes an epoch's batches: each field is a flag of ``deltacells stream``.

    The batches are a function of these alone (not of the transport or the machine). A new option
    of the loader (an ``order``, say) is a field here and its flag in :meth:`arguments`.
    """

    batch_size: int = 4096
    shuffle: bool = True
    seed: int = 0
    epoch: int = 0
    rank: int = 0
    world_size: int = 1
    drop_last: bool = False
    obs: tuple[str, ...] = ()
    genes: tuple[str, ...] | None = None
    start_batch: int = 0
    sort_indices: bool = False
    float32: bool = True
    threads: int | None = None
    buffer_tiles: int | None = None
    memory_cap: int | None = None
    """MiB for tiles in flight and batch buffers (the command's default: 512)."""
    order: str = "default"
    """``"default"`` (each rank shuffles its own share) or ``"elastic"`` (one sequence of global
    batches whatever the world size: rank ``r`` of ``W`` takes global batches ``r, r + W, ...``)."""
    lanes: int | None = None
    """Elastic order: the lanes the global sequence interleaves (default the world size); every
    world size dividing it yields the same batches between its ranks."""
    start_global_batch: int | None = None
    """Elastic order: skip the epoch's first global batches (consumed at any world size)."""
    report_mixing: str | None = None
    """An obs column: after the epoch, how mixed the batches were along its labels. Not part of
    what makes the batches."""

    def __post_init__(self) -> None:
        for name in ("batch_size", "world_size"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in ("seed", "epoch", "rank", "start_batch"):
            if int(getattr(self, name)) < 0:
                raise ValueError(f"{name} must not be negative, got {getattr(self, name)}")
        if not 0 <= self.rank < self.world_size:
            raise ValueError(f"rank {self.rank} is not below world_size {self.world_size}: ranks are 0 .. {self.world_size - 1}")
        if self.order not in ("default", "elastic"):
            raise ValueError(f"order must be 'default' or 'elastic', got {self.order!r}")
        if self.order != "elastic":
            for name in ("lanes", "start_global_batch"):
                if getattr(self, name) is not None:
                    hint = "; in the default order use start_batch" if name == "start_global_batch" else ""
                    raise ValueError(f"{name} applies to order='elastic': add order='elastic', or leave {name} out{hint}")
        if self.lanes is not None and int(self.lanes) < 1:
            raise ValueError(f"lanes must be at least 1, got {self.lanes}")
        if self.start_global_batch is not None:
            if int(self.start_global_batch) < 0:
                raise ValueError(f"start_global_batch must not be negative, got {self.start_global_batch}")
            if self.start_batch:
                raise ValueError(
                    "start_batch and start_global_batch say the same thing: give one "
                    "(K batches per rank on W ranks is start_global_batch=K*W)"
                )

    def replace(self, **changes: Any) -> LoaderOptions:
        return dataclasses.replace(self, **changes)

    def arguments(self, url: str, genes_file: str | None, mixing_file: str | None = None) -> list[str]:
        """``deltacells stream`` arguments for these options (``genes`` as the file holding them;
        the mixing report written to ``mixing_file``, else printed on stderr)."""
        args = [url, "--batch-size", str(self.batch_size), "--seed", str(self.seed), "--epoch", str(self.epoch)]
        if not self.shuffle:
            args.append("--no-shuffle")
        if self.world_size != 1 or self.rank != 0:
            args += ["--rank", str(self.rank), "--world-size", str(self.world_size)]
        if self.drop_last:
            args.append("--drop-last")
        if self.obs:
            args += ["--obs", ",".join(self.obs)]
        if genes_file is not None:
            args += ["--genes", genes_file]
        if self.start_batch:
            args += ["--start-batch", str(self.start_batch)]
        if self.sort_indices:
            args.append("--sort-indices")
        if self.float32:
            args.append("--float32")
        if self.order != "default":
            args += ["--order", self.order]
        for name, flag in (
            ("threads", "--threads"),
            ("buffer_tiles", "--buffer-tiles"),
            ("memory_cap", "--memory-cap"),
            ("lanes", "--lanes"),
            ("start_global_batch", "--start-global-batch"),
        ):
            value = getattr(self, name)
            if value is not None:
                args += [flag, str(int(value))]
        if self.report_mixing is not None:
            column = str(self.report_mixing)
            args += ["--report-mixing", column if mixing_file is None else f"{column}={mixing_file}"]
        return args


def loader_options(**options: Any) -> LoaderOptions:
    """:class:`LoaderOptions` from keywords, sequences as tuples; an unknown keyword is a TypeError."""
    known = {f.name for f in dataclasses.fields(LoaderOptions)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"unknown loader option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    if isinstance(options.get("obs"), str):
        options["obs"] = (options["obs"],)
    for name in ("obs", "genes"):
        if options.get(name) is not None:
            options[name] = tuple(str(v) for v in options[name])
    return LoaderOptions(**options)


class BatchStream:
    """One epoch's batches of one rank, started when made (the command decodes ahead).

    Iterate it once (``for batch in stream``); ``len(stream)`` is the number of batches it yields,
    ``info`` what the command announced (``batches``, ``cells``, ``padded``, ``dropped``, ...).
    Leaving the loop early, ``close()`` or the ``with`` block's end stops the command.
    """

    def __init__(
        self,
        url: str,
        options: LoaderOptions,
        *,
        output: str = "csr",
        dtype: Any = np.float32,
        transport: str = "shm",
        ring: int | None = None,
        copy: bool = False,
        storage_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        mixing_report: bool = True,
    ) -> None:
        if output not in OUTPUTS:
            raise ValueError(f"output must be one of {', '.join(OUTPUTS)}, got {output!r}")
        if output.startswith("torch"):
            import torch  # noqa: F401 - fail here, not on the first batch

        if ring is not None:
            if transport != "shm":
                raise ValueError(f"ring= sets the slots of transport='shm'; transport={transport!r} has none")
            if int(ring) < 1:
                raise ValueError(f"ring must be at least 1 slot, got {ring}")
        self.options = options
        self.output = output
        self.dtype = np.dtype(dtype)
        self.copy = bool(copy)
        self._genes_file: str | None = None
        if options.genes is not None:
            if len(options.genes) == 0:
                raise ValueError("genes=[] selects no column: leave it out for every gene")
            with tempfile.NamedTemporaryFile("w", suffix=".txt", prefix="deltacells-genes-", delete=False) as f:
                f.write("".join(f"{name}\n" for name in options.genes))
            self._genes_file = f.name
        self._mixing_dir: str | None = None
        self._mixing_file: str | None = None
        self.mixing: dict[str, Any] | None = None
        """With ``report_mixing`` (from :meth:`Dataset.batches`): the mixing report of the batches
        once the stream is closed (after the loop's end), as ``deltacells stream --report-mixing
        COLUMN=FILE`` writes it (``complete`` says whether the whole epoch was read)."""
        if options.report_mixing is not None and mixing_report:
            self._mixing_dir = tempfile.mkdtemp(prefix="deltacells-mixing-")
            self._mixing_file = os.path.join(self._mixing_dir, "mixing.json")
        # float32 counts come decoded as such: nothing to convert here.
        wanted = options.replace(float32=self.dtype == np.float32)
        try:
            chosen = find_transport(transport)
            args = [*wanted.arguments(url, self._genes_file, self._mixing_file), *storage_args]
            if transport == "shm":
                # The command serves the next epochs of the same options: a later stream of them
                # asks it for its epoch instead of starting another (not one resumed mid-epoch).
                # A mixing report covers one epoch, which the command reports as it exits.
                first = wanted.replace(epoch=0, start_batch=0, start_global_batch=None)
                session = None
                if wanted.report_mixing is None:
                    session = (url, first, tuple(storage_args), tuple(sorted((env or {}).items())), ring)
                reuse = wanted.start_batch == 0 and wanted.start_global_batch is None
                self._stream = chosen.open(args, env, None if ring is None else int(ring), session=session, epoch=wanted.epoch, reuse=reuse)
            else:
                self._stream = chosen.open(args, env)
        except BaseException:
            self._remove_files()
            raise
        self.genes: list[str] = self._stream.genes
        """The gene of each column."""
        self.info: dict[str, Any] = self._stream.info
        """What the command streams: ``batches`` (per rank), ``cells``, ``padded``, ``dropped``, settings."""
        self._started = False
        self._closed = False

    def __len__(self) -> int:
        return max(0, int(self.info["batches"]) - int(self.info.get("start_batch", 0)))

    def __iter__(self) -> Iterator[Batch]:
        if self._started:
            raise RuntimeError("a batch stream is read once: call batches() again for another pass")
        self._started = True
        parts_of = iter(self._stream)
        try:
            while True:
                parts = next(parts_of, None)
                if parts is None:
                    break
                batch = make_batch(parts, self.genes, self.output, self.dtype, copy=self.copy)
                # Only the caller holds the batch (and so, with transport="shm", its slot).
                del parts
                yield batch
                del batch
        finally:
            self.close()

    def close(self) -> None:
        """Stop the command (if still running) and remove what this stream made."""
        # Once: a command kept for the next epoch may be another stream's by the next call.
        if not self._closed:
            self._closed = True
            self._stream.close()
            self._read_mixing()
        self._remove_files()

    def _read_mixing(self) -> None:
        """The mixing report the command wrote as it exited (none if it failed first)."""
        if self._mixing_file is not None:
            with contextlib.suppress(OSError), open(self._mixing_file) as f:
                self.mixing = json.load(f)

    def _remove_files(self) -> None:
        if self._genes_file is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._genes_file)
            self._genes_file = None
        if self._mixing_dir is not None:
            shutil.rmtree(self._mixing_dir, ignore_errors=True)
            self._mixing_dir = self._mixing_file = None

    def __enter__(self) -> BatchStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
