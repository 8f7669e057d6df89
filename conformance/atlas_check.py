"""Checks a deltacells atlas (many inputs converted into one dataset) against anndata's own
concatenation of the inputs, using only independent implementations: the spec-written tile
decoder (tile_decode.py), pyarrow/pandas for the parquet files, anndata for the expected result.

Usage: atlas_check.py DATASET EXPECTED_H5AD SOURCE_COLUMN

EXPECTED_H5AD is `anndata.concat(inputs, join="outer", label=SOURCE_COLUMN, keys=names)` (see
atlas_inputs.py): the same cells in the same order, genes in anndata's order (compared by name),
var built by "the first input that has the gene and the column". Compared:
- counts: every cell's counts by gene name (the dataset's genes mapped through var_names.txt);
- genes: the same set; the dataset's in decreasing total counts (gene_order.npy a permutation);
- obs: the same cells (obs_names), every expected column with equal values (a missing value is
  null on our side, NaN or NA on anndata's; categories compared as their labels; numbers with the
  dtype anndata promoted them to, e.g. int64 with float64 as float64);
- var: every expected var column with equal values per gene, the same missing values.
Prints one JSON object {"ok": bool, "problems": [...], "n_cells", "n_genes", "nnz"}; exits 0.
"""

import json
import os
import sys

import anndata as ad
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tile_decode  # noqa: E402


def missing(v):
    return v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v))


def values_of(series):
    """A column as plain Python values, missing values as None, categories as labels."""
    out = []
    for v in series.astype(object).tolist():
        if missing(v):
            out.append(None)
        elif isinstance(v, (np.bool_, bool)):
            out.append(bool(v))
        elif isinstance(v, (np.integer, np.floating, int, float)):
            out.append(float(v))
        else:
            out.append(str(v))
    return out


def same_values(a, b):
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x is None or y is None:
            if x is not y:
                return False
        elif isinstance(x, float) and isinstance(y, float):
            if not (x == y or abs(x - y) <= 1e-6 * max(abs(x), abs(y))):
                return False
        elif x != y:
            return False
    return True


def read_obs(dataset, manifest):
    """The dataset's obs as one pandas DataFrame, categories decoded through schema.json."""
    schema = json.load(open(os.path.join(dataset, "obs", "schema.json")))
    shards = [
        pq.read_table(os.path.join(dataset, "obs", f"obs_{s:04d}.parquet"))
        for s in range(len(manifest["obs_shard_bytes"]))
    ]
    frame = pd.concat([t.to_pandas() for t in shards], ignore_index=True)
    for c in schema["columns"]:
        if c["kind"] == "category":
            cats = c["categories"]
            frame[c["name"]] = [None if code < 0 else cats[code] for code in frame[c["name"]].tolist()]
    return frame, schema


def check(dataset, expected_path, source_column):
    problems = []
    manifest = json.load(open(os.path.join(dataset, "manifest.json")))
    want = ad.read_h5ad(expected_path)
    names = open(os.path.join(dataset, "var_names.txt")).read().split("\n")[:-1]
    order = np.load(os.path.join(dataset, "gene_order.npy"))
    if sorted(order.tolist()) != list(range(len(names))):
        problems.append("gene_order.npy is not a permutation")
    if sorted(names) != sorted(str(v) for v in want.var_names):
        only_ours = sorted(set(names) - set(map(str, want.var_names)))[:5]
        only_theirs = sorted(set(map(str, want.var_names)) - set(names))[:5]
        problems.append(f"gene sets differ: ours only {only_ours}, anndata's only {only_theirs}")
        return {"ok": False, "problems": problems}

    # counts: decoded by the independent decoder, columns put in anndata's gene order
    rows = []
    for i in range(len(manifest["tile_cells"])):
        blob = open(os.path.join(dataset, "tiles", f"tile_{i:06d}.dct"), "rb").read()
        t = tile_decode.decode(blob)
        rows.append(sp.csr_matrix((t["data"], t["indices"], t["indptr"]), shape=(t["n_cells"], len(names))))
    ours = sp.vstack(rows).tocsr()
    position = {g: j for j, g in enumerate(map(str, want.var_names))}
    to_theirs = np.array([position[g] for g in names])
    remapped = sp.csr_matrix((ours.data.copy(), to_theirs[ours.indices], ours.indptr.copy()), shape=(ours.shape[0], want.n_vars))
    remapped.sort_indices()
    theirs = sp.csr_matrix(want.X).astype(np.int64)
    theirs.eliminate_zeros()
    if remapped.shape != theirs.shape:
        problems.append(f"shape {remapped.shape} != anndata's {theirs.shape}")
    elif (remapped.astype(np.int64) != theirs).nnz != 0:
        diff = remapped.astype(np.int64) - theirs
        cell = int(np.unique(diff.nonzero()[0])[0])
        problems.append(f"counts differ from anndata's concatenation, first at cell {cell}")
    totals = np.asarray(ours.sum(axis=0)).ravel()
    if np.any(np.diff(totals) > 0):
        problems.append("genes are not in decreasing total counts")

    # obs
    obs, schema = read_obs(dataset, manifest)
    index_column = manifest["metadata"]["obs_index"]
    if values_of(obs[index_column]) != [str(v) for v in want.obs_names]:
        problems.append("obs names differ from anndata's")
    for col in want.obs.columns:
        if col not in obs.columns:
            problems.append(f"obs lacks column {col}")
            continue
        if not same_values(values_of(obs[col]), values_of(want.obs[col])):
            problems.append(f"obs column {col} differs from anndata's")
    kinds = {c["name"]: c for c in schema["columns"]}
    source = kinds.get(source_column)
    if source is None or source["kind"] != "category" or source["categories"] != list(want.obs[source_column].cat.categories):
        problems.append(f"the {source_column} column is not the categorical of the input names in input order")
    for col in want.obs.columns:
        dtype = want.obs[col].dtype
        if col in kinds and dtype.kind == "f" and kinds[col]["arrow_type"] not in ("double", "float"):
            problems.append(f"obs column {col} is {kinds[col]['arrow_type']}, anndata made it {dtype}")

    # var
    table = pd.read_parquet(os.path.join(dataset, "var.parquet"))
    if [str(v) for v in table.index] != names:
        problems.append("var.parquet's index is not var_names.txt")
    table.index = table.index.astype(str)
    theirs_var = want.var.copy()
    theirs_var.index = theirs_var.index.astype(str)
    for col in theirs_var.columns:
        if col not in table.columns:
            problems.append(f"var lacks column {col}")
            continue
        ours_col = values_of(table[col].reindex(theirs_var.index))
        if not same_values(ours_col, values_of(theirs_var[col])):
            problems.append(f"var column {col} differs from the first input's value of each gene")
    return {
        "ok": not problems,
        "problems": problems,
        "n_cells": int(ours.shape[0]),
        "n_genes": len(names),
        "nnz": int(ours.nnz),
    }


if __name__ == "__main__":
    print(json.dumps(check(sys.argv[1], sys.argv[2], sys.argv[3])))
