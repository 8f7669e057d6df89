"""Reads a count matrix with the reference Python tools and prints it as JSON, canonical CSR
(cells x genes, scipy's sum_duplicates + eliminate_zeros + sorted indices), for packages/anndata tests.

usage: anndata_dump.py KIND PATH [OPTION]
       anndata_dump.py --batch   (stdin: one JSON [KIND, PATH, OPTION|null] per line; stdout: one JSON per line)
  KIND: h5ad | zarr      (anndata.read_h5ad / read_zarr; OPTION = "X", "raw" or "layer:NAME")
        10x-h5           (h5py, Cell Ranger v3 matrix/ or v2 genome group; OPTION = genome)
        10x-mtx          (scipy.io.mmread + the tsv files, genes x cells)
        mtx              (scipy.io.mmread; OPTION "transpose" when the file is cells x genes)
        zarr-array       (zarr: the dense X of a group, names from anndata.read_zarr; or the root array)
Output: {"shape", "obs_names", "var_names", "var_columns", "obs_columns", "index_names", "obsm", "indptr", "indices", "data"}
(table columns: 10x kinds give {name: [str...]}, AnnData kinds {name: {"kind", "values"[, "ordered"]}};
obsm, AnnData kinds only: {key: {"kind": "dense", "shape", "dtype", "values"} | {"kind": "sparse", "shape",
"dtype", "indptr", "indices", "data"} | {"kind": "table", "shape", "index", "columns"}}).
"""

import gzip
import json
import os
import sys
import warnings

import numpy as np
import pandas as pd
import scipy.io
import scipy.sparse as sp
from common import canonical

warnings.filterwarnings("ignore")


def plain(v):
    """A JSON value for one table cell: None for missing, "NaN" for a float NaN."""
    if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return "NaN" if isinstance(v, float) else None
    if isinstance(v, (np.bool_, bool)):
        return bool(v)
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return "NaN" if np.isnan(v) else float(v)
    return v


def frame(df):
    out = {}
    for name in df.columns:
        col = df[name]
        if isinstance(col.dtype, pd.CategoricalDtype):
            out[name] = {
                "kind": "category",
                "ordered": bool(col.cat.ordered),
                "values": [None if pd.isna(v) else str(v) for v in col],
            }
        else:
            out[name] = {"kind": str(col.dtype), "values": [plain(v) for v in col.astype(object)]}
    return out


def flat(values):
    """Row-major numbers for JSON: "NaN" for NaN, ints as ints, bools as 0/1."""
    out = []
    for v in np.asarray(values).reshape(-1).tolist():
        out.append("NaN" if isinstance(v, float) and np.isnan(v) else int(v) if isinstance(v, bool) else v)
    return out


def obsm(a):
    """Every obsm entry: dense arrays row-major, sparse ones as scipy CSR, data frames via frame()."""
    out = {}
    for key in a.obsm.keys():
        v = a.obsm[key]
        if isinstance(v, pd.DataFrame):
            out[key] = {"kind": "table", "shape": list(v.shape), "index": list(v.index), "columns": frame(v)}
        elif sp.issparse(v):
            m = v.tocsr() if v.format != "csr" else v
            out[key] = {
                "kind": "sparse",
                "shape": list(m.shape),
                "dtype": str(m.dtype),
                "indptr": m.indptr.tolist(),
                "indices": m.indices.tolist(),
                "data": flat(m.data),
            }
        else:
            v = np.asarray(v)
            out[key] = {"kind": "dense", "shape": list(v.shape), "dtype": str(v.dtype), "values": flat(v)}
    return out


def anndata_matrix(a, option):
    if option == "raw":
        return a.raw.X, list(a.raw.var_names), frame(a.raw.var)
    if option.startswith("layer:"):
        return a.layers[option[6:]], list(a.var_names), frame(a.var)
    return a.X, list(a.var_names), frame(a.var)


