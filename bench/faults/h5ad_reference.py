"""The reference side of the h5ad-damage fault class (bench/faults/h5ad-damage.ts).

usage: h5ad_reference.py regions PATH   the byte ranges of an .h5ad's parts, as JSON:
                                         {"superblock": [[off, len]], "X/data": [...], ...}
       h5ad_reference.py read           stdin: one path per line; stdout: one JSON per line,
                                         {"ok": true, "shape", "var_names", "indptr", "indices",
                                         "data"} (X as anndata reads it, canonical CSR) or
                                         {"ok": false, "error"}
"""

import json
import sys
import warnings

import h5py
import numpy as np
import scipy.sparse as sp

warnings.filterwarnings("ignore")


def regions(path):
    out = {"superblock": [[0, 96]]}
    with h5py.File(path, "r") as f:

        def visit(name, obj):
            if not isinstance(obj, h5py.Dataset):
                return
            group = name.split("/")[0]
            label = name if group == "X" else group
            ranges = out.setdefault(label, [])
            dsid = obj.id
            if obj.chunks is None:
                offset = dsid.get_offset()
                if offset is not None:
                    ranges.append([int(offset), int(dsid.get_storage_size())])
            else:
                for i in range(dsid.get_num_chunks()):
                    info = dsid.get_chunk_info(i)
                    ranges.append([int(info.byte_offset), int(info.size)])

        f.visititems(visit)
    return {k: v for k, v in out.items() if v}


def read(path):
    import anndata

    a = anndata.read_h5ad(path)
    m = sp.csr_matrix(a.X)
    m.sum_duplicates()
    m.eliminate_zeros()
    m.sort_indices()
    return {
        "ok": True,
        "shape": list(m.shape),
        "var_names": [str(v) for v in a.var_names],
        "indptr": m.indptr.tolist(),
        "indices": m.indices.tolist(),
        "data": np.asarray(m.data, dtype=np.float64).tolist(),
    }


def main():
    if sys.argv[1] == "regions":
        json.dump(regions(sys.argv[2]), sys.stdout)
        return
    for line in sys.stdin:
        path = line.strip()
        try:
            answer = read(path)
        except Exception as err:  # every failure is an answer: anndata refused the file
            answer = {"ok": False, "error": f"{type(err).__name__}: {err}"[:300]}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
