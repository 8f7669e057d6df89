"""Writes a synthetic count matrix (gamma-Poisson counts, heavy-tailed gene means) as CSR and CSC
.h5ad files and a 10x-style genes x cells .mtx, for the memory measurements of packages/anndata
(packages/anndata/bench/memory.ts). Not used by tests.

usage: anndata_synthetic.py OUT_DIR N_CELLS N_GENES
"""

import os
import sys

import anndata as ad
import numpy as np
import scipy.io
import scipy.sparse as sp


def main():
    out, n_cells, n_genes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(1)
    means = rng.lognormal(-2.5, 1.8, n_genes)
    blocks = []
    for start in range(0, n_cells, 5000):
        n = min(5000, n_cells - start)
        depth = rng.gamma(4.0, 0.25, (n, 1))
        lam = depth * means[None, :]
        # draw only where counts are likely nonzero-ish: a Poisson per entry is fine at this size
        block = sp.csr_matrix(rng.poisson(lam).astype(np.float32))
        blocks.append(block)
    x = sp.vstack(blocks).tocsr()
    print("nnz", x.nnz, "per cell", x.nnz / n_cells, file=sys.stderr)
    a = ad.AnnData(X=x)
    a.write_h5ad(os.path.join(out, "csr.h5ad"))
    a.X = x.tocsc()
    a.write_h5ad(os.path.join(out, "csc.h5ad"))
    scipy.io.mmwrite(os.path.join(out, "matrix.mtx"), x.T.tocsc().tocoo())


if __name__ == "__main__":
    main()
