"""Writes the loader benchmark's input: one synthetic, realistic count matrix as an .h5ad, the file
both sides of the benchmark start from (``deltacells convert`` makes the dataset, annbatch's own
writer makes its sharded zarr collection).

The matrix comes from the sporadik benchmark's generator (bench/sporadik/generate.py: heavy-tailed
log-normal gene popularities, 20 cell-type profiles with Gamma(2, 1/2) factors per gene, log-normal
library sizes, UMIs drawn from the profile, so counts are gamma-Poisson): float32 counts with int32
indices, as scanpy holds them after reading a 10x file. obs has one categorical, ``cell_type``
(20 labels, drawn independently of the profiles: the loaders only carry it), and var the gene names.

Usage: conformance/.venv/bin/python bench/loader/generate.py OUT_DIR [--cells N] [--genes G]
       [--genes-per-cell K] [--seed S]
Writes OUT_DIR/cells.h5ad and, last, OUT_DIR/meta.json (the marker that the input is complete; a
directory without it is regenerated).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import anndata as ad
import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sporadik"))
from generate import generate  # noqa: E402  (the sporadik benchmark's generator, one source of truth)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--cells", type=int, default=100_000)
    parser.add_argument("--genes", type=int, default=33_538)
    parser.add_argument("--genes-per-cell", type=int, default=1_500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    out = args.out
    if os.path.exists(os.path.join(out, "meta.json")):
        print(f"{out} exists, nothing to do")
        return
    os.makedirs(out, exist_ok=True)
    t0 = time.perf_counter()
    csr = generate(args.cells, args.genes, args.genes_per_cell, args.seed)
    csr.has_sorted_indices = True
    rng = np.random.default_rng(args.seed + 1)
    labels = pd.Categorical.from_codes(rng.integers(0, 20, args.cells), [f"type_{i}" for i in range(20)])
    adata = ad.AnnData(
        X=csr,
        obs=pd.DataFrame({"cell_type": labels}, index=[f"cell{i}" for i in range(args.cells)]),
        var=pd.DataFrame(index=[f"GENE{j}" for j in range(args.genes)]),
    )
    adata.write_h5ad(os.path.join(out, "cells.h5ad"))
    per_cell = np.diff(csr.indptr)
    meta = {
        "cells": args.cells,
        "genes": args.genes,
        "nnz": int(csr.nnz),
        "seed": args.seed,
        "genes_per_cell": {"mean": float(per_cell.mean()), "median": float(np.median(per_cell)), "max": int(per_cell.max())},
        "max_count": float(csr.data.max()),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
    print(json.dumps(meta), flush=True)


if __name__ == "__main__":
    sys.exit(main())
