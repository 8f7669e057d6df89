"""What a user's AnnData keeps through `deltacells convert` and `export`, checked with anndata and
scanpy.

Usage:
  names_check.py make INPUT.h5ad
      writes an AnnData of raw counts whose var order is not by total counts, with everything a
      dataset does not hold: layers/counts, raw, a 50-column X_pca beside a 2-column X_umap, uns,
      obsp and varm; var has gene_ids and feature_types, as a 10x input's
  names_check.py h5ad INPUT.h5ad EXPORT.h5ad
      the export of the whole dataset, read by anndata, gives back X, var_names, gene_ids,
      obs_names and obsm X_pca (as float32) in the input's order
  names_check.py 10x INPUT.h5ad FOLDER
      scanpy.read_10x_mtx reads the exported 10x folder back with the input's counts, gene
      symbols (var_names="gene_symbols") and ids (var_names="gene_ids"), feature types and barcodes
Prints one JSON object: {"ok": bool, "problems": [...]}.
"""

import json
import sys
import warnings

import anndata as ad
import numpy as np
import pandas as pd
import scipy.sparse as sp

N_CELLS, N_GENES = 60, 30


def make(path):
    rng = np.random.default_rng(7)
    # Gene j's counts grow with j: the dataset's order (by decreasing totals) reverses the input's.
    lam = np.linspace(0.05, 3.0, N_GENES)
    X = sp.csr_matrix(rng.poisson(lam, size=(N_CELLS, N_GENES)).astype(np.int32))
    var = pd.DataFrame(
        {
            "gene_ids": [f"ENSG{j:011d}" for j in range(N_GENES)],
            "feature_types": pd.Categorical(["Gene Expression"] * N_GENES),
        },
        index=[f"Gene-{j}" for j in range(N_GENES)],
    )
    obs = pd.DataFrame(index=[f"AAAC{i:04d}-1" for i in range(N_CELLS)])
    a = ad.AnnData(X=X, obs=obs, var=var)
    a.layers["counts"] = X.copy()
    a.raw = a.copy()
    a.obsm["X_pca"] = rng.normal(size=(N_CELLS, 50)).astype(np.float32)
    a.obsm["X_umap"] = rng.normal(size=(N_CELLS, 2)).astype(np.float32)
    a.uns["neighbors"] = {"params": {"n_neighbors": 15}}
    a.uns["note"] = "kept nowhere"
    a.obsp["distances"] = sp.random(N_CELLS, N_CELLS, density=0.05, format="csr", random_state=1)
    a.varm["PCs"] = rng.normal(size=(N_GENES, 5))
    a.write_h5ad(path)
    return []


def check_h5ad(input_path, export_path):
    want = ad.read_h5ad(input_path)
    got = ad.read_h5ad(export_path)
    problems = []
    if list(got.var_names) != list(want.var_names):
        problems.append(f"var_names {list(got.var_names)[:4]}... are not the input's {list(want.var_names)[:4]}...")
    if list(got.var["gene_ids"]) != list(want.var["gene_ids"]):
        problems.append("gene_ids differ from the input's")
    if list(got.obs_names) != list(want.obs_names):
        problems.append("obs_names differ from the input's")
    if (sp.csr_matrix(got.X) != sp.csr_matrix(want.X)).nnz != 0:
        problems.append("X differs from the input's")
    if "X_pca" not in got.obsm:
        problems.append(f"obsm has no X_pca (it has {list(got.obsm.keys())})")
    elif not np.array_equal(np.asarray(got.obsm["X_pca"]), want.obsm["X_pca"].astype(np.float32)):
        problems.append("obsm X_pca differs from the input's")
    return problems


def check_10x(input_path, folder):
    import scanpy as sc

    want = ad.read_h5ad(input_path)
    problems = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        by_symbol = sc.read_10x_mtx(folder, var_names="gene_symbols")
        by_id = sc.read_10x_mtx(folder, var_names="gene_ids")
    if list(by_symbol.var_names) != list(want.var_names):
        problems.append(f"gene symbols {list(by_symbol.var_names)[:4]}... are not the input's var_names")
    if list(by_symbol.var["gene_ids"]) != list(want.var["gene_ids"]):
        problems.append("gene_ids differ from the input's")
    if list(by_id.var_names) != list(want.var["gene_ids"]):
        problems.append("read by gene_ids, var_names are not the input's gene_ids")
    if list(by_symbol.var["feature_types"]) != list(want.var["feature_types"]):
        problems.append("feature_types differ from the input's")
    if list(by_symbol.obs_names) != list(want.obs_names):
        problems.append("barcodes differ from the input's obs_names")
    if by_symbol.shape != want.shape or (sp.csr_matrix(by_symbol.X) != sp.csr_matrix(want.X)).nnz != 0:
        problems.append(f"counts differ from the input's (shape {by_symbol.shape} vs {want.shape})")
    return problems


def main():
    mode, *args = sys.argv[1:]
    problems = {"make": make, "h5ad": check_h5ad, "10x": check_10x}[mode](*args)
    print(json.dumps({"ok": not problems, "problems": problems}))


if __name__ == "__main__":
    main()
