"""Writes the obs fixtures in data/anndata/ that the obs tests read (outputs are committed; run
once by hand: conformance/.venv/bin/python conformance/obs_fixtures.py).

- obs-0.7.h5ad: the obs of csr.h5ad (first 40 cells) as anndata 0.7 wrote data frames: a group
  with encoding-version 0.1.0, categorical columns as codes whose categories live in
  `obs/__categories/<name>` (an object reference in the codes' `categories` attribute).
- obs-compound.h5ad: the first 50 cells of pbmc68k as anndata < 0.7 stored obs and var: compound
  (record) datasets, categoricals as integer codes with their categories in `uns/<name>_categories`
  (copied from data/legacy-anndata/pbmc68k_reduced.h5ad, written by such an anndata), with the
  raw counts of data/pbmc68k-counts as X.
- obs-unsupported.h5ad: a valid file plus two obs columns obs cannot hold: `when` (numpy
  datetime64 stored by h5py as an opaque type) and `nested` (an awkward-array group).
"""

import os

import anndata as ad
import h5py
import numpy as np
import scipy.sparse as sp

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "anndata")
N = 40


def write_x(f, x):
    g = f.create_group("X")
    g.attrs.update({"encoding-type": "csr_matrix", "encoding-version": "0.1.0", "shape": x.shape})
    g["data"], g["indices"], g["indptr"] = x.data, x.indices, x.indptr


def legacy_07():
    src = ad.read_h5ad(os.path.join(OUT, "csr.h5ad"))[:N]
    x = sp.csr_matrix(src.layers["counts"])
    path = os.path.join(OUT, "obs-0.7.h5ad")
    with h5py.File(path, "w") as f:
        write_x(f, x)
        obs = f.create_group("obs")
        cols = ["cell_type", "batch", "n_counts", "score", "is_doublet"]
        obs.attrs.update(
            {
                "encoding-type": "dataframe",
                "encoding-version": "0.1.0",
                "_index": "barcode",
            }
        )
        obs.attrs.create("column-order", np.array(cols, dtype=object), dtype=h5py.string_dtype())
        obs.create_dataset("barcode", data=np.array(src.obs_names, dtype=object), dtype=h5py.string_dtype())
        cats = obs.create_group("__categories")
        for c in cols:
            s = src.obs[c]
            if hasattr(s, "cat"):
                d = cats.create_dataset(c, data=np.array(s.cat.categories, dtype=object), dtype=h5py.string_dtype())
                d.attrs["ordered"] = bool(s.cat.ordered)
                codes = obs.create_dataset(c, data=s.cat.codes.to_numpy().astype(np.int8))
                codes.attrs["categories"] = d.ref
            else:
                obs.create_dataset(c, data=s.to_numpy())
        var = f.create_group("var")
        var.attrs.update({"encoding-type": "dataframe", "encoding-version": "0.1.0", "_index": "_index"})
        var.attrs.create("column-order", np.array([], dtype=h5py.string_dtype()), dtype=h5py.string_dtype())
        var.create_dataset("_index", data=np.array(src.var_names, dtype=object), dtype=h5py.string_dtype())
    back = ad.read_h5ad(path)
    assert back.obs["cell_type"].dtype == "category", back.obs.dtypes
    assert (back.obs["cell_type"].astype(str) == src.obs["cell_type"].astype(str)).all()


def unsupported():
    src = ad.read_h5ad(os.path.join(OUT, "csr.h5ad"))[:N].copy()
    small = ad.AnnData(X=sp.csr_matrix(src.layers["counts"]), obs=src.obs[["cell_type", "n_counts"]].copy())
    path = os.path.join(OUT, "obs-unsupported.h5ad")
    small.write_h5ad(path)
    with h5py.File(path, "a") as f:
        obs = f["obs"]
        when = np.datetime64("2024-01-01") + np.arange(N).astype("timedelta64[D]")
        obs.create_dataset("when", data=when.astype("datetime64[ns]").view(h5py.opaque_dtype(when.astype("datetime64[ns]").dtype)))
        nested = obs.create_group("nested")
        nested.attrs.update({"encoding-type": "awkward-array", "encoding-version": "0.1.0"})
        order = list(obs.attrs["column-order"]) + ["when", "nested"]
        del obs.attrs["column-order"]
        obs.attrs.create("column-order", np.array([str(o) for o in order], dtype=object), dtype=h5py.string_dtype())


def compound():
    legacy = os.path.join(HERE, "..", "data", "legacy-anndata", "pbmc68k_reduced.h5ad")
    counts = os.path.join(HERE, "..", "data", "pbmc68k-counts", "pbmc68k_counts.h5ad")
    n = 50
    path = os.path.join(OUT, "obs-compound.h5ad")
    x = ad.read_h5ad(counts).X[:n]
    with h5py.File(legacy, "r") as src, h5py.File(path, "w") as f:
        write_x(f, sp.csr_matrix(x))
        f.create_dataset("obs", data=src["obs"][:n])
        f.create_dataset("var", data=src["var"][:])
        for k in ("bulk_labels_categories", "louvain_categories", "phase_categories"):
            f.create_dataset(f"uns/{k}", data=src[f"uns/{k}"][:])
    back = ad.read_h5ad(path)
    assert back.obs["bulk_labels"].dtype == "category", back.obs.dtypes


if __name__ == "__main__":
    compound()
    legacy_07()
    unsupported()
