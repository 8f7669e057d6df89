"""Writes the codec benchmark's input matrices to bench/out/ as CSR .npy triples
(<name>.indptr.npy int64, <name>.indices.npy int32, <name>.data.npy float32) plus <name>.json
with the shape. Real matrices from ../shared/data (read-only), genes sorted by decreasing total
as the converter does, and one synthetic realistic matrix (gamma-Poisson counts, heavy-tailed
gene means, ~1-3k genes per cell over 33,538 genes).

Run with conformance/.venv/bin/python bench/codec_data.py [DATA_DIR]
"""

import json
import os
import sys

import h5py
import numpy as np
import scipy.io
import scipy.sparse as sp
import zarr

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "out")
DATA = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "shared", "data")


def save(name, m):
    m = sp.csr_matrix(m)
    # Converter order: genes by decreasing total counts.
    order = np.argsort(-np.asarray(m.sum(axis=0)).ravel(), kind="stable")
    m = sp.csr_matrix(m[:, order])
    m.sort_indices()
    np.save(os.path.join(OUT, f"{name}.indptr.npy"), m.indptr.astype(np.int64))
    np.save(os.path.join(OUT, f"{name}.indices.npy"), m.indices.astype(np.int32))
    np.save(os.path.join(OUT, f"{name}.data.npy"), m.data.astype(np.float32))
    with open(os.path.join(OUT, f"{name}.json"), "w") as f:
        json.dump({"n_cells": m.shape[0], "n_genes": m.shape[1], "nnz": int(m.nnz)}, f)
    print(name, m.shape, m.nnz)


def mouse():
    x = zarr.open_array(os.path.join(DATA, "mouse-10k-subset", "10x-10k-subset.zarr", "X"), mode="r")
    save("mouse-10k", sp.csr_matrix(np.asarray(x[:], dtype=np.float32)))


def chr21():
    with h5py.File(os.path.join(DATA, "10x-v3-chr21", "filtered_feature_bc_matrix.h5"), "r") as f:
        g = f["matrix"]
        shape = tuple(g["shape"][:])  # genes x cells
        m = sp.csc_matrix((g["data"][:], g["indices"][:], g["indptr"][:]), shape=shape)
    save("10x-chr21", m.T)


def synthetic(n_cells=12_000, n_genes=33_538, seed=0):
    rng = np.random.default_rng(seed)
    # Heavy-tailed gene means (log-normal), cell size factors, NB (gamma-Poisson) counts, scaled
    # so that cells express ~1-3k genes.
    means = np.exp(rng.normal(-4.2, 2.0, n_genes))
    size = np.exp(rng.normal(0.0, 0.35, n_cells))
    theta = 2.0
    blocks = []
    for lo in range(0, n_cells, 1000):
        s = size[lo : lo + 1000, None]
        lam = s * means[None, :] * rng.gamma(theta, 1.0 / theta, (s.shape[0], n_genes))
        blocks.append(sp.csr_matrix(rng.poisson(lam).astype(np.float32)))
    m = sp.vstack(blocks).tocsr()
    per_cell = np.diff(m.indptr)
    print("synthetic genes per cell: median", int(np.median(per_cell)), "p5", int(np.percentile(per_cell, 5)), "p95", int(np.percentile(per_cell, 95)), "max count", m.data.max())
    save("synthetic-12k", m)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    mouse()
    chr21()
    synthetic()
