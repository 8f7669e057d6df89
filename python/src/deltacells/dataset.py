"""``deltacells.open``: a dataset's shape, genes, cell table, AnnData slices and training batches."""

from __future__ import annotations

import builtins
import functools
import os
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from . import _obs
from ._batch import Output
from ._cli import positional, run_json, storage_arguments
from ._loader import BatchStream, LoaderOptions, loader_options
from ._progress import progress_bars

if TYPE_CHECKING:
    import anndata

PathLike = str | os.PathLike[str]


class Dataset:
    """An open deltacells dataset (made by :func:`open`).

    Holds the dataset's description only; every read runs the ``deltacells`` command, which
    reads what it needs (the manifest, tiles, the obs sidecar) from the folder or the bucket.
    """

    def __init__(self, url: str, info: dict[str, Any], storage_args: list[str], env: dict[str, str]) -> None:
        self.url = url
        """The location as given to :func:`open`."""
        self.info = info
        """What ``deltacells inspect --json`` says of it: sizes, tiles, settings, obs columns, metadata."""
        self._storage_args = storage_args
        self._env = env
        self._obs_columns: dict[tuple[str | None, str], Any] = {}

    def __repr__(self) -> str:
        return f"<deltacells.Dataset {self.url!r}: {self.n_cells:,} cells x {self.n_genes:,} genes>"

    @property
    def n_cells(self) -> int:
        """The number of cells (rows)."""
        return int(self.info["n_cells"])

    @property
    def n_genes(self) -> int:
        """The number of genes (columns)."""
        return int(self.info["n_genes"])

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_cells, n_genes)``, as ``AnnData.shape``."""
        return (self.n_cells, self.n_genes)

    @property
    def nnz(self) -> int:
        """The number of stored nonzeros."""
        return int(self.info["nnz"])

    @property
    def obs_keys(self) -> list[str]:
        """The names of the obs columns (the cell table), as ``AnnData.obs_keys()``."""
        return [c["name"] for c in self.info.get("obs_columns", [])]

    def _run(self, args: list[str], **kwargs: Any) -> Any:
        return run_json([*args, *self._storage_args], env=self._env, **kwargs)

    @functools.cached_property
    def var(self) -> pd.DataFrame:
        """The gene table (one row per gene, indexed by the genes' names) in the order of the input
        the dataset was converted from, as anndata read it there (``adata.var``)."""
        return self._export(0, 0, obs=False).var

    @property
    def var_names(self) -> pd.Index:
        """The genes' names, in the input's order (``adata.var_names``)."""
        return self.var.index

    def obs(self, columns: Sequence[str] | str | None = None, *, cache_dir: PathLike | None = None) -> pd.DataFrame:
        """The cell table: ``columns`` (default: all) as a DataFrame indexed by the cells' names.

        Categoricals are ``pandas.Categorical`` over the whole dataset's vocabulary; columns the
        input held in pandas nullable dtypes come back as those. Each column is fetched once into
        the local cache shared with the TypeScript side (``cache_dir``, else ``$DELTACELLS_CACHE``,
        ``$XDG_CACHE_HOME/deltacells`` or ``~/.cache/deltacells``; only its column chunks are read
        from the parquet sidecar) and memory-mapped from there afterwards, by any process.
        """
        if isinstance(columns, str):
            columns = [columns]
        if not self.info.get("has_obs"):
            from .errors import NotFound

            # the dataset's content, not a mistake in the call: as the command says it
            raise NotFound(
                f"{self.url} has no obs (has_obs is false in its manifest): it was converted from an input without a cell table, or with obs=False",
                hint="convert the input again without obs=False to keep its cell table (AnnData obs, 10x barcodes; a Matrix Market file or a bare zarr array has none)",
                object=f"{self.url}/manifest.json",
                expected=True,
                found=False,
            )
        args = ["obs", self.url, "--localize"]
        if columns is not None:
            if len(columns) == 0:
                raise ValueError("columns=[] names no column: leave it out for every column")
            args += ["--columns", ",".join(columns)]
        if cache_dir is not None:
            args += ["--cache-dir", os.fspath(cache_dir)]
        info = self._run(args)
        return _obs.frame(info, None if columns is None else list(columns))

    def to_anndata(
        self,
        cells: slice | range | Sequence[int] | np.ndarray | None = None,
        genes: Sequence[str] | Sequence[int] | np.ndarray | None = None,
        obs: Sequence[str] | bool | None = None,
        *,
        progress: bool | None = None,
    ) -> anndata.AnnData:
        """The cells (default: all) as an ``AnnData`` equal to the converted input's rows.

        ``X`` is a ``scipy.sparse.csr_matrix`` of the counts, columns in the input's gene order;
        ``var`` the gene table, ``obs`` the cell table (its index, categoricals, nullable dtypes)
        and ``obsm`` the embeddings kept at conversion. Categoricals keep the whole dataset's
        categories (so codes mean the same in every slice, in :meth:`obs` and in the batches),
        where anndata's own subsetting drops those a slice does not use.

        ``cells``: a slice or range (step 1 is read as such; others are read as their span), a
        sequence or array of cell numbers, or a boolean mask. ``genes``: names or positions in the
        input's order, or a mask (the columns are read whole, then selected). ``obs``: the columns
        to keep (the index always), ``False`` for none, ``None`` for all.
        """
        start, stop, pick = _cell_selection(cells, self.n_cells)
        adata = self._export(start, stop, obs=True, progress=progress)  # obs=False too: the names are in obs
        if pick is not None or genes is not None:
            adata = _take(adata, None if pick is None else pick - start, None if genes is None else _gene_positions(genes, adata.var_names))
        if obs is not None and obs is not True:
            keep = [] if obs is False else list(obs)
            missing = [c for c in keep if c not in adata.obs.columns]
            if missing:
                from .errors import Usage

                raise Usage(f"obs columns {missing} are not in {self.url}'s cell table; it has {list(adata.obs.columns)}")
            adata.obs = adata.obs[keep]
        return adata

    def batches(
        self,
        batch_size: int = 4096,
        *,
        seed: int = 0,
        epoch: int = 0,
        rank: int = 0,
        world_size: int = 1,
        obs: Sequence[str] | str = (),
        genes: Sequence[str] | Sequence[int] | None = None,
        output: Output = "csr",
        dtype: Any = np.float32,
        drop_last: bool = False,
        start_batch: int = 0,
        shuffle: bool = True,
        transport: str = "shm",
        ring: int | None = None,
        copy: bool = False,
        **loader: Any,
    ) -> BatchStream:
        """One epoch of shuffled mini-batches of rank ``rank`` of ``world_size``: the training loader.

        The batches are a function of ``seed``, ``epoch``, ``batch_size``, ``rank``/``world_size``
        and ``drop_last`` only. Each rank reads only its own tiles; every rank yields the same
        number of batches (a rank short of cells repeats some of its own at the end, reported as
        ``batch.padded``; ``drop_last=True`` drops the remainder instead), and the ranks together
        hold every cell once. ``start_batch=k`` resumes an epoch stopped after ``k`` batches without
        reading the tiles before.

        ``output``: ``"csr"`` (``scipy.sparse.csr_matrix``), ``"dense"`` (numpy), ``"torch_csr"``,
        ``"torch_dense"``; counts as ``dtype`` (float32: decoded as such). Columns are the input's
        genes in its order, or ``genes`` (names, or positions in :attr:`var_names`) in that order.
        ``obs``: columns to attach (``batch.obs``: codes of categoricals, ``batch.categories``).
        Also ``sort_indices``, ``threads`` (decoding threads), ``buffer_tiles``, ``memory_cap``
        (MiB).

        ``order="elastic"``: the epoch is one sequence of global batches whatever the world size
        (a function of ``seed``, ``epoch``, ``batch_size``, ``buffer_tiles``, ``lanes`` and
        ``drop_last``): rank ``r`` of ``world_size`` yields global batches ``r, r + world_size,
        ...`` (``batch.global_index``), so any world size dividing ``lanes`` (default the world
        size) yields the same batches between its ranks. ``start_global_batch=n`` resumes after the
        first ``n`` global batches, at any such world size (``k`` batches per rank on ``W`` ranks:
        ``n = k * W``); a rank left one short ends with a padding batch (``batch.padded`` is its
        length). ``report_mixing="cell_type"``: once the stream is closed (after the loop),
        ``stream.mixing`` holds how mixed its batches were along that obs column (the entropy of
        the labels per batch against the dataset's and random batches', labels and tiles per
        batch; docs/loader.md, "The mixing report").

        ``transport``: how batches reach this process. ``"shm"`` (default): the command's decoders
        write each batch into shared memory that ``X`` wraps without a copy, a ring of ``ring``
        slots (default: the batch buffers the loader holds at once; ``stream.info["shm"]["bytes"]``
        says how much memory). A batch's memory is never reused while anything refers to its
        arrays; ``copy=True`` gives each batch arrays of its own and frees its slot at once.
        ``"pipe"``: the batches through the command's stdout (one copy through the kernel).
        """
        options = loader_options(
            batch_size=batch_size,
            seed=seed,
            epoch=epoch,
            rank=rank,
            world_size=world_size,
            obs=obs,
            genes=None if genes is None else self._gene_names(genes),
            drop_last=drop_last,
            start_batch=start_batch,
            shuffle=shuffle,
            **loader,
        )
        return self._stream(options, output=output, dtype=dtype, transport=transport, ring=ring, copy=copy)

    def torch_dataset(
        self,
        batch_size: int = 4096,
        *,
        seed: int = 0,
        epoch: int = 0,
        rank: int | None = None,
        world_size: int | None = None,
        obs: Sequence[str] | str = (),
        genes: Sequence[str] | Sequence[int] | None = None,
        output: Output = "torch_csr",
        dtype: Any = np.float32,
        drop_last: bool = False,
        shuffle: bool = True,
        transport: str = "shm",
        ring: int | None = None,
        copy: bool = False,
        **loader: Any,
    ) -> Any:
        """A ``torch.utils.data.IterableDataset`` of ready-made batches (``DataLoader(ds, batch_size=None)``).

        Options as :meth:`batches`. ``rank`` and ``world_size`` default to ``torch.distributed``'s
        when it is initialised (else 0 of 1); each DataLoader worker streams its own shard, so every
        cell comes once per epoch across ranks and workers. Call ``set_epoch(e)`` before each epoch
        (it reaches persistent workers). ``threads`` is the decoding threads of each worker's
        command: with several workers, 1 or 2 each. With ``order="elastic"`` the shards are the
        global batch sequence's ranks (``lanes`` a multiple of ranks times workers);
        ``report_mixing`` prints each worker's report on stderr after its epoch. ``start_batch`` (or
        ``start_global_batch``) resumes ``epoch`` alone: after ``set_epoch`` to another epoch, every
        epoch starts at its first batch.
        """
        from ._shards import EpochShards

        try:
            from .torch import TorchDataset
        except ImportError as err:
            raise ImportError(f"torch_dataset() needs torch ({err}): pip install torch; batches() works without it") from err
        options = loader_options(
            batch_size=batch_size,
            seed=seed,
            epoch=epoch,
            obs=obs,
            genes=None if genes is None else self._gene_names(genes),
            drop_last=drop_last,
            shuffle=shuffle,
            **loader,
        )
        shards = EpochShards(
            self, options, output=output, dtype=dtype, transport=transport, ring=ring, copy=copy, rank=rank, world_size=world_size
        )
        return TorchDataset(shards)

    def _stream(
        self,
        options: LoaderOptions,
        *,
        output: str,
        dtype: Any,
        transport: str,
        ring: int | None = None,
        copy: bool = False,
        mixing_report: bool = True,
    ) -> BatchStream:
        return BatchStream(
            self.url,
            options,
            output=output,
            dtype=dtype,
            transport=transport,
            ring=ring,
            copy=copy,
            storage_args=self._storage_args,
            env=self._env,
            mixing_report=mixing_report,
        )

    def _gene_names(self, genes: Sequence[str] | Sequence[int]) -> list[str]:
        arr = np.asarray(genes)
        if arr.dtype.kind in "iub":
            return [str(n) for n in self.var_names[_gene_positions(arr, self.var_names)]]
        return [str(g) for g in arr.tolist()]

    def _export(self, start: int, stop: int, *, obs: bool, progress: bool | None = None) -> anndata.AnnData:
        import anndata

        bars = progress_bars(progress)
        with tempfile.TemporaryDirectory(prefix="deltacells-") as tmp:
            path = os.path.join(tmp, "cells.h5ad")
            args = ["export", self.url, path, "--cells", f"{start}:{stop}", "--source-gene-order"]
            if not obs:
                args.append("--no-obs")
            if bars is None:
                args.append("--quiet")
            try:
                self._run(args, on_progress=bars)
            finally:
                if bars is not None:
                    bars.close()
            return anndata.read_h5ad(path)


def _take(adata: anndata.AnnData, rows: np.ndarray | None, cols: np.ndarray | None) -> anndata.AnnData:
    """Rows and columns of ``adata`` as a new AnnData, categoricals keeping the dataset's whole
    vocabulary (anndata's own subsetting drops the unused categories: codes would then differ
    between two slices of one dataset, and from ``obs()`` and the batches')."""
    import anndata

    x = adata.X if rows is None else adata.X[rows]
    x = x if cols is None else x[:, cols]
    obs = adata.obs if rows is None else adata.obs.iloc[rows]
    var = adata.var if cols is None else adata.var.iloc[cols]
    obsm = {k: (v if rows is None else v[rows]) for k, v in adata.obsm.items()}
    return anndata.AnnData(X=x, obs=obs, var=var, obsm=obsm)


def _cell_selection(cells: Any, n: int) -> tuple[int, int, np.ndarray | None]:
    """``(start, stop, pick)``: the span of cells to read, and the cells to keep of it (None: all)."""
    if cells is None:
        return 0, n, None
    if isinstance(cells, (slice, range)):
        r = range(n)[cells] if isinstance(cells, slice) else cells
        if r.step == 1 and (len(r) == 0 or (r.start >= 0 and r.stop <= n)):
            return (r.start, r.stop, None) if len(r) else (0, 0, None)
        cells = np.asarray(r, dtype=np.int64)
    arr = np.asarray(cells)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise IndexError(f"a boolean mask of cells must have {n} entries, got {arr.shape}")
        arr = np.flatnonzero(arr)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"cells must be a slice, a range, cell numbers or a boolean mask, got {arr.dtype}")
    arr = arr.astype(np.int64).ravel()
    arr = np.where(arr < 0, arr + n, arr)
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise IndexError(f"cell numbers must be in 0 .. {n - 1}")
    if arr.size == 0:
        return 0, 0, arr
    start, stop = int(arr.min()), int(arr.max()) + 1
    if arr.size == stop - start and np.array_equal(arr, np.arange(start, stop)):
        return start, stop, None
    return start, stop, arr


