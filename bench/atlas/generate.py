"""Writes the atlas benchmark's inputs: one synthetic, realistic count matrix (bench/sporadik/
generate.py's gamma-Poisson cells over heavy-tailed gene popularities) cut into INPUTS h5ad files of
equal cells, each missing a different tenth of the genes (its own gene set, as studies measure
different genes) and with obs columns that differ as atlases' do (a cell type with its own
categories, n_genes int32 in even inputs and float64 in odd ones, a column only some inputs have).

Usage: conformance/.venv/bin/python bench/atlas/generate.py OUT_DIR [--cells N] [--genes G]
       [--genes-per-cell K] [--inputs I] [--seed S]
Writes OUT_DIR/input_NN.h5ad and, last, OUT_DIR/meta.json (the marker that the set is complete).
"""

import argparse
import json
import os
import sys
import time

import anndata as ad
import numpy as np
import pandas as pd
import scipy.sparse as sp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sporadik"))
from generate import generate  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--cells", type=int, default=200_000)
    p.add_argument("--genes", type=int, default=20_000)
    p.add_argument("--genes-per-cell", type=int, default=800)
    p.add_argument("--inputs", type=int, default=8)
    p.add_argument("--seed", type=int, default=7)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    t0 = time.perf_counter()
    x = generate(a.cells, a.genes, a.genes_per_cell, a.seed).astype(np.float32)
    rng = np.random.default_rng(a.seed + 1)
    names = np.array([f"GENE{g:05d}" for g in range(a.genes)])
    types = [f"type_{t}" for t in range(20)]
    per = a.cells // a.inputs
    files = []
    for i in range(a.inputs):
        rows = slice(i * per, (i + 1) * per if i < a.inputs - 1 else a.cells)
        keep = np.sort(rng.choice(a.genes, size=a.genes - a.genes // 10, replace=False))
        m = sp.csr_matrix(x[rows][:, keep])
        n = m.shape[0]
        mine = types[i % 5 : i % 5 + 12]
        obs = pd.DataFrame(
            {
                "cell_type": pd.Categorical(rng.choice(mine, n), categories=mine),
                "n_genes": np.diff(m.indptr).astype(np.int32 if i % 2 == 0 else np.float64),
            },
            index=[f"in{i}-cell{c}" for c in range(n)],
        )
        if i % 3 == 0:
            obs["donor"] = pd.Categorical([f"donor_{i}_{c % 4}" for c in range(n)])
        var = pd.DataFrame({"gene_ids": [f"ENSG{g:011d}" for g in keep]}, index=names[keep])
        path = os.path.join(a.out, f"input_{i:02d}.h5ad")
        ad.AnnData(X=m, obs=obs, var=var).write_h5ad(path)
        files.append({"path": path, "cells": int(n), "nnz": int(m.nnz), "bytes": os.path.getsize(path)})
    meta = {"cells": a.cells, "genes": a.genes, "genes_per_cell": a.genes_per_cell, "inputs": files, "seconds": time.perf_counter() - t0}
    with open(os.path.join(a.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main()
