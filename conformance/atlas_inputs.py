"""Writes the inputs of an atlas (many inputs converted into one dataset) and anndata's answer.

    conformance/.venv/bin/python conformance/atlas_inputs.py OUT

OUT (a new or empty folder) receives:

- `inputs/`: seven inputs whose gene sets overlap without being equal, as atlases are built from
  studies that measured different genes and annotated their cells differently. Six are h5ad, one
  (`chr21-b.zarr`) an AnnData zarr store. Real cells and counts come from `data/` (pbmc68k counts
  with its cell labels, the 10x v3 chr21 matrix with its Ensembl ids, the 10x v2 chr21 matrix);
  one input is synthetic (gamma-Poisson counts, fixed seed). Every input has a `gene_ids` var
  column (for matching genes with `--var-key gene_ids`): the Ensembl id when the 10x v3 table
  knows the symbol, otherwise `sym:<symbol>` (the other sources hold no ids). `chr21-ensembl`
  is indexed by Ensembl id (symbols in `gene_symbols`): by var index it shares no gene with the
  others, by `gene_ids` it shares all of its genes.
  Their obs differ as atlases' do: columns present in some inputs only (`phase`, `donor`,
  `is_doublet`...), `n_genes` int64 in one input, float64 in another, int32 in others,
  categoricals with different categories, new ones and another order, bool columns, an input
  without any obs column.
- `conflict/conflict.h5ad`: an input whose `n_genes` holds strings where the others hold numbers,
  which an atlas must refuse.
- `expected/by-index.h5ad`: `anndata.concat(inputs, join="outer", label="source", keys=names)`
  (genes matched by var index; `source` the categorical of input names, in input order; missing
  genes count 0). Its genes are in anndata's order (the sorted union): compare genes by name.
  anndata's own var merging drops or blanks string columns, so its var is built here: every var
  column of any input, each gene's value taken from the first input (in input order) that has
  the gene and the column.
- `expected/by-gene-ids.h5ad`: the same with genes matched by `gene_ids` (var index = gene_ids,
  `gene_symbols` = each input's own var name where it had no `gene_symbols` column).
- `manifest.json`: what was written (paths relative to OUT, shapes, nonzeros, count totals, obs
  column dtypes, var columns), for tests to check against.

Deterministic (fixed seed, inputs in a fixed order); small: a conversion of all of them takes
seconds. The cells of different inputs never share an obs name.
"""

import json
import os
import sys
import warnings

import anndata as ad
import h5py
import numpy as np
import pandas as pd
import scipy.sparse as sp

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DATA = os.path.join(REPO, "data")
SEED = 20240611


def read_10x_h5(path, group):
    """Cells x genes CSR, barcodes, gene symbols and gene ids of a Cell Ranger HDF5 group."""
    with h5py.File(path, "r") as f:
        g = f[group]
        n_genes, n_cells = (int(x) for x in g["shape"][:])
        x = sp.csr_matrix(
            (g["data"][:], g["indices"][:], g["indptr"][:]), shape=(n_cells, n_genes)
        ).astype(np.int32)
        barcodes = [b.decode() for b in g["barcodes"][:]]
        if "features" in g:
            names = [b.decode() for b in g["features/name"][:]]
            ids = [b.decode() for b in g["features/id"][:]]
            types = [b.decode() for b in g["features/feature_type"][:]]
            genome = [b.decode() for b in g["features/genome"][:]]
        else:
            names = [b.decode() for b in g["gene_names"][:]]
            ids = [b.decode() for b in g["genes"][:]]
            types = genome = None
    return x, barcodes, names, ids, types, genome


def gene_ids_of(symbols, ensembl):
    return [ensembl.get(s, f"sym:{s}") for s in symbols]


def n_cells_of(x):
    return np.asarray((x > 0).sum(axis=0)).ravel().astype(np.int64)


def n_genes_of(x):
    return np.asarray((x > 0).sum(axis=1)).ravel()


def n_counts_of(x):
    return np.asarray(x.sum(axis=1)).ravel()