def tsv(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return [line.rstrip("\n").split("\t") for line in f]


def first(dir_, names):
    for n in names:
        if os.path.exists(os.path.join(dir_, n)):
            return os.path.join(dir_, n)
    raise FileNotFoundError(names)


def tenx_v3_tables(g):
    """var and obs columns as scanpy's read_10x_h5 builds them for a Cell Ranger v3+ / Space Ranger
    file (`_read_v3_10x_h5` in scanpy 1.11's readwrite.py, transcribed; scanpy is not installed
    here). A probe-barcode matrix has `features/gene_id`: gene_ids from it, probe_ids from `id`."""
    import h5py

    feats = g["features"]
    var = {}
    if "gene_id" not in feats:
        var["gene_ids"] = feats["id"][...].astype(str)
    else:
        var["gene_ids"] = feats["gene_id"][...].astype(str)
        var["probe_ids"] = feats["id"][...].astype(str)
    var["feature_types"] = feats["feature_type"][...].astype(str)
    skip = ["name", "feature_type", "id", "gene_id", "_all_tag_keys"]
    for name, item in feats.items():
        if isinstance(item, h5py.Dataset) and name not in skip:
            var[name] = item[...].astype(bool if item.dtype.kind == "b" else str)
    obs = {}
    if "filtered_barcodes" in g:
        obs["filtered_barcodes"] = g["filtered_barcodes"][...].astype(bool)
    return frame(pd.DataFrame(var)), frame(pd.DataFrame(obs))


def dump(kind, path, option="X"):
    obs_names = var_names = None
    var_columns = {}
    obs_columns = {}
    index_names = [None, None]
    obsm_entries = {}
    if kind in ("h5ad", "zarr"):
        import anndata as ad

        a = ad.read_h5ad(path) if kind == "h5ad" else ad.read_zarr(path)
        m, var_names, var_columns = anndata_matrix(a, option)
        obs_names = list(a.obs_names)
        obs_columns = frame(a.obs)
        index_names = [a.obs.index.name, (a.raw.var if option == "raw" else a.var).index.name]
        obsm_entries = obsm(a)
    elif kind == "10x-h5":
        import h5py

        with h5py.File(path, "r") as f:
            g = f["matrix"] if "matrix" in f else f[option if option != "X" else list(f.keys())[0]]
            n_genes, n_cells = g["shape"][...]
            m = sp.csr_matrix((g["data"][...], g["indices"][...], g["indptr"][...]), shape=(n_cells, n_genes))
            obs_names = [b.decode() for b in g["barcodes"][...]]
            if "features" in g:
                var_names = [b.decode() for b in g["features/name"][...]]
                var_columns, obs_columns = tenx_v3_tables(g)
            else:
                var_names = [b.decode() for b in g["gene_names"][...]]
                var_columns = {"gene_ids": [b.decode() for b in g["genes"][...]]}
    elif kind == "10x-mtx":
        m = scipy.io.mmread(first(path, ["matrix.mtx.gz", "matrix.mtx"])).T
        feats = tsv(first(path, ["features.tsv.gz", "features.tsv", "genes.tsv"]))
        var_names = [r[1] for r in feats]
        var_columns = {"gene_ids": [r[0] for r in feats]}
        if all(len(r) >= 3 for r in feats):
            var_columns["feature_types"] = [r[2] for r in feats]
        obs_names = [r[0] for r in tsv(first(path, ["barcodes.tsv.gz", "barcodes.tsv"]))]
    elif kind == "mtx":
        m = scipy.io.mmread(path)
        if option != "transpose":
            m = m.T
    elif kind == "zarr-array":
        import zarr

        z = zarr.open(path, mode="r")
        if isinstance(z, zarr.Array):
            m = z[...]
        else:  # a pre-0.7 AnnData group: names from anndata, the matrix straight from zarr
            import anndata as ad

            a = ad.read_zarr(path)
            obs_names, var_names, var_columns = list(a.obs_names), list(a.var_names), frame(a.var)
            m = z["X"][...]
    else:
        raise SystemExit(f"unknown kind {kind}")
    m = canonical(m)
    if obs_names is None:
        obs_names = [str(i) for i in range(m.shape[0])]
    if var_names is None:
        var_names = [str(i) for i in range(m.shape[1])]
    data = m.data
    if not np.all(data == np.round(data)):
        raise SystemExit("not integer counts")
    return {
        "shape": list(m.shape),
        "obs_names": obs_names,
        "var_names": var_names,
        "var_columns": var_columns,
        "obs_columns": obs_columns,
        "index_names": index_names,
        "obsm": obsm_entries,
        "indptr": m.indptr.tolist(),
        "indices": m.indices.tolist(),
        "data": data.astype(np.int64).tolist(),
    }


def main():
    if sys.argv[1] == "--batch":
        # one request per stdin line: [kind, path, option]; one JSON answer per line
        for line in sys.stdin:
            kind, path, option = json.loads(line)
            print(json.dumps(dump(kind, path, option or "X")), flush=True)
        return
    json.dump(dump(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "X"), sys.stdout)


if __name__ == "__main__":
    main()
