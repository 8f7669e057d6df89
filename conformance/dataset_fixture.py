"""Writes a small .h5ad whose gene table has every column kind the dataset writer must keep:
two categoricals (an ordered one with its categories out of first-appearance order and an unused
one, as in [low, mid, high]; an unordered one like 10x's `genome`), a nullable integer, int64,
bool, float32, strings, and a named index. Used by packages/cli/test/roundtrip.test.ts (generated per run, not committed).

Usage: dataset_fixture.py OUT.h5ad
"""

import sys

import anndata as ad
import numpy as np
import pandas as pd
import scipy.sparse as sp


def main():
    rng = np.random.default_rng(4)
    n_cells, n_genes = 37, 14
    means = rng.gamma(0.5, 2.0, size=n_genes)
    x = rng.poisson(rng.gamma(2.0, 0.5, size=(n_cells, 1)) * means[None, :]).astype(np.int32)
    var = pd.DataFrame(
        {
            "feature_types": pd.Categorical(["b", "a"] * (n_genes // 2), categories=["c", "b", "a"], ordered=True),
            "genome": pd.Categorical(["GRCh38"] * n_genes, categories=["mm10", "GRCh38"]),
            "n_cells": np.arange(n_genes, dtype=np.int64) * 3,
            "highly_variable": np.arange(n_genes) % 3 == 0,
            "gene_ids": [f"ENSG{i:08d}" for i in range(n_genes)],
            "dispersion": rng.random(n_genes).astype(np.float32),
            "score": pd.array([1, None] * (n_genes // 2), dtype="Int32"),
        },
        index=pd.Index([f"GENE{i}" for i in range(n_genes)], name="symbol"),
    )
    ad.AnnData(X=sp.csr_matrix(x), var=var).write_h5ad(sys.argv[1])


if __name__ == "__main__":
    main()
