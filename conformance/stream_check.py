"""Checks ``deltacells stream`` against the input a dataset was converted from, with pyarrow,
anndata, numpy and scipy only, and the Python example (examples/python/deltacells_stream.py) on top.

Usage: stream_check.py INPUT.h5ad DATASET [--obs A,B] [--world-sizes 1,3] [--batch-size N]
The command is run as ``$DELTACELLS stream ...`` (a command line). Prints one JSON line
{"ok": bool, "problems": [...], "checked": {...}}; exit code 0 only when ok.

Checked, reading the stream with pyarrow's own IPC reader:
- the schema: cell int64, indices and counts list<int32> (or counts fixed_size_list<float32> with
  --dense), obs columns with categories as dictionaries; "deltacells.genes" equals the input's
  var_names (source order), and the dataset's var_names.txt is the input's var_names permuted by
  gene_order.npy (so the stream's columns are the dataset's columns mapped back through it);
- every row equals the input's X row of its cell (anndata, scipy); with --sort-indices its indices
  increase;
- over the ranks of each world size: every cell exactly once apart from the padding each batch's
  "deltacells.batch" metadata reports, equal batch counts, padding equal to the schema's count;
- obs labels equal the input's obs (pandas categoricals, via the dictionaries);
- --genes (names) with --dense: float32 rows equal to the input's columns;
- the end batch: one batch of no rows, last, whose "deltacells.end" counts the batches and rows;
- the example module: iter_batches gives scipy CSR batches equal to the input's rows, numpy dense
  ones too; leaving early stops the command quietly; a missing dataset raises StreamError with the
  command's message.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

import anndata as ad
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.ipc as ipc
import scipy.sparse as sp

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "python")
sys.path.insert(0, EXAMPLES)
import deltacells_stream as dcs  # noqa: E402

problems: list[str] = []


def check(cond: bool, message: str) -> None:
    if not cond:
        problems.append(message)


def command() -> list[str]:
    return shlex.split(os.environ["DELTACELLS"])


def read_stream(args: list[str]) -> tuple[pa.Schema, list[tuple[pa.RecordBatch, dict]]]:
    """The stream's schema and mini-batches; its end batch (no rows, "deltacells.end") checked and left out."""
    proc = subprocess.run([*command(), "stream", *args], capture_output=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"deltacells stream {' '.join(args)} failed: {proc.stderr.decode()}")
    reader = ipc.open_stream(proc.stdout)
    batches = []
    end = None
    while True:
        try:
            batch, meta = reader.read_next_batch_with_custom_metadata()
        except StopIteration:
            break
        if b"deltacells.end" in meta:
            check(end is None and batch.num_rows == 0, "the end batch is one batch of no rows")
            end = json.loads(meta[b"deltacells.end"])
            continue
        check(end is None, "a batch after the end batch")
        batches.append((batch, json.loads(meta[b"deltacells.batch"])))
    check(end is not None and end["batches"] == len(batches) and end["rows"] == sum(b.num_rows for b, _ in batches), f"the end batch says {end}, for {len(batches)} batches")
    return reader.schema, batches


def plain(values: list) -> list:
    """Values comparable across pandas and pyarrow: None for missing, bools, floats (exact)."""
    out = []
    for v in values:
        if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
            out.append(None)
        elif isinstance(v, bool | np.bool_):
            out.append(bool(v))
        else:
            out.append(float(v))
    return out


