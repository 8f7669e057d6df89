"""Generates the small AnnData fixtures in data/anndata/ that packages/anndata tests read.

Run once by hand (the outputs are committed): conformance/.venv/bin/python conformance/anndata_fixtures.py
(`--obsm-only` rewrites only the obsm fixtures).
The matrices hold integer counts from a gamma-Poisson draw with a fixed seed. The CSR fixtures keep
some rows with unsorted gene indices, duplicate entries and explicit zeros on purpose: readers must
canonicalize them the way scipy does (sum_duplicates, eliminate_zeros).
"""

import os
import shutil
import sys

import anndata as ad
import h5py
import numpy as np
import pandas as pd
import scipy.io
import scipy.sparse as sp

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "anndata")
N_CELLS, N_GENES = 57, 41


def counts(rng, n_cells=N_CELLS, n_genes=N_GENES):
    means = rng.gamma(0.6, 2.0, size=n_genes)
    lam = rng.gamma(2.0, 1.0, size=(n_cells, 1)) * means[None, :] * 0.4
    return rng.poisson(lam).astype(np.float32)


def messy_csr(dense):
    """A CSR matrix equal to `dense` but with unsorted indices, duplicates and explicit zeros."""
    m = sp.csr_matrix(dense)
    indptr, indices, data = [0], [], []
    for r in range(m.shape[0]):
        cols = list(m.indices[m.indptr[r] : m.indptr[r + 1]])
        vals = list(m.data[m.indptr[r] : m.indptr[r + 1]])
        if r % 3 == 0 and len(cols) > 1:
            cols.reverse()
            vals.reverse()
        if r % 4 == 1 and len(cols) > 0 and vals[0] >= 2:
            # split one count into two duplicate entries: scipy sums them back
            vals[0] -= 1
            cols.append(cols[0])
            vals.append(1.0)
        if r % 5 == 2:
            zero_col = next(c for c in range(m.shape[1]) if c not in cols)
            cols.append(zero_col)
            vals.append(0.0)
        indices += cols
        data += vals
        indptr.append(len(indices))
    out = sp.csr_matrix(
        (np.array(data, np.float32), np.array(indices, np.int32), np.array(indptr, np.int32)),
        shape=dense.shape,
    )
    out.has_sorted_indices = False
    return out


def frames(rng, n_cells=N_CELLS, n_genes=N_GENES):
    obs = pd.DataFrame(
        {
            "cell_type": pd.Categorical(rng.choice(["B", "T", "NK"], n_cells)),
            "batch": pd.Categorical(
                rng.choice(["b1", "b2"], n_cells), categories=["b2", "b1"], ordered=True
            ),
            "n_counts": rng.integers(100, 2000, n_cells).astype(np.int64),
            "score": rng.normal(size=n_cells).astype(np.float64),
            "is_doublet": rng.random(n_cells) < 0.2,
            "donor": [f"donor{i % 4}" for i in range(n_cells)],
            "maybe_int": pd.array(
                [None if i % 7 == 0 else i for i in range(n_cells)], dtype="Int32"
            ),
            "maybe_bool": pd.array(
                [None if i % 5 == 0 else i % 2 == 0 for i in range(n_cells)], dtype="boolean"
            ),
        },
        index=pd.Index([f"cell-{i:03d}" for i in range(n_cells)], name="barcode"),
    )
    obs.loc[obs.index[3], "cell_type"] = np.nan  # a missing category code (-1)
    var = pd.DataFrame(
        {
            "gene_ids": [f"ENSG{i:011d}" for i in range(n_genes)],
            "highly_variable": rng.random(n_genes) < 0.3,
            "mean": rng.random(n_genes).astype(np.float32),
        },
        index=pd.Index([f"GENE{i}" for i in range(n_genes)]),
    )
    return obs, var


def build(rng):
    dense = counts(rng)
    obs, var = frames(rng)
    a = ad.AnnData(X=messy_csr(dense), obs=obs, var=var)
    # the typical processed file: X normalised, counts in a layer and in raw
    a.layers["counts"] = sp.csr_matrix(dense.astype(np.int32))
    a.raw = ad.AnnData(X=sp.csr_matrix(dense), var=var[["gene_ids"]])
    a.obsm["X_pca"] = rng.normal(size=(N_CELLS, 3)).astype(np.float32)
    return a, dense


