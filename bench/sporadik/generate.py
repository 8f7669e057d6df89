"""Writes the sporadik benchmark's store: one synthetic, realistic count matrix, written by the Python
reference writer (sporadik 1.1.1's ``write_store``) with both layouts (axis0 = CSR, axis1 = CSC),
once chunked (the default: ~128 KB zstd chunks) and once byte-addressable (one raw chunk per array).
Both readers are then measured on the very same bytes.

The matrix: ``cells x genes`` float32 counts with int32 indices (what scanpy holds after reading a
10x file), ~``genes_per_cell`` nonzeros per cell.

- Gene popularities are heavy-tailed (log-normal, sigma 2): a few genes are in every cell, most in
  few. This is what makes the CSC columns wildly uneven, as in real data.
- Cells belong to one of ``TYPES`` cell types; each type's gene profile is the popularity times a
  Gamma(2, 1/2) factor per gene, so a gene's count over cells is a gamma-Poisson mixture (over-
  dispersed), not a plain Poisson.
- Each cell's library size (UMIs) is log-normal; its UMIs are drawn from its type's profile
  (multinomial = Poisson conditioned on the total), so a cell's count for a gene is a
  Poisson(size x profile) draw, and repeated draws of one gene become counts > 1.

Drawing UMIs rather than sampling every (cell, gene) keeps generation O(UMIs): vectorized alias
sampling in blocks of cells, ~a minute for 100 M nonzeros.

Usage: conformance/.venv/bin/python bench/sporadik/generate.py OUT_DIR [--cells N] [--genes G]
       [--genes-per-cell K] [--seed S]
Writes OUT_DIR/chunked.zarr, OUT_DIR/ranged.zarr and, last, OUT_DIR/meta.json (the marker that the
store is complete; a directory without it is regenerated).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time

import numpy as np
import scipy.sparse as sp
import sporadik

TYPES = 20
GENE_SIGMA = 2.0
TYPE_SHAPE = 2.0
LIBRARY_SIGMA = 0.5
BLOCK = 10_000


def alias_table(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vose's alias table for the categorical ``p``: draw j uniform, keep it with prob[j], else alias[j]."""
    n = p.size
    scaled = p * n / p.sum()
    prob = np.zeros(n, dtype=np.float32)
    alias = np.zeros(n, dtype=np.int32)
    small = list(np.flatnonzero(scaled < 1.0))
    large = list(np.flatnonzero(scaled >= 1.0))
    scaled = scaled.tolist()
    while small and large:
        s = small.pop()
        g = large.pop()
        prob[s] = scaled[s]
        alias[s] = g
        scaled[g] = scaled[g] + scaled[s] - 1.0
        (small if scaled[g] < 1.0 else large).append(g)
    for rest in large + small:
        prob[rest] = 1.0
        alias[rest] = rest
    return prob, alias


def expected_distinct(p: np.ndarray, umis: float) -> float:
    return float(np.sum(-np.expm1(umis * np.log1p(-p))))


