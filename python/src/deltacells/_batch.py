"""Training batches: what a transport hands over (:class:`Parts`) and what the caller gets (:class:`Batch`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

Output = Literal["csr", "dense", "torch_csr", "torch_dense"]
OUTPUTS: tuple[str, ...] = ("csr", "dense", "torch_csr", "torch_dense")


@dataclass
class Parts:
    """One batch as a transport delivers it: CSR arrays (columns in the stream's gene order) and obs."""

    cells: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    obs: dict[str, np.ndarray]
    categories: dict[str, list[str]]
    meta: dict[str, Any]
    """The batch's ``deltacells.batch`` metadata: ``epoch``, ``index``, ``padded`` (elastic: ``global_index``)."""


@dataclass
class Batch:
    """One mini-batch of cells: ``X`` (cells x genes) in the requested output, and their obs."""

    X: Any
    """``scipy.sparse.csr_matrix`` (``output="csr"``), ``numpy.ndarray`` (``"dense"``), or a torch
    sparse CSR / dense tensor (``"torch_csr"``, ``"torch_dense"``); float32 counts by default."""
    cells: np.ndarray
    """int64: the dataset's number of each row's cell (a padded epoch repeats some at the end)."""
    obs: dict[str, np.ndarray] = field(default_factory=dict)
    """The requested obs columns: numbers, or a categorical's integer codes (-1: missing)."""
    categories: dict[str, list[str]] = field(default_factory=dict)
    """Each categorical column's labels: code ``i`` is ``categories[name][i]``."""
    genes: list[str] = field(default_factory=list)
    """The gene of each column of ``X``."""
    epoch: int = 0
    index: int = 0
    """The batch's number in its epoch (from 0, ``start_batch`` included)."""
    padded: int = 0
    """How many of the last rows repeat cells to pad the epoch (0 but in a rank's last batches)."""
    global_index: int | None = None
    """``order="elastic"``: the batch's number in the epoch's global batch sequence; else ``None``."""

    def labels(self, name: str) -> np.ndarray:
        """A categorical obs column's labels (``None`` where missing), an object array."""
        codes = self.obs[name]
        cats = np.asarray([*self.categories[name], None], dtype=object)
        return cats[np.where(codes < 0, len(cats) - 1, codes)]

    def __len__(self) -> int:
        return len(self.cells)


def make_batch(parts: Parts, genes: list[str], output: str, dtype: Any, *, copy: bool = False) -> Batch:
    """The :class:`Batch` of ``parts`` with ``X`` in ``output``, counts as ``dtype``; with ``copy``
    its arrays are the batch's own, not views of the memory the transport read them into."""
    n, g = len(parts.cells), len(genes)
    data = parts.data if parts.data.dtype == np.dtype(dtype) else parts.data.astype(dtype)
    indptr, indices = parts.indptr, parts.indices
    if copy:
        indices = indices.copy()
        data = data.copy() if data is parts.data else data
    if output == "csr":
        import scipy.sparse as sp

        x: Any = sp.csr_matrix((data, indices, indptr), shape=(n, g))
    elif output == "dense":
        x = dense(indptr, indices, data, n, g)
    elif output in ("torch_csr", "torch_dense"):
        import torch

        if output == "torch_dense":
            x = torch.from_numpy(dense(indptr, indices, data, n, g))
        else:
            # torch wants each row's columns increasing: scipy sorts in C (a no-op once sorted).
            import scipy.sparse as sp

            csr = sp.csr_matrix((data, indices, indptr), shape=(n, g))
            csr.sort_indices()
            x = torch.sparse_csr_tensor(
                torch.from_numpy(csr.indptr.astype(np.int64)),
                torch.from_numpy(csr.indices.astype(np.int64)),
                torch.from_numpy(csr.data),
                size=(n, g),
            )
    else:
        raise ValueError(f"output must be one of {', '.join(OUTPUTS)}, got {output!r}")
    meta = parts.meta
    return Batch(
        X=x,
        cells=parts.cells.copy() if copy else parts.cells,
        obs={name: values.copy() for name, values in parts.obs.items()} if copy else parts.obs,
        categories=parts.categories,
        genes=genes,
        epoch=int(meta.get("epoch", 0)),
        index=int(meta.get("index", 0)),
        padded=int(meta.get("padded", 0)),
        global_index=None if meta.get("global_index") is None else int(meta["global_index"]),
    )


def dense(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, n: int, g: int) -> np.ndarray:
    """CSR rows as a dense ``n x g`` array."""
    out = np.zeros((n, g), dtype=data.dtype)
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    out[rows, indices] = data
    return out
