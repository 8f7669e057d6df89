"""Writes a copy of an .h5ad with its cells sorted by one obs column (stable: ties keep their order),
as atlases are often stored (concatenated by donor, tissue or cell type): the input on which a
loader's shuffle has the most to do, for bench/loader/mixing.ts.

Usage: conformance/.venv/bin/python bench/loader/sort_h5ad.py IN.h5ad OUT.h5ad COLUMN
"""

from __future__ import annotations

import sys

import anndata as ad
import numpy as np


def main() -> None:
    src, out, column = sys.argv[1:4]
    adata = ad.read_h5ad(src)
    order = np.argsort(adata.obs[column].cat.codes.to_numpy(), kind="stable")
    adata[order].copy().write_h5ad(out)


if __name__ == "__main__":
    main()
