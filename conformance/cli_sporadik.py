"""Checks sporadik stores written by `deltacells convert --format sporadik` with Python sporadik.

Driven by packages/cli/test/sporadik.test.ts, one process per test file:

  cli_sporadik.py JOBS.json

JOBS.json is a list of jobs {"store": PATH, "input": null | {"kind", "path", "transpose"?,
"genome"?}, "slices": [{"axis": K, "positions": [...]}, ...]}. For each job one JSON line is
printed: sporadik.describe's facts; "problems", the differences between every layout (read whole
with Python sporadik) and the input as the independent readers of dataset_roundtrip.py load it,
plus stored maxima against the values' own; and, per requested batch, what Python's slices_at
returns.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import scipy.sparse as sp
import sporadik

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import canonical, layout_summary  # noqa: E402
from dataset_roundtrip import load_input  # noqa: E402


def describe(path):
    info = sporadik.describe(path)
    return {
        "spec": info.spec,
        "shape": list(info.shape),
        "layouts": {str(axis): layout_summary(layout) for axis, layout in sorted(info.layouts.items())},
    }


def compare(path, spec):
    """Every layout against the input matrix (cells x genes, canonical), and maxima against values."""
    problems = []
    info = sporadik.describe(path)
    expected = None
    if spec is not None:
        matrix, _ = load_input(spec["kind"], spec["path"], None, False, spec.get("transpose", False), spec.get("genome"))
        expected = canonical(matrix)
    for axis in sorted(info.layouts):
        with sporadik.open_store(path, axis=axis) as reader:
            layout = reader.to_layout()
            maxima = np.asarray(reader.maxima())
        data, indices, indptr = (np.asarray(a) for a in (layout.data, layout.indices, layout.indptr))
        own = np.array([np.abs(data[indptr[i] : indptr[i + 1]]).max(initial=0) for i in range(len(indptr) - 1)])
        if not np.array_equal(maxima, own):
            problems.append(f"axis {axis}: stored maxima differ from the values' own")
        if expected is None:
            continue
        kind = sp.csr_matrix if axis == 0 else sp.csc_matrix
        got = kind((data, indices, indptr), shape=tuple(info.shape))
        if not got.has_sorted_indices:
            problems.append(f"axis {axis}: indices are not sorted within each slice")
        if got.shape != expected.shape:
            problems.append(f"axis {axis}: shape {got.shape}, input {expected.shape}")
            continue
        if (got.tocsr() != expected).nnz != 0 or got.nnz != expected.nnz:
            problems.append(f"axis {axis}: values differ from the input's")
        if str(data.dtype) != "int32":
            problems.append(f"axis {axis}: values are {data.dtype}, not int32 counts")
    return problems


def slices(path, axis, positions):
    with sporadik.open_store(path, axis=axis) as reader:
        selection = reader.slices_at(positions)
        indptr = np.asarray(selection.indptr)
        indices = np.asarray(selection.indices)
        data = np.asarray(selection.data)
        return {
            "axis": axis,
            "positions": np.asarray(selection.positions).tolist(),
            "slices": [
                {
                    "position": int(p),
                    "indices": indices[indptr[i] : indptr[i + 1]].tolist(),
                    "values": data[indptr[i] : indptr[i + 1]].tolist(),
                }
                for i, p in enumerate(selection.positions)
            ],
            "dense": np.asarray(selection.to_dense()).tolist(),
        }


def main():
    with open(sys.argv[1]) as handle:
        jobs = json.load(handle)
    for job in jobs:
        try:
            result = {
                "describe": describe(job["store"]),
                "problems": compare(job["store"], job.get("input")),
                "slices": [slices(job["store"], s["axis"], s["positions"]) for s in job.get("slices", [])],
            }
        except Exception as error:  # noqa: BLE001 - one broken job must not hide the others
            result = {"error": f"{type(error).__name__}: {error}"}
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