def _gene_positions(genes: Any, names: pd.Index) -> np.ndarray:
    arr = np.asarray(genes)
    if arr.dtype == bool:
        if arr.shape != (len(names),):
            raise IndexError(f"a boolean mask of genes must have {len(names)} entries, got {arr.shape}")
        return np.flatnonzero(arr)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64)
    wanted = [str(g) for g in arr.tolist()]
    positions = names.get_indexer(wanted) if names.is_unique else np.array([names.get_loc(g) if g in names else -1 for g in wanted])
    missing = [g for g, p in zip(wanted, positions, strict=True) if p < 0]
    if missing:
        raise KeyError(f"genes not in the dataset: {missing[:10]}{' ...' if len(missing) > 10 else ''}")
    return np.asarray(positions, dtype=np.int64)


def open(url: PathLike, **storage_options: Any) -> Dataset:  # noqa: A001 - the package's front door, like anndata's read_*
    """Open a deltacells dataset: a local folder, ``s3://bucket/prefix`` or ``https://...``.

    Reads its manifest (and gene and obs names) only. ``storage_options``, as s3fs spells them:
    ``anon=True`` reads a public bucket unsigned; otherwise credentials are found as the AWS CLI
    finds them (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ``AWS_PROFILE``,
    ``~/.aws/credentials`` and ``~/.aws/config``), or given as ``key``, ``secret``, ``token``,
    ``profile``; ``region``, ``endpoint_url`` (an S3-compatible server); ``retries`` and
    ``timeout`` (seconds) for ``s3://`` and ``https://`` reads.
    """
    location = positional([url])[0]
    storage_args, env = storage_arguments(storage_options)
    info = run_json(["inspect", location, *storage_args], env=env)
    if info.get("format") != "deltacells-dataset":
        from .errors import NotAStore

        raise NotAStore(f"{location} is a sporadik store, not a deltacells dataset: open() reads deltacells datasets", object=location)
    return Dataset(location, info, storage_args, env)


# ``open`` shadows the built-in in this module: keep the built-in reachable for the code here.
_builtin_open = builtins.open
