"""One run of Python sporadik's writer for the benchmark (a child process, so its peak RSS is its own):
loads the raw matrix of generate.ts into a scipy CSR, builds the CSC when axis 1 is asked for (as
sporadik's docs show: ``write_store(path, [csr, csr.tocsc()])``), writes, and prints one JSON line.

Usage: python bench/sporadik-write/theirs.py MATRIX_DIR OUT AXES BYTE_ADDRESSABLE
"""

import json
import os
import resource
import sys
import time

import numpy as np
import scipy.sparse as sp
import sporadik

matrix, output, axes_text, ba = sys.argv[1:5]
meta = json.load(open(os.path.join(matrix, "meta.json")))
axes = [int(a) for a in axes_text.split(",")]
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# Startup (imports) is not the writer's work; ours is measured the same way.
cpu_at_start = cpu()
t0 = time.perf_counter()
indptr = np.fromfile(os.path.join(matrix, "indptr"), dtype="<i8")
indices = np.fromfile(os.path.join(matrix, "indices"), dtype="<i4")
data = np.fromfile(os.path.join(matrix, "data"), dtype="<i4")
shape = (meta["nRows"], meta["nCols"])
# scipy keeps int32 indptr while the nonzeros fit, as the in-memory writers do.
csr = sp.csr_matrix((data, indices, indptr.astype(np.int32) if meta["nnz"] < 2**31 else indptr), shape=shape)
t1 = time.perf_counter()
layouts = []
if 0 in axes:
    layouts.append(csr)
if 1 in axes:
    layouts.append(csr.tocsc())
t2 = time.perf_counter()
sporadik.write_store(output, layouts, byte_addressable=ba == "1")
t3 = time.perf_counter()
print(
    json.dumps(
        {
            "writer": "python",
            "seconds": t3 - t0,
            "maxRssMiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            # CPU of every thread: on a shared, loaded box, the figure load does not inflate.
            "cpuSeconds": cpu() - cpu_at_start,
            "phases": {"reading": t1 - t0, "tocsc": t2 - t1, "write": t3 - t2},
        }
    )
)