def generate(cells: int, genes: int, genes_per_cell: int, seed: int) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    popularity = rng.lognormal(0.0, GENE_SIGMA, genes)
    profiles = popularity[None, :] * rng.gamma(TYPE_SHAPE, 1.0 / TYPE_SHAPE, (TYPES, genes))
    profiles /= profiles.sum(axis=1, keepdims=True)
    # The median library size that gives ~genes_per_cell distinct genes for a typical cell.
    lo, hi = float(genes_per_cell), float(genes_per_cell) * 1000.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if np.mean([expected_distinct(p, mid) for p in profiles]) < genes_per_cell:
            lo = mid
        else:
            hi = mid
    median_umis = (lo + hi) / 2
    tables = [alias_table(p) for p in profiles]
    prob = np.concatenate([t[0] for t in tables])
    alias = np.concatenate([t[1] for t in tables]).astype(np.int32)

    indptr = np.zeros(cells + 1, dtype=np.int64)
    indices_parts, data_parts = [], []
    for start in range(0, cells, BLOCK):
        n = min(BLOCK, cells - start)
        umis = np.maximum(1, rng.lognormal(np.log(median_umis), LIBRARY_SIGMA, n)).astype(np.int64)
        kind = rng.integers(0, TYPES, n).astype(np.int64)
        owner = np.repeat(np.arange(n, dtype=np.int64), umis)
        slot = np.repeat(kind * genes, umis)
        j = (rng.random(owner.size, dtype=np.float32) * genes).astype(np.int64)
        np.minimum(j, genes - 1, out=j)
        slot += j
        keep = rng.random(owner.size, dtype=np.float32) < prob[slot]
        gene = np.where(keep, j, alias[slot])
        del slot, j, keep
        key = owner * genes + gene
        del owner, gene
        key.sort()
        first = np.empty(key.size, dtype=bool)
        first[0] = True
        np.not_equal(key[1:], key[:-1], out=first[1:])
        heads = np.flatnonzero(first)
        counts = np.diff(np.append(heads, key.size))
        unique = key[heads]
        del key, first
        rows = unique // genes
        indices_parts.append((unique - rows * genes).astype(np.int32))
        data_parts.append(counts.astype(np.float32))
        indptr[start + 1 : start + n + 1] = np.cumsum(np.bincount(rows, minlength=n))
        indptr[start + 1 : start + n + 1] += indptr[start]
    indices = np.concatenate(indices_parts)
    data = np.concatenate(data_parts)
    # scipy's rule (and so scanpy's): int32 index arrays while nnz fits.
    if indptr[-1] < 2**31:
        indptr = indptr.astype(np.int32)
    return sp.csr_matrix((data, indices, indptr), shape=(cells, genes))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--cells", type=int, default=100_000)
    parser.add_argument("--genes", type=int, default=20_000)
    parser.add_argument("--genes-per-cell", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    out = args.out
    if os.path.exists(os.path.join(out, "meta.json")):
        print(f"{out} exists, nothing to do")
        return
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    t0 = time.perf_counter()
    csr = generate(args.cells, args.genes, args.genes_per_cell, args.seed)
    csr.has_sorted_indices = True
    t1 = time.perf_counter()
    csc = csr.tocsc()
    csc.sort_indices()
    t2 = time.perf_counter()
    print(
        f"generated {csr.shape[0]} x {csr.shape[1]}, nnz {csr.nnz:,} ({csr.nnz / csr.shape[0]:.0f} per cell) "
        f"in {t1 - t0:.1f} s, CSC in {t2 - t1:.1f} s",
        flush=True,
    )
    for name, ranged in (("chunked.zarr", False), ("ranged.zarr", True)):
        t = time.perf_counter()
        sporadik.write_store(os.path.join(out, name), [csr, csc], byte_addressable=ranged)
        print(f"wrote {name} in {time.perf_counter() - t:.1f} s", flush=True)
    per_gene = np.diff(csc.indptr)
    meta = {
        "cells": csr.shape[0],
        "genes": csr.shape[1],
        "nnz": int(csr.nnz),
        "seed": args.seed,
        "genes_per_cell_target": args.genes_per_cell,
        "nnz_per_cell": {"mean": float(np.diff(csr.indptr).mean()), "max": int(np.diff(csr.indptr).max())},
        "nnz_per_gene": {
            "median": float(np.median(per_gene)),
            "mean": float(per_gene.mean()),
            "max": int(per_gene.max()),
        },
        "max_count": float(csr.data.max()),
        "dtypes": {"data": str(csr.data.dtype), "indices": str(csr.indices.dtype), "indptr": str(csr.indptr.dtype)},
        "writer": f"sporadik {sporadik.__version__} (Python)",
        "seconds": round(time.perf_counter() - t0, 1),
    }
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
    print(json.dumps(meta), flush=True)


if __name__ == "__main__":
    sys.exit(main())
