"""The rows in embedding order (`convert --sporadik-rows`), read by the reference readers.

Given a dataset, prints JSON: what Python sporadik's describe says of `sporadik-rows/`, and
whether its rows, read three independent ways (Python sporadik's `slices_at` over every row,
zarr-python's arrays of `layouts/axis0`, anndata's `read_elem` of that group), put back in cell
order through `order.npy`, equal the companion's rows (Python sporadik, dataset order) exactly.
"""

import json
import sys

import anndata
import numpy as np
import scipy.sparse as sp
import sporadik
import zarr

dataset = sys.argv[1]
rows_path = f"{dataset}/sporadik-rows"
info = sporadik.describe(rows_path)
order = np.load(f"{rows_path}/order.npy")
n = info.shape[0]

with sporadik.open_store(f"{dataset}/sporadik", axis=0) as companion:
    truth = companion.slices_at(range(n))
truth = sp.csr_matrix((truth.data, truth.indices, truth.indptr), shape=info.shape)

with sporadik.open_store(rows_path, axis=0) as rows:
    read = rows.slices_at(range(n))
by_sporadik = sp.csr_matrix((read.data, read.indices, read.indptr), shape=info.shape)

group = zarr.open_group(f"{rows_path}/layouts/axis0", mode="r")
by_zarr = sp.csr_matrix((group["data"][:], group["indices"][:], group["indptr"][:]), shape=info.shape)
by_anndata = sp.csr_matrix(anndata.io.read_elem(group))

# Row k holds cell order[k]: rows[argsort(order)] is the matrix in cell order.
back = np.argsort(order)


def same(m: sp.csr_matrix) -> bool:
    m = m[back]
    return (
        m.shape == truth.shape
        and np.array_equal(m.indptr, truth.indptr)
        and np.array_equal(m.indices, truth.indices)
        and np.array_equal(m.data, truth.data)
    )


print(
    json.dumps(
        {
            "shape": list(info.shape),
            "layouts": sorted(info.layouts),
            "nnz": info.layouts[0].nnz,
            "order_is_permutation": bool(np.array_equal(np.sort(order), np.arange(n))),
            "sporadik": same(by_sporadik),
            "zarr": same(by_zarr),
            "anndata": same(by_anndata),
            "differs_from_cell_order": not np.array_equal(order, np.arange(n)),
        }
    )
)