def relabel(rng, labels, new, fraction):
    """A categorical of `labels` with `fraction` of them replaced by the new category `new`."""
    values = np.asarray(labels, dtype=object).copy()
    values[rng.random(len(values)) < fraction] = new
    return values


def build(rng):
    pb = ad.read_h5ad(os.path.join(DATA, "pbmc68k-counts", "pbmc68k_counts.h5ad"))
    v3x, v3_barcodes, v3_names, v3_ids, v3_types, v3_genome = read_10x_h5(
        os.path.join(DATA, "10x-v3-chr21", "filtered_feature_bc_matrix.h5"), "matrix"
    )
    v2x, v2_barcodes, v2_names, _, _, _ = read_10x_h5(
        os.path.join(DATA, "10x-v2", "filtered_gene_bc_matrices_h5.h5"), "hg19_chr21"
    )
    ensembl = dict(zip(v3_names, v3_ids))
    pb_genes = list(pb.var_names)
    inputs = []

    # pbmc68k, first cells and first 600 genes: its own labels, QC columns as scanpy wrote them.
    cells, genes = slice(0, 160), pb_genes[:600]
    a = pb[cells, genes].copy()
    a.X = sp.csr_matrix(a.X, dtype=np.int32)
    obs = a.obs[["bulk_labels", "louvain", "phase", "n_genes", "percent_mito", "n_counts"]].copy()
    for c in ["bulk_labels", "louvain", "phase"]:
        obs[c] = obs[c].cat.remove_unused_categories()
    obs["n_genes"] = obs["n_genes"].astype(np.int64)
    var = pd.DataFrame(
        {"gene_ids": gene_ids_of(genes, ensembl), "n_cells": n_cells_of(a.X)}, index=pd.Index(genes)
    )
    inputs.append(("pbmc-a", "h5ad", ad.AnnData(X=a.X, obs=obs, var=var)))

    # pbmc68k, next cells and genes 150..764: n_genes as float, no phase, a new label and order.
    cells, genes = slice(160, 340), pb_genes[150:]
    b = pb[cells, genes].copy()
    labels = relabel(rng, b.obs["bulk_labels"].astype(str), "Unassigned", 0.08)
    categories = sorted(set(labels), reverse=True)
    obs = pd.DataFrame(
        {
            "bulk_labels": pd.Categorical(labels, categories=categories),
            "louvain": b.obs["louvain"].cat.remove_unused_categories(),
            "n_genes": b.obs["n_genes"].astype(np.float64),
            "n_counts": b.obs["n_counts"].astype(np.float32),
            "is_doublet": rng.random(b.n_obs) < 0.05,
        },
        index=b.obs_names.copy(),
    )
    x = sp.csr_matrix(b.X, dtype=np.float32)
    var = pd.DataFrame(
        {
            "gene_ids": gene_ids_of(genes, ensembl),
            "highly_variable": rng.random(len(genes)) < 0.3,
            "means": np.asarray(x.mean(axis=0)).ravel().astype(np.float32),
        },
        index=pd.Index(genes),
    )
    inputs.append(("pbmc-b", "h5ad", ad.AnnData(X=x, obs=obs, var=var)))

    def v3_input(cells, gene_idx, donors, by_ensembl=False, extra_obs=None):
        x = v3x[cells][:, gene_idx].tocsr()
        names = [v3_names[i] for i in gene_idx]
        ids = [v3_ids[i] for i in gene_idx]
        n = x.shape[0]
        obs = pd.DataFrame(
            {"donor": pd.Categorical(rng.choice(donors, size=n), categories=donors)},
            index=pd.Index(v3_barcodes[cells]),
        )
        for name, values in (extra_obs or {}).items():
            obs[name] = values(x)
        if by_ensembl:
            var = pd.DataFrame({"gene_ids": ids, "gene_symbols": names}, index=pd.Index(ids))
        else:
            var = pd.DataFrame(
                {
                    "gene_ids": ids,
                    "feature_types": [v3_types[i] for i in gene_idx],
                    "genome": [v3_genome[i] for i in gene_idx],
                },
                index=pd.Index(names),
            )
        return ad.AnnData(X=x, obs=obs, var=var)

    n_v3 = len(v3_names)
    inputs.append(
        (
            "chr21-a",
            "h5ad",
            v3_input(
                slice(0, 300),
                list(range(n_v3)),
                ["D1", "D2"],
                extra_obs={
                    "n_genes": lambda x: n_genes_of(x).astype(np.int64),
                    "n_counts": lambda x: n_counts_of(x).astype(np.float32),
                    "is_doublet": lambda x: rng.random(x.shape[0]) < 0.05,
                },
            ),
        )
    )
    # The zarr input: genes 100.. in reverse order (an input's gene order is its own).
    chr21_b = v3_input(
        slice(300, 600),
        list(range(n_v3 - 1, 99, -1)),
        ["D3", "D2"],
        extra_obs={
            "n_genes": lambda x: n_genes_of(x).astype(np.int32),
            "is_doublet": lambda x: rng.random(x.shape[0]) < 0.05,
        },
    )
    chr21_b.X = chr21_b.X.astype(np.float32)
    inputs.append(("chr21-b", "zarr", chr21_b))
    inputs.append(
        (
            "chr21-ensembl",
            "h5ad",
            v3_input(
                slice(600, 800),
                list(range(300)),
                ["D4"],
                by_ensembl=True,
                extra_obs={"n_counts": lambda x: n_counts_of(x).astype(np.float64)},
            ),
        )
    )

    # 10x v2 (hg19 symbols): twelve real cells and no obs column at all.
    var = pd.DataFrame({"gene_ids": gene_ids_of(v2_names, ensembl)}, index=pd.Index(v2_names))
    inputs.append(
        (
            "tenx-v2",
            "h5ad",
            ad.AnnData(X=v2x, obs=pd.DataFrame(index=pd.Index(v2_barcodes)), var=var),
        )
    )

    # Synthetic cells over genes of both sources and twenty genes no other input has.
    genes = pb_genes[500:560] + v3_names[200:260] + [f"SYNG{k:02d}" for k in range(1, 21)]
    n = 150
    means = rng.gamma(0.6, 2.0, size=len(genes))
    lam = rng.gamma(2.0, 1.0, size=(n, 1)) * means[None, :] * 0.4
    x = sp.csr_matrix(rng.poisson(lam).astype(np.float32))
    louvain = [str(k) for k in range(13)]  # 11 and 12 are new
    obs = pd.DataFrame(
        {
            "louvain": pd.Categorical(rng.choice(louvain, size=n), categories=louvain),
            "phase": pd.Categorical(rng.choice(["S", "G2M", "G1"], size=n), categories=["S", "G2M", "G1"]),
            "n_genes": n_genes_of(x).astype(np.int32),
            "percent_mito": rng.random(n) * 0.1,
            "is_doublet": rng.random(n) < 0.05,
        },
        index=pd.Index([f"syn-{k:04d}" for k in range(n)]),
    )
    var = pd.DataFrame(
        {"gene_ids": gene_ids_of(genes, ensembl), "n_cells": n_cells_of(x)}, index=pd.Index(genes)
    )
    inputs.append(("synthetic", "h5ad", ad.AnnData(X=x, obs=obs, var=var)))

    # A column that is text here and numbers everywhere else.
    genes = pb_genes[:30]
    x = sp.csr_matrix(rng.poisson(1.0, size=(20, len(genes))).astype(np.float32))
    obs = pd.DataFrame(
        {
            "n_genes": pd.Categorical(np.where(n_genes_of(x) > 15, "many", "few")),
            "louvain": pd.Categorical(rng.choice(["0", "1"], size=20)),
        },
        index=pd.Index([f"conflict-{k:02d}" for k in range(20)]),
    )
    var = pd.DataFrame({"gene_ids": gene_ids_of(genes, ensembl)}, index=pd.Index(genes))
    conflict = ad.AnnData(X=x, obs=obs, var=var)
    return inputs, conflict


