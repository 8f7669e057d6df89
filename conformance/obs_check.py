"""Checks a deltacells dataset's obs sidecar against the input it was converted from, with
pyarrow, pandas, anndata and h5py only (spec: "Obs (optional per-cell metadata)").

Usage: obs_check.py --batch CASES.json   (a JSON list of objects, one per dataset)
Each case: {"kind": h5ad | anndata-zarr | 10x-h5 | 10x-mtx, "input": path, "dataset": path,
            "obsm": null (the default choice) or [keys], "max_categories": int (default 20000),
            "exclude": [columns], "cache": null or a cache folder whose files for the dataset
            are checked, "export": null or an .h5ad exported from the dataset}
Prints one JSON line per case: {"ok": bool, "problems": [...], "columns": [names]}.

Checked: every shard's size and SHA-256 against the manifest; one row group per tile, in tile
order, with tile_cells[t] rows; zstd, no statistics; the Arrow types of the parquet files equal
schema.json's, column for column; the values equal the source's obs (index, categoricals
through the global vocabulary with -1 for missing, nullable columns with nulls, datetime64 columns
as numpy's ISO-8601 text, which pandas reads back as the same instants) and obsm
(float32 columns KEY_0, KEY_1, ...); the fingerprint recomputed with json.dumps; cache files (one
uncompressed Arrow IPC file per column, one record batch per tile, at
<cache>/<fingerprint>/obs/<urllib.parse.quote(name, safe="")>.arrow) equal to the shards; the
exported .h5ad's obs (and obsm embeddings) equal to the source's in anndata.
"""

import gzip
import hashlib
import json
import math
import os
import shutil
import sys
import tempfile
import urllib.parse

import anndata as ad
import h5py
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq


def without_columns(path, exclude):
    """A temporary copy of an .h5ad without the obs columns `exclude` (which anndata may not read)."""
    fd, copy = tempfile.mkstemp(suffix=".h5ad")
    os.close(fd)
    shutil.copyfile(path, copy)
    with h5py.File(copy, "a") as f:
        obs = f["obs"]
        order = [str(c) for c in obs.attrs["column-order"] if str(c) not in exclude]
        for c in exclude:
            del obs[c]
        del obs.attrs["column-order"]
        obs.attrs.create("column-order", np.array(order, dtype=object), dtype=h5py.string_dtype())
    return copy


def source_obs(kind, path, exclude=()):
    """The source's obs DataFrame and obsm dict (10x: barcodes as an unnamed index, no obsm)."""
    if kind == "h5ad" and exclude:
        copy = without_columns(path, exclude)
        try:
            return source_obs(kind, copy)
        finally:
            os.unlink(copy)
    if kind in ("h5ad", "anndata-zarr"):
        a = ad.read_h5ad(path) if kind == "h5ad" else ad.read_zarr(path)
        return a.obs, dict(a.obsm)
    if kind == "10x-h5":
        with h5py.File(path, "r") as f:
            g = f["matrix"] if "matrix" in f else f[list(f.keys())[0]]
            names = [b.decode() for b in g["barcodes"][:]]
    else:
        name = next(n for n in os.listdir(path) if n.startswith("barcodes.tsv"))
        opener = gzip.open if name.endswith(".gz") else open
        with opener(os.path.join(path, name), "rt") as f:
            names = [line.rstrip("\n").split("\t")[0] for line in f if line.strip()]
    return pd.DataFrame(index=pd.Index(names), columns=pd.Index([], dtype=object)), {}


def missing(v):
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def as_list(values):
    """Python values with every kind of missing value as None (pandas NA, NaN, None)."""
    return [None if missing(v) else (v.item() if hasattr(v, "item") else v) for v in values]


def datetime_text(kind, path, name):
    """A datetime64 obs column as numpy writes it as text (NaT as None), from the stored array:
    anndata's pandas turns datetime64[D] into datetime64[s], which prints otherwise."""
    import zarr

    values = zarr.open_group(path, mode="r")["obs"][name][...]
    return [None if s == "NaT" else str(s) for s in np.datetime_as_string(values)]


def as_exported(obs, max_categories, texts=None):
    """The obs an export gives back: the source's, dtypes included, except categoricals over
    max_categories, stored as strings, and datetime64 columns, stored as ISO-8601 text (`texts`):
    object strings, or pandas strings when some are missing (an anndata string-array cannot hold a
    missing value)."""
    out = obs.copy()
    for name in out.columns:
        s = out[name]
        if isinstance(s.dtype, pd.CategoricalDtype) and len(s.cat.categories) > max_categories:
            out[name] = s.astype("string") if s.isna().any() else s.astype(object)
        elif pd.api.types.is_datetime64_any_dtype(s.dtype):
            text = pd.Series(texts[name], index=out.index, dtype=object)
            out[name] = text.astype("string") if text.isna().any() else text
    return out


def fingerprint(schema_text, tile_cells, shards):
    doc = {"schema": schema_text, "tile_cells": tile_cells, "shards": shards}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def embedding_keys(obsm, choice):
    if choice is not None:
        return list(choice)
    return [
        k
        for k, v in obsm.items()
        if isinstance(v, np.ndarray) and v.ndim == 2 and v.shape[1] <= 3
    ]