def obsm_fixtures():
    """Small AnnData files whose obsm holds every entry kind anndata writes (own seed: the other
    fixtures do not change when these are regenerated)."""
    rng = np.random.default_rng(20261130)
    n = 12
    dense = counts(rng, n, 5)
    names = pd.Index([f"cell-{i:02d}" for i in range(n)], name="barcode")
    a = ad.AnnData(X=sp.csr_matrix(dense), obs=pd.DataFrame(index=names))
    a.obsm["X_pca"] = rng.normal(size=(n, 4)).astype(np.float32)
    umap = rng.normal(size=(n, 2))
    umap[3, 1] = np.nan
    a.obsm["X_umap"] = umap
    a.obsm["onehot"] = np.eye(3, dtype=np.int64)[rng.integers(0, 3, n)]
    a.obsm["flags"] = rng.random((n, 2)) < 0.5
    a.obsm["cube"] = rng.integers(-5, 5, (n, 2, 3)).astype(np.int16)
    csr = sp.random(n, 6, density=0.3, format="csr", random_state=1, dtype=np.float32)
    a.obsm["sparse_csr"] = csr
    # CSC with a duplicate entry and unsorted row indices in column 0: readers convert to CSR in
    # scipy's tocsr() order, duplicates kept
    c = sp.random(n, 5, density=0.3, format="csc", random_state=2)
    col0 = slice(c.indptr[0], c.indptr[1])
    rows = np.concatenate([c.indices[col0][::-1], c.indices[col0][:1], c.indices[c.indptr[1] :]])
    vals = np.concatenate([c.data[col0][::-1], [0.5], c.data[c.indptr[1] :]])
    indptr = c.indptr.copy()
    indptr[1:] += 1
    csc = sp.csc_matrix((vals, rows.astype(np.int32), indptr), shape=(n, 5))
    assert not csc.has_canonical_format
    a.obsm["sparse_csc"] = csc
    a.obsm["table"] = pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "group": pd.Categorical(rng.choice(["a", "b"], n)),
            "label": [f"l{i % 3}" for i in range(n)],
        },
        index=names,
    )
    a.write_h5ad(os.path.join(OUT, "obsm.h5ad"))
    write_zarr(a, os.path.join(OUT, "obsm-v2.zarr"), 2)
    write_zarr(a, os.path.join(OUT, "obsm-v3.zarr"), 3)

    # an entry no reader can represent as numbers (anndata writes a 2-d string-array)
    b = ad.AnnData(X=sp.csr_matrix(dense), obs=pd.DataFrame(index=names))
    b.obsm["X_pca"] = a.obsm["X_pca"]
    b.obsm["labels"] = np.array([[f"a{i}", f"b{i}"] for i in range(n)], dtype=object)
    b.write_h5ad(os.path.join(OUT, "obsm-strings.h5ad"))


def write_zarr(adata, path, zarr_format):
    ad.settings.zarr_write_format = zarr_format
    adata.write_zarr(path)


def main():
    if sys.argv[1:] == ["--obsm-only"]:
        for name in ["obsm.h5ad", "obsm-strings.h5ad", "obsm-v2.zarr", "obsm-v3.zarr"]:
            path = os.path.join(OUT, name)
            if os.path.isdir(path):
                shutil.rmtree(path)
            elif os.path.exists(path):
                os.remove(path)
        obsm_fixtures()
        return
    if os.path.exists(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    rng = np.random.default_rng(20261129)
    a, dense = build(rng)
    a.write_h5ad(os.path.join(OUT, "csr.h5ad"))
    a.write_h5ad(os.path.join(OUT, "csr-lzf.h5ad"), compression="lzf")
    write_zarr(a, os.path.join(OUT, "csr-v2.zarr"), 2)
    write_zarr(a, os.path.join(OUT, "csr-v3.zarr"), 3)

    csc = a.copy()
    csc.X = sp.csc_matrix(dense)
    csc.layers["counts"] = sp.csc_matrix(dense.astype(np.int32))
    csc.write_h5ad(os.path.join(OUT, "csc.h5ad"), compression="gzip")
    write_zarr(csc, os.path.join(OUT, "csc-v3.zarr"), 3)

    den = a.copy()
    den.X = dense.astype(np.int32)
    den.raw = None
    den.layers.clear()
    den.write_h5ad(os.path.join(OUT, "dense.h5ad"))
    write_zarr(den, os.path.join(OUT, "dense-v2.zarr"), 2)

    neg = a.copy()
    neg_dense = dense.copy()
    neg_dense[5, 7] = -2.0
    neg.X = sp.csr_matrix(neg_dense)
    neg.layers.clear()
    neg.raw = None
    neg.write_h5ad(os.path.join(OUT, "negative.h5ad"))

    # plain Matrix Market, cells x genes (needs transpose): one written from CSR (entries grouped by
    # cell) and one from CSC (entries grouped by gene, so readers must regroup them by cell)
    scipy.io.mmwrite(os.path.join(OUT, "cells-by-genes.mtx"), sp.csr_matrix(dense.astype(np.int64)))
    scipy.io.mmwrite(os.path.join(OUT, "cells-by-genes-by-gene.mtx"), sp.csc_matrix(dense.astype(np.int64)))

    # a bare zarr v3 array (no AnnData group), cells x genes
    import zarr

    bare = zarr.create_array(os.path.join(OUT, "bare-v3.zarr"), shape=dense.shape, chunks=(20, 41), dtype="int32")
    bare[...] = dense.astype(np.int32)

    # a dataset compressed with a filter id no reader knows (marked optional so HDF5 can still
    # write it; the chunk mask records it as skipped, but a reader cannot know that up front)
    a2 = a.copy()
    a2.layers.clear()
    a2.raw = None
    a2.write_h5ad(os.path.join(OUT, "unknown-filter.h5ad"))
    with h5py.File(os.path.join(OUT, "unknown-filter.h5ad"), "r+") as f:
        values = f["X/data"][...]
        del f["X/data"]
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((64,))
        dcpl.set_filter(32999, h5py.h5z.FLAG_OPTIONAL, ())
        space = h5py.h5s.create_simple(values.shape)
        dsid = h5py.h5d.create(f.id, b"X/data", h5py.h5t.NATIVE_FLOAT, space, dcpl=dcpl)
        dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, values)

    obsm_fixtures()
    print("fixtures written to", os.path.normpath(OUT), file=sys.stderr)


if __name__ == "__main__":
    main()
