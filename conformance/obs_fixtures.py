"""Writes the obs fixtures in data/anndata/ that the obs tests read (outputs are committed; run
once by hand: conformance/.venv/bin/python conformance/obs_fixtures.py).

- obs-0.7.h5ad: the obs of csr.h5ad (first 40 cells) as anndata 0.7 wrote data frames: a group
  with encoding-version 0.1.0, categorical columns as codes whose categories live in
  `obs/__categories/<name>` (an object reference in the codes' `categories` attribute).
- obs-compound.h5ad: the first 50 cells of pbmc68k as anndata < 0.7 stored obs and var: compound
  (record) datasets, categoricals as integer codes with their categories in `uns/<name>_categories`
  (copied from data/legacy-anndata/pbmc68k_reduced.h5ad, written by such an anndata), with the
  raw counts of data/pbmc68k-counts as X.
- obs-encodings.h5ad and obs-encodings.zarr (zarr v3): an obs with every column encoding anndata
  0.12 writes and deltacells keeps: categoricals (unordered with missing values, ordered), numpy
  integers of every width, floats with NaN, bool, pandas nullable integers of every width with and
  without missing values, nullable booleans with and without, object strings, pandas strings
  with and without missing values; a named index.
- obs-unsupported.h5ad: a valid file plus two obs columns obs cannot hold: `when` (numpy
  datetime64 stored by h5py as an opaque type) and `nested` (an awkward-array group).
- obs-datetime-v2.zarr and obs-datetime-v3.zarr: 12 cells whose obs has numpy datetime64 columns
  as zarr stores them (anndata cannot write them, but reads them): `when` datetime64[ns] with a
  NaT and a value before 1970, `day` datetime64[D] (in chunks of 5 rows), beside a categorical
  and a float; and `gap`, a timedelta64[s] column.
"""

import os
import shutil

import anndata as ad
import h5py
import numpy as np
import pandas as pd
import scipy.sparse as sp
import zarr

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


def encodings():
    n = 40
    rng = np.random.default_rng(12)
    i = np.arange(n)
    gaps = i % 7 == 3
    obs = pd.DataFrame(
        {
            "cat": pd.Categorical(np.where(gaps, None, np.array(["B", "T", "NK"])[i % 3])),
            "cat_ordered": pd.Categorical(np.array(["lo", "mid", "hi"])[i % 3], categories=["lo", "mid", "hi"], ordered=True),
            "i8": (i - 20).astype(np.int8),
            "i16": (i * 300).astype(np.int16),
            "i32": (i * 70000).astype(np.int32),
            "i64": (i * 2**40).astype(np.int64),
            "u8": (i + 200).astype(np.uint8),
            "u16": (i * 1000).astype(np.uint16),
            "u32": (i * 100000000).astype(np.uint32),
            "f32": rng.random(n).astype(np.float32),
            "f64": np.where(gaps, np.nan, rng.random(n)),
            "flag": i % 2 == 0,
            "Int8": pd.array(np.where(gaps, None, i - 20), dtype="Int8"),
            "Int16": pd.array(np.where(gaps, None, i * 300), dtype="Int16"),
            "Int32": pd.array(np.where(gaps, None, i * 70000), dtype="Int32"),
            "Int64": pd.array(np.where(gaps, None, i * 2**40), dtype="Int64"),
            "UInt8": pd.array(np.where(gaps, None, i + 200), dtype="UInt8"),
            "UInt16": pd.array(np.where(gaps, None, i * 1000), dtype="UInt16"),
            "UInt32": pd.array(np.where(gaps, None, i * 100000000), dtype="UInt32"),
            "Int64_full": pd.array(i * 3, dtype="Int64"),
            "boolean": pd.array(np.where(gaps, None, i % 3 == 0), dtype="boolean"),
            "boolean_full": pd.array(i % 3 == 1, dtype="boolean"),
            "text": np.array([f"cell text {k} é" for k in i], dtype=object),
            "string": pd.array(np.where(gaps, None, np.array([f"s{k}" for k in i], dtype=object)), dtype="string"),
            "string_full": pd.array([f"t{k}" for k in i], dtype="string"),
        },
        index=pd.Index([f"c{k:03d}" for k in i], name="cell_id"),
    )
    x = sp.random(n, 12, density=0.3, format="csr", random_state=12, dtype=np.float32)
    x.data = np.ceil(x.data * 9)
    a = ad.AnnData(X=x, obs=obs)
    a.obsm["X_umap"] = rng.random((n, 2)).astype(np.float32)
    ad.settings.allow_write_nullable_strings = True
    a.write_h5ad(os.path.join(OUT, "obs-encodings.h5ad"), convert_strings_to_categoricals=False)
    zpath = os.path.join(OUT, "obs-encodings.zarr")
    shutil.rmtree(zpath, ignore_errors=True)
    ad.settings.zarr_write_format = 3
    a.write_zarr(zpath, convert_strings_to_categoricals=False)
    for back in (ad.read_h5ad(os.path.join(OUT, "obs-encodings.h5ad")), ad.read_zarr(zpath)):
        pd.testing.assert_frame_equal(back.obs, obs, check_exact=True)


def datetimes():
    n = 12
    i = np.arange(n)
    obs = pd.DataFrame(
        {
            "cell_type": pd.Categorical(np.array(["B", "T", "NK"])[i % 3]),
            "score": (i / 7).astype(np.float64),
        },
        index=pd.Index([f"c{k:02d}" for k in i], name="cell"),
    )
    x = sp.csr_matrix((np.arange(n * 4).reshape(n, 4) % 5).astype(np.float32))
    when = (np.datetime64("2024-01-01T00:00:00") + (i * 90061).astype("timedelta64[s]")).astype("datetime64[ns]")
    when[3] = np.datetime64("NaT")
    when[4] = np.datetime64("1969-12-31T23:59:59.999999999")
    columns = {
        "when": when,
        "day": (np.datetime64("1999-12-30") + i.astype("timedelta64[D]")).astype("datetime64[D]"),
        "gap": (i * 3600).astype("timedelta64[s]"),
    }
    for fmt in (2, 3):
        path = os.path.join(OUT, f"obs-datetime-v{fmt}.zarr")
        shutil.rmtree(path, ignore_errors=True)
        ad.settings.zarr_write_format = fmt
        ad.AnnData(X=x, obs=obs).write_zarr(path)
        g = zarr.open_group(path, mode="a", use_consolidated=False)
        o = g["obs"]
        for name, values in columns.items():
            o.create_array(name, data=values, chunks=(5,))
        o.attrs["column-order"] = list(o.attrs["column-order"]) + list(columns)
        zarr.consolidate_metadata(path)
        back = ad.read_zarr(path).obs
        assert back["when"].dtype == "datetime64[ns]", back.dtypes
        assert back["when"].isna().sum() == 1
        assert list(back.columns) == ["cell_type", "score", *columns], back.columns


if __name__ == "__main__":
    compound()
    legacy_07()
    unsupported()
    encodings()
    datetimes()