def check(case):
    problems = []
    ds = case["dataset"]
    with open(os.path.join(ds, "manifest.json")) as f:
        man = json.load(f)
    if not man.get("has_obs"):
        return {"ok": False, "problems": ["has_obs is not true"], "columns": []}
    with open(os.path.join(ds, "obs", "schema.json"), encoding="utf-8") as f:
        schema_text = f.read()
    schema = json.loads(schema_text)
    cols = schema["columns"]
    names = [c["name"] for c in cols]
    tile_cells = man["tile_cells"]
    k = man["obs_tiles_per_file"]
    n_shards = (len(tile_cells) + k - 1) // k
    if len(man["obs_shard_sha256"]) != n_shards:
        problems.append(f"{len(man['obs_shard_sha256'])} shards listed, {n_shards} expected")
    tables = []
    for s in range(n_shards):
        path = os.path.join(ds, "obs", f"obs_{s:04d}.parquet")
        data = open(path, "rb").read()
        if len(data) != man["obs_shard_bytes"][s]:
            problems.append(f"shard {s}: {len(data)} bytes, manifest {man['obs_shard_bytes'][s]}")
        if hashlib.sha256(data).hexdigest() != man["obs_shard_sha256"][s]:
            problems.append(f"shard {s}: SHA-256 differs from the manifest")
        pf = pq.ParquetFile(path)
        tiles = tile_cells[s * k : (s + 1) * k]
        md = pf.metadata
        if md.num_row_groups != len(tiles):
            problems.append(f"shard {s}: {md.num_row_groups} row groups for {len(tiles)} tiles")
        for g in range(min(md.num_row_groups, len(tiles))):
            rg = md.row_group(g)
            if rg.num_rows != tiles[g]:
                problems.append(f"shard {s} row group {g}: {rg.num_rows} rows, tile has {tiles[g]}")
            for c in range(rg.num_columns):
                cc = rg.column(c)
                if cc.compression != "ZSTD":
                    problems.append(f"shard {s} rg {g} column {cc.path_in_schema}: {cc.compression}")
                if cc.is_stats_set:
                    problems.append(f"shard {s} rg {g} column {cc.path_in_schema}: has statistics")
        arrow = pf.schema_arrow
        if arrow.names != names:
            problems.append(f"shard {s}: columns {arrow.names}, schema.json {names}")
        for c in cols:
            if c["name"] in arrow.names and str(arrow.field(c["name"]).type) != c["arrow_type"]:
                problems.append(
                    f"shard {s}: {c['name']} is {arrow.field(c['name']).type}, schema.json {c['arrow_type']}"
                )
        tables.append(pf.read())
    table = pa.concat_tables(tables)
    if fingerprint(schema_text, tile_cells, man["obs_shard_sha256"]) != man["obs_fingerprint"]:
        problems.append("the fingerprint recomputed in Python differs from obs_fingerprint")

    exclude = set(case.get("exclude") or [])
    obs, obsm = source_obs(case["kind"], case["input"], exclude)
    max_cats = case.get("max_categories") or 20000
    index_col = names[0]
    expected_index = obs.index.name or ("barcode" if case["kind"].startswith("10x") else "obs_names")
    if index_col != expected_index:
        problems.append(f"index column {index_col!r}, expected {expected_index!r}")
    if table.column(0).to_pylist() != list(obs.index):
        problems.append("the index column differs from obs_names")
    by_name = {c["name"]: c for c in cols}
    texts = {}
    for name in obs.columns:
        if name in exclude:
            if name in by_name:
                problems.append(f"{name}: excluded but written")
            continue
        if name not in by_name:
            problems.append(f"{name}: missing from schema.json")
            continue
        c = by_name[name]
        src = obs[name]
        got = table.column(name)
        if isinstance(src.dtype, pd.CategoricalDtype):
            labels = as_list(src.astype(object))
            if len(src.cat.categories) > max_cats:
                if c["kind"] != "string":
                    problems.append(f"{name}: {len(src.cat.categories)} categories but kind {c['kind']}")
                if as_list(got.to_pylist()) != labels:
                    problems.append(f"{name}: string values differ")
                continue
            if c["kind"] != "category" or c["categories"] != [str(x) for x in src.cat.categories]:
                problems.append(f"{name}: kind {c['kind']} categories {c['categories']}")
                continue
            codes = got.to_numpy(zero_copy_only=False)
            if got.null_count:
                problems.append(f"{name}: category codes with nulls")
            if not np.array_equal(codes, src.cat.codes.to_numpy()):
                problems.append(f"{name}: codes differ")
            back = [None if x < 0 else c["categories"][x] for x in codes]
            if back != [None if v is None else str(v) for v in labels]:
                problems.append(f"{name}: labels differ")
        elif pd.api.types.is_datetime64_any_dtype(src.dtype):
            # kept as ISO-8601 text, exactly numpy's, which pandas reads back as the same instants
            texts[name] = datetime_text(case["kind"], case["input"], name)
            if c["kind"] != "string":
                problems.append(f"{name}: kind {c['kind']}, expected string (ISO-8601 text)")
            if got.to_pylist() != texts[name]:
                problems.append(f"{name}: text differs from numpy.datetime_as_string")
            back = pd.to_datetime(pd.Series(got.to_pylist(), dtype=object), format="ISO8601")
            if not back.equals(pd.Series(src.to_numpy(), name=None).astype(back.dtype)):
                problems.append(f"{name}: the text does not read back as the source's instants")
            if not man["metadata"].get("obs_text_from", {}).get(name, "").startswith("datetime64["):
                problems.append(f"{name}: not in the manifest's obs_text_from")
        elif pd.api.types.is_bool_dtype(src.dtype):
            if c["kind"] != "bool":
                problems.append(f"{name}: kind {c['kind']}, expected bool")
            if as_list(got.to_pylist()) != as_list(src.astype(object)):
                problems.append(f"{name}: bool values differ")
        elif pd.api.types.is_numeric_dtype(src.dtype):
            if c["kind"] != "numeric":
                problems.append(f"{name}: kind {c['kind']}, expected numeric")
            want = str(pa.from_numpy_dtype(src.dtype.numpy_dtype if hasattr(src.dtype, "numpy_dtype") else src.dtype))
            if c["arrow_type"] != want:
                problems.append(f"{name}: arrow_type {c['arrow_type']}, source {src.dtype} ({want})")
            if as_list(got.to_pylist()) != as_list(src.astype(object)):
                problems.append(f"{name}: numeric values differ")
        else:
            if c["kind"] != "string":
                problems.append(f"{name}: kind {c['kind']}, expected string")
            if as_list(got.to_pylist()) != as_list(src.astype(object)):
                problems.append(f"{name}: string values differ")
    keys = embedding_keys(obsm, case.get("obsm"))
    expected_names = [index_col] + [n for n in obs.columns if n not in exclude]
    for key in keys:
        m = np.asarray(obsm[key])
        for j in range(m.shape[1]):
            col = f"{key}_{j}"
            expected_names.append(col)
            c = by_name.get(col)
            if c is None or c["kind"] != "numeric" or c["arrow_type"] != "float":
                problems.append(f"{col}: expected a float32 numeric column, found {c}")
                continue
            got = table.column(col).to_numpy(zero_copy_only=False)
            if not np.array_equal(got, m[:, j].astype(np.float32), equal_nan=True):
                problems.append(f"{col}: values differ from obsm[{key!r}][:, {j}]")
    if names != expected_names:
        problems.append(f"columns {names}, expected {expected_names}")

    cache = case.get("cache")
    if cache:
        folder = os.path.join(cache, man["obs_fingerprint"], "obs")
        files = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
        arrows = [f for f in files if f.endswith(".arrow")]
        if not arrows:
            problems.append(f"no cache files in {folder}")
        for name in names:
            path = os.path.join(folder, urllib.parse.quote(name, safe="") + ".arrow")
            if not os.path.exists(path):
                problems.append(f"cache file {path} is missing")
                continue
            with pa.memory_map(path) as source:
                reader = ipc.open_file(source)
                if reader.num_record_batches != len(tile_cells):
                    problems.append(f"cache {name}: {reader.num_record_batches} batches, {len(tile_cells)} tiles")
                rows = [reader.get_batch(i).num_rows for i in range(reader.num_record_batches)]
                if rows != tile_cells:
                    problems.append(f"cache {name}: batch rows differ from tile_cells")
                t = reader.read_all()
            if t.num_columns != 1 or t.column_names != [name]:
                problems.append(f"cache {name}: columns {t.column_names}")
            elif t.column(0).to_pylist() != table.column(name).to_pylist() and not np.array_equal(
                t.column(0).to_numpy(zero_copy_only=False), table.column(name).to_numpy(zero_copy_only=False), equal_nan=True
            ):
                problems.append(f"cache {name}: values differ from the shards")
            if str(t.schema.field(0).type) != by_name[name]["arrow_type"]:
                problems.append(f"cache {name}: type {t.schema.field(0).type}")

    export = case.get("export")
    if export:
        back = ad.read_h5ad(export)
        want = as_exported(obs.drop(columns=[c for c in obs.columns if c in exclude]), max_cats, texts)
        try:
            pd.testing.assert_frame_equal(back.obs, want, check_exact=True)
        except AssertionError as e:
            problems.append(f"exported obs differs: {e}")
        for key in keys:
            if key not in back.obsm:
                problems.append(f"exported obsm lacks {key}")
            elif not np.array_equal(back.obsm[key], np.asarray(obsm[key]).astype(np.float32), equal_nan=True):
                problems.append(f"exported obsm {key} differs")
    return {"ok": not problems, "problems": problems, "columns": names}


def main():
    if sys.argv[1] != "--batch":
        sys.exit(__doc__)
    with open(sys.argv[2]) as f:
        cases = json.load(f)
    for case in cases:
        try:
            result = check(case)
        except Exception as e:  # noqa: BLE001 - reported to the test as a problem
            result = {"ok": False, "problems": [f"{type(e).__name__}: {e}"], "columns": []}
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
