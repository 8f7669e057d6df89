"""Small helpers shared by the conformance scripts, which import it from this folder (a script's
own folder is first on sys.path when Python runs it)."""

import scipy.sparse as sp


def canonical(m):
    """A CSR copy of a matrix with duplicates summed, explicit zeros dropped and indices sorted."""
    m = sp.csr_matrix(m)
    m.sum_duplicates()
    m.eliminate_zeros()
    m.sort_indices()
    return m


def layout_summary(layout):
    """The JSON description of one layout of `sporadik.describe(path).layouts`."""
    return {
        "path": layout.path,
        "encoding": layout.encoding,
        "indexed_axis": layout.indexed_axis,
        "index_order": list(layout.index_order),
        "nnz": layout.nnz,
        "dtype": layout.dtype,
        "chunks": layout.chunks,
        "range_readable": layout.range_readable,
        "has_maxima": layout.has_maxima,
    }