def rows_equal(x: sp.csr_matrix, cells: np.ndarray, indptr: np.ndarray, indices: np.ndarray, counts: np.ndarray, what: str, sorted_: bool) -> None:
    ref = x[cells]
    ref.sort_indices()
    if sorted_:
        for i in range(len(cells)):
            if np.any(np.diff(indices[indptr[i] : indptr[i + 1]]) <= 0):
                problems.append(f"{what}: cell {cells[i]}'s indices do not increase (--sort-indices)")
                break
    # Without --sort-indices a row comes in the dataset's column order: compare it sorted.
    got = sp.csr_matrix((counts.astype(np.int64), indices.copy(), indptr.copy()), shape=ref.shape)
    got.sort_indices()
    check(np.array_equal(got.indptr, ref.indptr), f"{what}: nonzeros per cell differ from the input's")
    if np.array_equal(got.indptr, ref.indptr):
        check(np.array_equal(got.indices, ref.indices), f"{what}: indices differ from the input's")
        check(np.array_equal(got.data, ref.data), f"{what}: counts differ from the input's")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("input")
    p.add_argument("dataset")
    p.add_argument("--obs", default="")
    p.add_argument("--world-sizes", default="1,3")
    p.add_argument("--batch-size", type=int, default=7)
    a = p.parse_args()
    adata = ad.read_h5ad(a.input)
    x = sp.csr_matrix(adata.X).astype(np.int64)
    x.eliminate_zeros()  # stored zeros (csr.h5ad has some) are not nonzeros: a dataset holds none
    x.sort_indices()
    n, g = x.shape
    obs = [c for c in a.obs.split(",") if c]
    var_names = [str(v) for v in adata.var_names]
    checked: dict[str, object] = {"cells": n, "genes": g}

    # The dataset's own files: columns are the input's, permuted by gene_order.npy.
    order = np.load(os.path.join(a.dataset, "gene_order.npy"))
    with open(os.path.join(a.dataset, "var_names.txt")) as f:
        dataset_names = f.read().split("\n")[:g]
    check(dataset_names == [var_names[j] for j in order], "var_names.txt is not the input's var_names through gene_order.npy")

    for n_world, world in enumerate(int(w) for w in a.world_sizes.split(",")):
        sort = n_world == 0  # the first world size with --sort-indices, the others in the default order
        seen = np.zeros(n, dtype=np.int64)
        batch_counts = set()
        for rank in range(world):
            args = [a.dataset, "--batch-size", str(a.batch_size), "--seed", "11", "--epoch", "1", "--rank", str(rank), "--world-size", str(world)]
            if obs:
                args += ["--obs", ",".join(obs)]
            if sort:
                args.append("--sort-indices")
            schema, batches = read_stream(args)
            meta = schema.metadata
            info = json.loads(meta[b"deltacells.stream"])
            check(json.loads(meta[b"deltacells.genes"]) == var_names, "deltacells.genes is not the input's var_names")
            check(schema.field("cell").type == pa.int64(), "cell is not int64")
            check(schema.field("indices").type == pa.list_(pa.field("item", pa.int32(), nullable=False)), f"indices is {schema.field('indices').type}")
            check(schema.field("counts").type == pa.list_(pa.field("item", pa.int32(), nullable=False)), f"counts is {schema.field('counts').type}")
            check(len(batches) == info["batches"], "batch count differs from the schema's")
            batch_counts.add(len(batches))
            padded = 0
            for k, (b, bm) in enumerate(batches):
                check(bm["index"] == k and bm["epoch"] == 1, f"batch {k}'s metadata says {bm}")
                cells = b.column("cell").to_numpy()
                indptr = b.column("indices").offsets.to_numpy()
                rows_equal(x, cells, indptr, b.column("indices").values.to_numpy(), b.column("counts").values.to_numpy(), f"world {world} rank {rank} batch {k}", sort)
                real = cells[: len(cells) - bm["padded"]]
                np.add.at(seen, real, 1)
                padded += bm["padded"]
                for name in obs:
                    col = b.column(name)
                    want = adata.obs[name].iloc[cells]
                    if pa.types.is_dictionary(col.type):
                        got = col.to_pandas()
                        check(list(got.astype(object).where(got.notna(), None)) == list(want.astype(object).where(want.notna(), None)), f"obs {name} differs (batch {k})")
                        check(list(col.dictionary.to_pylist()) == [str(c) for c in want.cat.categories], f"obs {name}: dictionary is not the input's categories")
                    else:
                        check(plain(col.to_pylist()) == plain(list(want)), f"obs {name} differs (batch {k})")
            check(padded == info["padded"], f"rank {rank}: batches pad {padded}, the schema says {info['padded']}")
        check(bool(np.all(seen == 1)), f"world {world}: cells not seen exactly once: {np.flatnonzero(seen != 1)[:10]}")
        check(len(batch_counts) == 1, f"world {world}: ranks yield different batch counts {batch_counts}")
        checked[f"world_{world}"] = int(seen.sum())

    # --genes by name, --dense: float32 rows of the chosen columns, in the file's order.
    pick = [3, 0, g - 1, 5 % g]
    pick = list(dict.fromkeys(pick))
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("".join(var_names[j] + "\n" for j in pick))
    schema, batches = read_stream([a.dataset, "--genes", f.name, "--dense", "--batch-size", "16"])
    os.unlink(f.name)
    check(json.loads(schema.metadata[b"deltacells.genes"]) == [var_names[j] for j in pick], "--genes: the metadata's genes are not the file's")
    check(schema.field("counts").type == pa.list_(pa.field("item", pa.float32(), nullable=False), len(pick)), f"--dense counts is {schema.field('counts').type}")
    for b, _ in batches:
        cells = b.column("cell").to_numpy()
        got = b.column("counts").values.to_numpy().reshape(len(cells), len(pick))
        check(np.array_equal(got, x[cells][:, pick].toarray().astype(np.float32)), "--dense --genes rows differ from the input's columns")
    checked["dense"] = sum(b.num_rows for b, _ in batches)

    # The example module: scipy CSR and numpy batches, leaving early, errors.
    covered = 0
    for batch in dcs.iter_batches(a.dataset, batch_size=a.batch_size, seed=2, obs=obs, command=command()):
        check(isinstance(batch.X, sp.csr_matrix) and batch.X.dtype == np.float32, f"iter_batches gave {type(batch.X)}")
        check(batch.genes == var_names, "iter_batches: genes differ")
        real = batch.cells
        check((batch.X != x[real].astype(np.float32)).nnz == 0, "iter_batches: a scipy batch differs from the input's rows")
        batch.X.sort_indices()  # a scipy matrix like any other: sorting in place works
        for name in obs:
            if name in batch.categories:
                labels = np.array(batch.categories[name] + [None], dtype=object)[batch.obs[name]]
                want = adata.obs[name].iloc[real].astype(object).where(adata.obs[name].iloc[real].notna(), None)
                check(list(labels) == list(want), f"iter_batches: obs {name} labels differ")
        covered += len(real)
    check(covered == n, f"iter_batches covered {covered} of {n} cells")

    # Message bodies read into recycled memory (every body here, however small): a batch still held
    # keeps its memory; one let go gives it to a later batch. All batches of an epoch held at once,
    # then checked, and an epoch whose batches are dropped as it goes (its memory reused).
    recycle_from = dcs._RECYCLE_FROM
    dcs._RECYCLE_FROM = 1
    try:
        held = list(dcs.iter_batches(a.dataset, batch_size=a.batch_size, seed=3, command=command()))
        for k, batch in enumerate(held):
            check((batch.X != x[batch.cells].astype(np.float32)).nnz == 0, f"recycled bodies: held batch {k} changed")
        check(sum(len(b.cells) for b in held) == n, "recycled bodies: cells missing")
        del held
        for k, batch in enumerate(dcs.iter_batches(a.dataset, batch_size=a.batch_size, seed=4, command=command())):
            check((batch.X != x[batch.cells].astype(np.float32)).nnz == 0, f"recycled bodies: batch {k} differs")
    finally:
        dcs._RECYCLE_FROM = recycle_from
    dense = next(dcs.iter_batches(a.dataset, batch_size=5, output="numpy", shuffle=False, command=command()))
    check(np.array_equal(dense.X, x[:5].toarray().astype(np.float32)), "iter_batches numpy: rows differ")

    # The same through the example, --dense with --genes: float32 rows.
    picked = next(dcs.iter_batches(a.dataset, batch_size=7, shuffle=False, dense=True, genes=[var_names[i] for i in pick], command=command()))
    check(np.array_equal(picked.X, x[picked.cells][:, pick].toarray().astype(np.float32)), "iter_batches dense --genes: rows differ")

    # A fresh process converts its first batch (category codes included) without importing pandas or
    # pyarrow.compute: their import (0.3-0.5 s) would delay every process's first batch.
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import deltacells_stream as dcs, shlex; "
        "b = next(dcs.iter_batches(sys.argv[2], batch_size=5, obs=sys.argv[3].split(',') if sys.argv[3] else [], command=shlex.split(sys.argv[4]))); "
        "print(sorted(m for m in ('pandas', 'pyarrow.compute') if m in sys.modules))"
    )
    lazy = subprocess.run([sys.executable, "-c", probe, EXAMPLES, a.dataset, ",".join(o for o in obs if adata.obs[o].dtype.name == "category"), os.environ["DELTACELLS"]], capture_output=True, text=True, check=False)
    check(lazy.returncode == 0 and lazy.stdout.strip() == "[]", f"the first batch imported {lazy.stdout.strip()} {lazy.stderr[-300:]}")

    stream = dcs.Stream(a.dataset, batch_size=1, command=command())
    first = next(iter(stream))
    check(first.num_rows == 1, "a batch of one cell")
    stream.close()
    check(stream._proc.returncode == 0, f"leaving early: the command exited with {stream._proc.returncode}")

    try:
        next(dcs.iter_batches(os.path.join(a.dataset, "no-such-dataset"), command=command()))
        problems.append("a missing dataset raised nothing")
    except dcs.StreamError as err:
        check("nothing is there" in str(err) and err.returncode == 1, f"StreamError says {err}")

    print(json.dumps({"ok": not problems, "problems": problems[:20], "checked": checked}))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