def merged_var(adatas, index):
    """Every var column of every input; each gene's value from the first input that has both."""
    columns = []
    for a in adatas:
        columns += [c for c in a.var.columns if c not in columns]
    out = pd.DataFrame(index=index)
    for c in columns:
        first = {}
        for a in adatas:
            if c in a.var.columns:
                for gene, value in zip(a.var.index, a.var[c].tolist()):
                    first.setdefault(gene, value)
        values = [first.get(g) for g in index]
        kinds = {a.var[c].dtype.kind for a in adatas if c in a.var.columns}
        complete = len(first) == len(index)
        if kinds == {"b"}:
            out[c] = np.array(values, dtype=bool) if complete else pd.array(values, dtype="boolean")
        elif kinds <= {"i", "u"} and complete:
            out[c] = np.array(values, dtype=np.int64)
        elif kinds <= {"i", "u", "f"}:
            out[c] = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
        else:  # text: a categorical once written, missing genes missing
            out[c] = pd.Series(values, index=index, dtype=object)
    return out


def expected(named, by_gene_ids):
    adatas = []
    for _, a in named:
        a = a.copy()
        a.X = sp.csr_matrix(a.X, dtype=np.float32)
        if by_gene_ids:
            var = a.var.copy()
            if "gene_symbols" not in var.columns:
                var["gene_symbols"] = var.index.to_numpy()
            var.index = pd.Index(var.pop("gene_ids").to_numpy())
            a.var = var
        adatas.append(a)
    keys = [name for name, _ in named]
    c = ad.concat(adatas, join="outer", label="source", keys=keys, merge=None)
    c.obs["source"] = pd.Categorical(c.obs["source"].astype(str), categories=keys)
    c.var = merged_var(adatas, c.var_names)
    c.X = sp.csr_matrix(c.X, dtype=np.float32)
    return c


