"""An .h5ad shaped like a 10x atlas's cells, for `bench/convert-companion.ts`: N cells x 33,538
genes (the GRCh38 gene count of Cell Ranger's references), about 2,000 nonzeros per cell (from
1,000 to 3,500, as a cell's sequencing depth varies), gene popularity skewed as in real data (a
few genes in most cells, most genes in few), counts mostly 1 with a long tail, a cell-type column.
Written by anndata in blocks of cells. Cached: does nothing when the file exists.

    conformance/.venv/bin/python bench/companion_h5ad.py /tmp/companion-20000.h5ad 20000
"""

import os
import sys

import anndata as ad
import numpy as np
import pandas as pd
import scipy.sparse as sp

path = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 20_000
if os.path.exists(path):
    sys.exit(0)
n_genes = 33_538
rng = np.random.default_rng(7)
# Zipf-like popularity over a shuffled gene order: gene g is drawn with weight 1 / (rank + 10).
weights = 1.0 / (np.arange(n_genes) + 10.0)
weights = weights[rng.permutation(n_genes)]
weights /= weights.sum()
blocks = []
for start in range(0, n, 5_000):
    rows = []
    for _ in range(min(5_000, n - start)):
        k = int(rng.integers(1_000, 3_501))
        genes = np.unique(rng.choice(n_genes, size=k, replace=False, p=weights))
        counts = rng.geometric(0.6, size=genes.size).astype(np.float32)
        rows.append((genes.astype(np.int32), counts))
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([g.size for g, _ in rows])
    indices = np.concatenate([g for g, _ in rows])
    data = np.concatenate([c for _, c in rows])
    blocks.append(sp.csr_matrix((data, indices, indptr), shape=(len(rows), n_genes)))
X = sp.vstack(blocks, format="csr")
obs = pd.DataFrame(
    {"cell_type": pd.Categorical.from_codes(rng.integers(0, 30, size=n), [f"type_{i}" for i in range(30)])},
    index=pd.Index([f"CELL{i:08d}-1" for i in range(n)], name="barcode"),
)
var = pd.DataFrame(index=[f"GENE{g:05d}" for g in range(n_genes)])
tmp = path + ".tmp"
ad.AnnData(X=X, obs=obs, var=var).write_h5ad(tmp)
os.replace(tmp, path)
