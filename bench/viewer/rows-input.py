"""The input of the bounded-memory measurement of `convert --sporadik --sporadik-rows`
(bench/RESULTS.md, "Writing them in bounded memory"): an .h5ad of N cells x 2,000 genes, 50
nonzeros a cell (every 40th gene from a per-cell offset), X_umap in 12 Gaussian clusters, as the
viewer bench's synthetic dataset (bench/viewer-data.ts) has them.

    conformance/.venv/bin/python bench/viewer/rows-input.py 1000000 c1m.h5ad
"""

import sys

import anndata as ad
import numpy as np
import pandas as pd
import scipy.sparse as sp

n, out = int(sys.argv[1]), sys.argv[2]
genes, per_cell = 2000, 50
rng = np.random.default_rng(7)
indptr = np.arange(0, n * per_cell + 1, per_cell, dtype=np.int64)
columns = np.arange(per_cell) * (genes // per_cell) + rng.integers(0, genes // per_cell, size=(n, 1))
data = rng.integers(1, 20, size=n * per_cell).astype(np.float32)
X = sp.csr_matrix((data, columns.ravel().astype(np.int32), indptr), shape=(n, genes))
centres = rng.normal(0, 8, size=(12, 2))
cluster = rng.integers(0, 12, size=n)
obs = pd.DataFrame(
    {"cluster": pd.Categorical([f"c{k}" for k in cluster])}, index=[f"cell{i}" for i in range(n)]
)
a = ad.AnnData(X=X, obs=obs, var=pd.DataFrame(index=[f"g{g}" for g in range(genes)]))
a.obsm["X_umap"] = (centres[cluster] + rng.normal(size=(n, 2))).astype(np.float32)
a.write_h5ad(out)
