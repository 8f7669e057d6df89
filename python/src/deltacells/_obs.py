"""obs columns from the local Arrow cache as pandas, the way anndata holds them.

``deltacells obs DATASET --localize`` fetches the columns into the cache the TypeScript side
keeps (``$DELTACELLS_CACHE``, ``$XDG_CACHE_HOME/deltacells``, ``~/.cache/deltacells``: one
uncompressed Arrow IPC file per column, one record batch per tile, written atomically under a
lock, keyed by the obs content's fingerprint) and says where they are; they are memory-mapped
here. Categoricals come back as ``pandas.Categorical`` over the dataset's global vocabulary,
columns the input held as pandas nullable dtypes (``Int32``, ``boolean``, ``string``) as those.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from .errors import DeltacellsError

_NULLABLE = {
    "int8": "Int8",
    "int16": "Int16",
    "int32": "Int32",
    "int64": "Int64",
    "uint8": "UInt8",
    "uint16": "UInt16",
    "uint32": "UInt32",
    "uint64": "UInt64",
    "float": "Float32",
    "double": "Float64",
}


def read_cached(path: str, n_cells: int, n_tiles: int) -> pa.ChunkedArray:
    """The column of a cache file (memory-mapped: its chunks are views of the file)."""
    try:
        with pa.memory_map(path) as source:
            reader = pa.ipc.open_file(source)
            batches = [reader.get_batch(i) for i in range(reader.num_record_batches)]
    except (OSError, pa.ArrowInvalid) as err:
        raise DeltacellsError(f"the cached obs column {path} cannot be read: {err}", object=path, tag="CacheUnreadable") from err
    rows = sum(b.num_rows for b in batches)
    if len(batches) != n_tiles or rows != n_cells:
        raise DeltacellsError(
            f"the cached obs column {path} holds {len(batches)} batches of {rows} rows, not {n_tiles} of {n_cells}: "
            "another program changed it",
            hint="delete the file: the next read fetches it again",
            object=path,
            expected=[n_tiles, n_cells],
            found=[len(batches), rows],
            tag="CacheUnreadable",
        )
    return pa.chunked_array([b.column(0) for b in batches], type=batches[0].schema.field(0).type if batches else None)


def _mask(values: pa.Array) -> np.ndarray:
    return np.asarray(values.is_null().to_numpy(zero_copy_only=False), dtype=bool)


def to_pandas(column: dict[str, Any], values: pa.ChunkedArray, ordered: bool, nullable: bool) -> Any:
    """One column as anndata holds it in ``obs``: a Categorical, a numpy array or a nullable array."""
    arr = values.combine_chunks()
    kind = column["kind"]
    if kind == "category":
        codes = arr.fill_null(-1).to_numpy(zero_copy_only=False)
        return pd.Categorical.from_codes(codes, categories=pd.Index(column["categories"]), ordered=ordered)
    if kind == "numeric":
        if nullable:
            data = arr.fill_null(0).to_numpy(zero_copy_only=False)
            return pd.array(data, dtype=_NULLABLE[column["arrow_type"]]) if arr.null_count == 0 else _masked(data, _mask(arr), column["arrow_type"])
        return arr.to_numpy(zero_copy_only=False)
    if kind == "bool":
        if nullable or arr.null_count:
            data = arr.fill_null(False).to_numpy(zero_copy_only=False)
            return pd.arrays.BooleanArray(np.asarray(data, dtype=bool), _mask(arr))
        return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=bool)
    # strings
    objects = np.array(arr.to_pylist(), dtype=object)
    return pd.array(objects, dtype="string") if nullable else objects


def _masked(data: np.ndarray, mask: np.ndarray, arrow_type: str) -> Any:
    dtype = _NULLABLE[arrow_type]
    if dtype.startswith("Float"):
        return pd.arrays.FloatingArray(data, mask)
    return pd.arrays.IntegerArray(data, mask)


def frame(info: dict[str, Any], wanted: list[str] | None) -> pd.DataFrame:
    """The DataFrame of ``obs --localize --json``'s answer: the ``wanted`` columns (all but the
    index column when None), indexed by the cells' names."""
    n_cells, n_tiles = int(info["n_cells"]), int(info["n_tiles"])
    ordered, nullable = set(info.get("ordered") or []), set(info.get("nullable") or [])
    columns = {c["name"]: c for c in info["columns"]}
    for c in columns.values():
        if not c.get("path"):
            raise DeltacellsError(f"obs column {c['name']!r} was not cached", tag="CacheUnreadable")
    # None: the dataset names no index column (another writer's): every column stays a column,
    # and the cells are named by their numbers, as anndata names cells without names
    index_name = info.get("index")
    names = [n for n in columns if n != index_name] if wanted is None else wanted

    def series(name: str) -> Any:
        c = columns[name]
        return to_pandas(c, read_cached(c["path"], n_cells, n_tiles), name in ordered, name in nullable)

    if index_name is None:
        index_values = np.array([str(i) for i in range(n_cells)], dtype=object)
    else:
        index_values = series(index_name)
        if isinstance(index_values, pd.Categorical):
            index_values = np.asarray(index_values.astype(object).fillna(""), dtype=object)
        else:
            index_values = np.array(["" if v is None or v is pd.NA else str(v) for v in np.asarray(index_values, dtype=object)], dtype=object)
    index = pd.Index(index_values, name=info.get("index_name"), dtype=object)
    return pd.DataFrame({name: series(name) for name in names}, index=index)