def describe(a, name, path, fmt):
    """One file's entry of manifest.json (camelCase: test-utils/atlas-inputs.ts reads it as is)."""
    return {
        "name": name,
        "path": path,
        "format": fmt,
        "nObs": int(a.n_obs),
        "nVars": int(a.n_vars),
        "nnz": int(sp.csr_matrix(a.X).count_nonzero()),
        "totalCounts": int(round(float(a.X.sum()))),
        "obs": {c: str(a.obs[c].dtype) for c in a.obs.columns},
        "var": [c for c in a.var.columns],
        "firstVarNames": list(a.var_names[:3]),
    }


def main(out):
    if os.path.exists(out) and os.listdir(out):
        sys.exit(f"{out} is not empty: give a new or empty folder")
    for sub in ["inputs", "conflict", "expected"]:
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    rng = np.random.default_rng(SEED)
    inputs, conflict = build(rng)
    names = [n for _, _, a in inputs for n in a.obs_names]
    assert len(names) == len(set(names)), "obs names shared between inputs"

    manifest = {"seed": SEED, "sourceColumn": "source", "inputs": [], "expected": {}}
    for name, fmt, a in inputs:
        rel = os.path.join("inputs", f"{name}.{fmt}")
        if fmt == "zarr":
            with ad.settings.override(zarr_write_format=3), warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # zarr's notices of future defaults
                a.write_zarr(os.path.join(out, rel))
        else:
            a.write_h5ad(os.path.join(out, rel))
        manifest["inputs"].append(describe(a, name, rel, fmt))
    rel = os.path.join("conflict", "conflict.h5ad")
    conflict.write_h5ad(os.path.join(out, rel))
    manifest["conflict"] = {**describe(conflict, "conflict", rel, "h5ad"), "column": "n_genes"}

    named = [(name, a) for name, _, a in inputs]
    for key, name, by_gene_ids in [("byIndex", "by-index", False), ("byGeneIds", "by-gene-ids", True)]:
        c = expected(named, by_gene_ids)
        rel = os.path.join("expected", f"{name}.h5ad")
        c.write_h5ad(os.path.join(out, rel))
        manifest["expected"][key] = describe(c, name, rel, "h5ad")
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
