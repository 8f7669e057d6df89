"""``deltacells.convert``: any supported input to a deltacells dataset (or a sporadik store)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ._cli import STORAGE_OPTIONS, flags, positional, run_json, storage_arguments
from ._progress import progress_bars

PathLike = str | os.PathLike[str]


def convert(
    inputs: PathLike | Sequence[PathLike],
    output: PathLike,
    *,
    progress: bool | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Convert a count matrix to a deltacells dataset, as ``deltacells convert INPUT OUTPUT`` does.

    ``inputs`` is an AnnData ``.h5ad`` or ``.zarr``, a Cell Ranger ``.h5``, a 10x Matrix Market
    folder, a Matrix Market file or a zarr array (a path or a URL: ``s3://``, ``https://`` for
    zarr and Matrix Market); ``output`` a folder or ``s3://bucket/prefix``. It must be new or empty
    unless ``overwrite=True`` (the old dataset stays readable until the new one is complete).

    Every option of the command is a keyword, its flag's name with underscores: ``tile_size``,
    ``chunks``, ``level``, ``layer="counts"``, ``raw=True``, ``transpose=True``, ``genome``,
    ``hdf5_timeout``, ``threads``, ``overwrite=True``, ``break_lock=True``, ``sporadik=True``
    (with the companion's rows in embedding order when obs has an embedding; ``sporadik_rows=False``
    leaves them out, ``sporadik_rows=True`` refuses a dataset without one),
    ``format="sporadik"`` with ``axes=(0, 1)``, ``byte_addressable=True``, ``max_nnz``,
    ``tmp_dir``; the cell table's ``obs=False`` (none), ``obsm=["X_umap"]`` or ``obsm="none"``,
    ``obs_exclude=[...]``, ``max_categories``; a plain ``.mtx``'s names, ``genes="features.tsv"``
    and ``barcodes="barcodes.tsv"``. Storage options for ``s3://`` as for
    :func:`deltacells.open` (``anon``, ``profile``, ``endpoint_url``, ...).

    ``progress``: a tqdm bar per pass (default: when tqdm is installed and stderr is a terminal).

    Returns the command's summary: ``n_cells``, ``n_genes``, ``nnz``, ``n_tiles``, ``bytes``,
    ``output``, ``seconds``, ``unnamed`` (the axes the input named nothing along), ``not_stored``
    (what the input holds that the dataset does not, each with ``reason`` and the ``flag`` that
    keeps it when one does), ... A refusal raises the exception of its tag
    (:class:`~deltacells.TargetNotEmpty`, :class:`~deltacells.NotCounts`, ...), with its hint.
    """
    storage = {k: options.pop(k) for k in list(options) if k in STORAGE_OPTIONS}
    if options.get("obs") is False:
        options.pop("obs")
        options["no_obs"] = True
    # The rows in embedding order come with sporadik=True by default: False is the flag that opts out.
    if options.get("sporadik_rows") is False:
        options.pop("sporadik_rows")
        options["no_sporadik_rows"] = True
    obsm = options.get("obsm")
    if obsm is not None and not isinstance(obsm, str) and len(obsm) == 0:
        options["obsm"] = "none"
    if "quiet" in options:
        raise TypeError("convert() has no quiet option: progress=False turns the bars off")
    bars = progress_bars(progress)
    sources = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    storage_args, env = storage_arguments(storage)
    args = ["convert", *positional(sources), *positional([output]), *flags(options), *storage_args]
    if bars is None:
        args.append("--quiet")
    try:
        return run_json(args, env=env, on_progress=bars)
    finally:
        if bars is not None:
            bars.close()
