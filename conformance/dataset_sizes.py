"""Writes the count matrix of an input the way anndata users store it, for the size comparison
of bench/dataset-bytes.ts: an .h5ad with gzip (X as CSR int32) and a .zarr (anndata's defaults).

Usage: dataset_sizes.py KIND INPUT OUTDIR [--transpose]
Prints {"h5ad_gzip": bytes, "zarr": bytes, "nnz": n}.
"""

import argparse
import json
import os
import sys

import anndata as ad
import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import canonical  # noqa: E402
from dataset_roundtrip import load_input  # noqa: E402


def tree_size(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("kind")
    p.add_argument("input")
    p.add_argument("outdir")
    p.add_argument("--transpose", action="store_true")
    args = p.parse_args()
    m, var = load_input(args.kind, args.input, None, False, args.transpose)
    x = canonical(m).astype(np.int32)
    a = ad.AnnData(X=sp.csr_matrix(x))
    if var is not None and len(var.index) == x.shape[1]:
        a.var_names = [str(v) for v in var.index]
    a.var_names_make_unique()
    h5 = os.path.join(args.outdir, "x.h5ad")
    zr = os.path.join(args.outdir, "x.zarr")
    a.write_h5ad(h5, compression="gzip")
    a.write_zarr(zr)
    print(json.dumps({"h5ad_gzip": tree_size(h5), "zarr": tree_size(zr), "nnz": int(x.nnz), "input": tree_size(args.input)}))


if __name__ == "__main__":
    main()
