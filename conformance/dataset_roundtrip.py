"""Checks a deltacells dataset and its .h5ad export against the input it was converted from,
using only independent implementations: anndata, h5py, scipy, numpy, pandas, and the spec-written
tile decoder (tile_decode.py).

Usage: dataset_roundtrip.py --batch CASES.json   (a JSON list of the argument lists below)
       dataset_roundtrip.py KIND INPUT DATASET EXPORT_H5AD [--layer NAME] [--raw] [--transpose]
                            [--mtx EXPORT_MTX --cells A:B]

KIND is h5ad | anndata-zarr | 10x-h5 | 10x-mtx | mtx | zarr-array. EXPORT_H5AD is the whole
dataset exported with --source-gene-order; EXPORT_MTX, if given, is cells A:B exported to Matrix
Market in the dataset's column order. Prints one JSON object {"ok": bool, "problems": [...],
"n_cells", "n_genes", "nnz"} and exits 0 (the TypeScript test asserts on the JSON).
"""

import argparse
import gzip
import json
import os
import sys

import anndata as ad
import h5py
import numpy as np
import pandas as pd
import scipy.io
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tile_decode  # noqa: E402
from common import canonical  # noqa: E402


def read_lines(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


def load_input(kind, path, layer, raw, transpose, genome=None):
    """The input's count matrix (cells x genes) and its gene table (None where it has none)."""
    if kind in ("h5ad", "anndata-zarr"):
        a = ad.read_h5ad(path) if kind == "h5ad" else ad.read_zarr(path)
        if raw:
            return a.raw.X, a.raw.var
        if layer:
            return a.layers[layer], a.var
        return a.X, a.var
    if kind == "10x-h5":
        with h5py.File(path, "r") as f:
            g = f["matrix"] if "matrix" in f else f[genome or list(f.keys())[0]]
            shape = tuple(g["shape"][:])
            m = sp.csc_matrix((g["data"][:], g["indices"][:], g["indptr"][:]), shape=shape).T
            names = g["features/name"][:] if "features" in g else g["gene_names"][:]
            return m, pd.DataFrame(index=[n.decode() for n in names])
    if kind == "10x-mtx":
        files = os.listdir(path)
        mtx = next(f for f in files if f.startswith("matrix.mtx"))
        m = scipy.io.mmread(os.path.join(path, mtx)).T
        feats = next(f for f in files if f.startswith("features.tsv") or f.startswith("genes.tsv"))
        rows = read_lines(os.path.join(path, feats))
        return m, pd.DataFrame(index=[r[1] for r in rows])
    if kind == "mtx":
        m = scipy.io.mmread(path)
        return (m if transpose else m.T), None
    if kind == "zarr-array":
        import zarr

        z = zarr.open(path, mode="r")
        if isinstance(z, zarr.Group):  # a plain zarr group with the dense matrix in X
            z = z["X"]
        return np.asarray(z[:]), None
    raise SystemExit(f"unknown kind {kind}")


def parser():
    p = argparse.ArgumentParser()
    p.add_argument("kind")
    p.add_argument("input")
    p.add_argument("dataset")
    p.add_argument("export")
    p.add_argument("--layer")
    p.add_argument("--raw", action="store_true")
    p.add_argument("--transpose", action="store_true")
    p.add_argument("--genome")
    p.add_argument("--mtx")
    p.add_argument("--cells")
    return p


def check(args):
    problems = []

    m, var = load_input(args.kind, args.input, args.layer, args.raw, args.transpose, args.genome)
    expected = canonical(m)
    if not np.all(expected.data == np.round(expected.data)):
        problems.append("the input does not hold integer counts")
    expected = sp.csr_matrix(expected.astype(np.int64))

    # 1. The .h5ad export, read by anndata, equals the input exactly.
    exported = ad.read_h5ad(args.export)
    x = canonical(exported.X)
    if x.shape != expected.shape:
        problems.append(f"export shape {x.shape} != input {expected.shape}")
    elif (x.astype(np.int64) != expected).nnz != 0:
        problems.append("export values differ from the input")
    if var is not None and list(exported.var_names) != [str(v) for v in var.index]:
        problems.append("export var names differ from the input's")
    if var is not None and exported.var.index.name != var.index.name:
        problems.append(f"export var index name {exported.var.index.name!r} != input's {var.index.name!r}")
    if var is not None:
        for col in var.columns:
            if col not in exported.var.columns:
                problems.append(f"export var lacks column {col}")
                continue
            want, got = var[col], exported.var[col]
            if isinstance(want.dtype, pd.CategoricalDtype):
                same = isinstance(got.dtype, pd.CategoricalDtype) and list(got.cat.categories) == list(want.cat.categories)
                same = same and list(got.astype(object)) == list(want.astype(object))
            elif want.dtype == bool:
                same = got.dtype == bool and np.array_equal(np.asarray(got), np.asarray(want))
            elif isinstance(want.dtype, pd.api.extensions.ExtensionDtype) and want.dtype.kind in "iu":
                # nullable integers: as pandas Int* when a value is missing (var.parquet does not
                # say a column was nullable, so one with no missing value comes back as numpy's)
                same = list(got.astype(object).where(got.notna(), None)) == list(want.astype(object).where(want.notna(), None))
                same = same and (got.dtype == want.dtype if want.isna().any() else got.dtype == want.dtype.numpy_dtype)
            elif want.dtype.kind in "iuf":
                same = got.dtype == want.dtype and np.array_equal(np.asarray(got), np.asarray(want), equal_nan=want.dtype.kind == "f")
            else:
                same = list(got.astype(str)) == list(want.astype(str))
            if not same:
                problems.append(f"export var column {col} differs from the input's ({got.dtype} vs {want.dtype})")

    # 2. The dataset's own files, read by numpy/pandas.
    manifest = json.load(open(os.path.join(args.dataset, "manifest.json")))
    order = np.load(os.path.join(args.dataset, "gene_order.npy"))
    if order.dtype != np.int32 or sorted(order.tolist()) != list(range(manifest["n_genes"])):
        problems.append("gene_order.npy is not an int32 permutation")
    totals = np.asarray(expected.sum(axis=0)).ravel()[order]
    if np.any(np.diff(totals) > 0):
        problems.append("output columns are not in decreasing total counts")
    names = open(os.path.join(args.dataset, "var_names.txt")).read().split("\n")[:-1]
    table = pd.read_parquet(os.path.join(args.dataset, "var.parquet"))
    if list(table.index) != names:
        problems.append("var.parquet index differs from var_names.txt")
    if var is not None:
        want = var.iloc[order]
        if names != [str(v) for v in want.index]:
            problems.append("var_names.txt is not the input's names in gene_order")
    if var is not None and args.kind in ("h5ad", "anndata-zarr"):
        want = var.iloc[order]
        try:
            pd.testing.assert_frame_equal(table, want, check_index_type=False)
        except AssertionError as e:
            problems.append(f"var.parquet differs from the input's var in gene order: {e}")

    # 2b. A Matrix Market export of a cell range, in the dataset's column order.
    if args.mtx:
        a, b = (int(v) for v in args.cells.split(":"))
        mm = scipy.io.mmread(args.mtx)
        want = expected[a:b][:, order]
        if mm.shape != want.shape or (canonical(mm).astype(np.int64) != want).nnz != 0:
            problems.append(f"Matrix Market export of cells {a}:{b} differs from the input")

    # 3. Every tile, decoded by the independent decoder, gives back the input.
    rows = []
    for i, (cells, nbytes) in enumerate(zip(manifest["tile_cells"], manifest["tile_bytes"])):
        blob = open(os.path.join(args.dataset, "tiles", f"tile_{i:06d}.dct"), "rb").read()
        if len(blob) != nbytes:
            problems.append(f"tile {i} size {len(blob)} != tile_bytes {nbytes}")
        t = tile_decode.decode(blob)
        if t["n_cells"] != cells or t["nnz"] != manifest["tile_nnz"][i]:
            problems.append(f"tile {i} header disagrees with the manifest")
        rows.append(sp.csr_matrix((t["data"], t["indices"], t["indptr"]), shape=(t["n_cells"], manifest["n_genes"])))
    if rows:
        out = sp.vstack(rows).tocsr()
        source_order = out[:, np.argsort(order)]
        if (canonical(source_order).astype(np.int64) != expected).nnz != 0:
            problems.append("tiles decoded by tile_decode.py differ from the input")
    elif expected.shape[0] != 0:
        problems.append("no tiles")

    return {"ok": not problems, "problems": problems, "n_cells": int(expected.shape[0]), "n_genes": int(expected.shape[1]), "nnz": int(expected.nnz)}


def main():
    # --batch FILE: a JSON list of argument lists, one result line each (anndata imports once).
    if len(sys.argv) == 3 and sys.argv[1] == "--batch":
        for argv in json.load(open(sys.argv[2])):
            try:
                result = check(parser().parse_args(argv))
            except Exception as e:  # one broken case must not hide the others' results
                result = {"ok": False, "problems": [f"{type(e).__name__}: {e}"]}
            print(json.dumps(result), flush=True)
    else:
        print(json.dumps(check(parser().parse_args())))


if __name__ == "__main__":
    main()
