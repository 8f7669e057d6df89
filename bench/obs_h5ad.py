"""A 1,000,000-cell .h5ad with a realistic cell table, for `bench/convert-rss.ts --h5ad`.

Written by anndata (the input path users have): 10 obs columns (three categoricals, int64,
float32, float64, bool, a nullable Int32, a free string, a 500-category categorical), a named
index of barcodes, an obsm X_umap, and a sparse X with few genes per cell so the run measures obs,
not the tiles. Cached: does nothing when the file exists.

    conformance/.venv/bin/python bench/obs_h5ad.py /tmp/deltacells-obs-1m.h5ad [N_CELLS]
"""

import os
import sys

import anndata as ad
import numpy as np
import pandas as pd
import scipy.sparse as sp

path = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
if os.path.exists(path):
    sys.exit(0)
rng = np.random.default_rng(1)
n_genes, per_cell = 2000, 5
indptr = np.arange(0, (n + 1) * per_cell, per_cell, dtype=np.int64)
indices = np.sort(rng.integers(0, n_genes, size=(n, per_cell)), axis=1).astype(np.int32).ravel()
data = rng.integers(1, 20, size=n * per_cell).astype(np.float32)
X = sp.csr_matrix((data, indices, indptr), shape=(n, n_genes))


def cat(labels, missing=0.01):
    codes = rng.integers(0, len(labels), size=n)
    codes[rng.random(n) < missing] = -1
    return pd.Categorical.from_codes(codes, categories=labels)


nullable = pd.array(rng.integers(0, 3000, size=n), dtype="Int32")
nullable[rng.random(n) < 0.05] = pd.NA
obs = pd.DataFrame(
    {
        "cell_type": cat([f"type_{i}" for i in range(20)]),
        "batch": cat([f"batch_{i}" for i in range(8)]),
        "phase": cat(["G1", "S", "G2M"]),
        "n_counts": rng.integers(0, 5000, size=n).astype(np.int64),
        "percent_mito": (rng.random(n) * 0.2).astype(np.float32),
        "score": rng.normal(size=n),
        "is_doublet": rng.random(n) < 0.1,
        "n_genes": nullable,
        "note": [f"sample-{i % 977}-{i}" for i in range(n)],
        "donor": cat([f"donor_{i}" for i in range(500)]),
    },
    index=pd.Index([f"CELL{i:08d}-1" for i in range(n)], name="barcode"),
)
var = pd.DataFrame(index=[f"SYN{g}" for g in range(n_genes)])
a = ad.AnnData(X=X, obs=obs, var=var)
a.obsm["X_umap"] = rng.normal(size=(n, 2)).astype(np.float32)
tmp = path + ".tmp"
a.write_h5ad(tmp)
os.replace(tmp, path)
