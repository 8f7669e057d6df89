"""scanpy's answers to what the viewer computes, for its conformance test.

    python scanpy_markers.py synthetic OUT.h5ad     writes the synthetic dataset (fixed seed)
    python scanpy_markers.py answer < REQUEST.json  prints scanpy's tables as JSON

REQUEST is {"h5ad": PATH, "requests": [...]}, each request one of
    {"kind": "markers", "cells": [i, ...]}                              the cells against the rest
    {"kind": "markers", "column": C, "group": G}                        category G against the rest
    {"kind": "markers", "column": C, "group": G, "reference": R}        category G against R
    {"kind": "dotplot", "column": C, "genes": [g, ...]}
and the answer is one object per request: for markers `names`, `scores`, `pvals`, `pvals_adj`,
`logfoldchanges`, `pts`, `pts_rest` (scanpy's order: by decreasing score); for a dot plot
`categories`, `mean` and `fraction` (category by gene: `DotPlot.dot_color_df` and `dot_size_df`).

The data are prepared as a scanpy user does: X (counts) as float32, `normalize_total(target_sum=1e4)`,
`log1p`, then `rank_genes_groups(method="t-test", pts=True, use_raw=False)` and `pl.dotplot`.
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")

import anndata as ad  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import scanpy as sc  # noqa: E402
import scipy.sparse as sp  # noqa: E402


def synthetic(path):
    """3,000 cells x 300 genes of negative-binomial counts in 6 clusters, each raising 12 genes of
    its own; obs `cluster`, `batch` (3) and `phase` (with missing values), an X_umap."""
    rng = np.random.default_rng(26)
    n_cells, n_genes, n_clusters = 3000, 300, 6
    cluster = rng.integers(0, n_clusters, n_cells)
    base = rng.gamma(0.6, 1.0, n_genes)
    rate = np.tile(base, (n_cells, 1))
    for k in range(n_clusters):
        rate[cluster == k, 12 * k : 12 * (k + 1)] *= 6.0
    depth = rng.lognormal(0.0, 0.5, n_cells)[:, None]
    counts = rng.negative_binomial(2, 2 / (2 + rate * depth)).astype(np.int32)
    x = sp.csr_matrix(counts)
    obs = pd.DataFrame(
        {
            "cluster": pd.Categorical([f"cluster {k}" for k in cluster]),
            "batch": pd.Categorical(rng.choice(["b1", "b2", "b3"], n_cells)),
            "phase": pd.Categorical(
                rng.choice(["G1", "S", "G2M", None], n_cells, p=[0.5, 0.2, 0.2, 0.1]),
                categories=["G1", "S", "G2M"],
            ),
        },
        index=[f"cell-{i:05d}" for i in range(n_cells)],
    )
    centres = rng.normal(0, 8, (n_clusters, 2))
    umap = (centres[cluster] + rng.normal(0, 1, (n_cells, 2))).astype(np.float32)
    var = pd.DataFrame(index=[f"G{j:03d}" for j in range(n_genes)])
    ad.AnnData(X=x, obs=obs, var=var, obsm={"X_umap": umap}).write_h5ad(path)


def prepared(path):
    adata = ad.read_h5ad(path)
    adata.X = sp.csr_matrix(adata.X, dtype=np.float32)
    sc.pp.normalize_total(adata, target_sum=1e4)
    sc.pp.log1p(adata)
    return adata


def markers(adata, req):
    if "cells" in req:
        inside = np.zeros(adata.n_obs, dtype=bool)
        inside[req["cells"]] = True
        adata.obs["__selection"] = pd.Categorical(np.where(inside, "in", "out"), categories=["in", "out"])
        column, group, reference = "__selection", "in", "rest"
    else:
        column, group, reference = req["column"], req["group"], req.get("reference", "rest")
    sc.tl.rank_genes_groups(
        adata, column, groups=[group], reference=reference, method="t-test", pts=True, use_raw=False
    )
    r = adata.uns["rank_genes_groups"]
    out = {key: [float(v) for v in r[key][group]] for key in ["scores", "pvals", "pvals_adj", "logfoldchanges"]}
    out["names"] = [str(v) for v in r["names"][group]]

    def by_name(frame):
        # scanpy 1.11 indexes pts by gene (var order), 1.12 by rank: both as the ranked names.
        column = frame[group]
        ranked = column.loc[out["names"]] if column.index.isin(out["names"]).all() else column
        return [float(v) for v in ranked]

    out["pts"] = by_name(r["pts"])
    if "pts_rest" in r:
        out["pts_rest"] = by_name(r["pts_rest"])
    return out


def dotplot(adata, req):
    fig = sc.pl.dotplot(adata, req["genes"], req["column"], return_fig=True, show=False)
    colour = fig.dot_color_df
    size = fig.dot_size_df
    return {
        "categories": [str(c) for c in colour.index],
        "mean": colour[req["genes"]].to_numpy(dtype=float).tolist(),
        "fraction": size[req["genes"]].to_numpy(dtype=float).tolist(),
    }


def answer():
    request = json.load(sys.stdin)
    adata = prepared(request["h5ad"])
    out = []
    for req in request["requests"]:
        out.append(markers(adata, req) if req["kind"] == "markers" else dotplot(adata, req))
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    if sys.argv[1] == "synthetic":
        synthetic(sys.argv[2])
    else:
        answer()
