"""Interop between @deltacells/sporadik and the Python reference (sporadik, zarr-python, anndata).

Driven by packages/sporadik/test/*.test.ts. Every subcommand prints one JSON object on stdout.

  read STORE                 describe + every value the Python readers return, per layout
  refusal STORE              the class name of what Python's describe/open_store raises ("ok" if none)
  write STORE SPEC           write a store with Python sporadik from a JSON spec of coordinates
  anndata STORE SPEC         rank two: what anndata writes/reads for the same scipy matrix vs STORE
  slices STORE AXIS JSON     Python's slices_at(positions) Selection on STORE
  read-all STORE             every layout read whole by Python sporadik (or the error it raised)
  zarr-read STORE            every array of STORE read whole by zarr-python (or the error it raised)
  zarr-meta DTYPE N CHUNK    the zarr.json zarr-python writes for a 1-D array compressed with
                             ZstdCodec(level=0, checksum=True)
"""

from __future__ import annotations

import json
import sys
import tempfile
import warnings
from importlib.metadata import version

import numpy as np
import sporadik
import zarr
from common import layout_summary


def _plain(array):
    array = np.asarray(array)
    return {"dtype": str(array.dtype), "values": array.tolist()}


def read(path):
    info = sporadik.describe(path)
    out = {"spec": info.spec, "shape": list(info.shape), "layouts": {}}
    for axis, layout in sorted(info.layouts.items()):
        with sporadik.open_store(path, axis=axis) as reader:
            whole = reader.to_layout()
            slices = []
            for position in range(layout.slices):
                positions, values = reader.slice_at(position)
                coords, _ = reader.coords_at(position)
                slices.append(
                    {
                        "bounds": list(reader.bounds_at(position)),
                        "positions": _plain(positions),
                        "values": _plain(values),
                        "coords": [np.asarray(c).tolist() for c in coords],
                        "dense": np.asarray(reader.dense_slice(position)).reshape(-1).tolist(),
                    }
                )
            out["layouts"][str(axis)] = {
                **layout_summary(layout),
                "encoding_version": layout.encoding_version,
                "data": _plain(whole.data),
                "indices": _plain(whole.indices),
                "indptr": _plain(whole.indptr),
                "maxima": _plain(reader.maxima()),
                "slices": slices,
            }
    print(json.dumps(out))


def refusal(path):
    try:
        info = sporadik.describe(path)
        for axis in info.layouts:
            with sporadik.open_store(path, axis=axis) as reader:
                reader.slice_at(0) if reader.info.slices else None
    except Exception as error:  # noqa: BLE001 - the class is the answer
        print(json.dumps({"raised": type(error).__name__, "message": str(error)}))
        return
    print(json.dumps({"raised": "ok"}))


def read_all(path):
    """Every layout of STORE read whole by Python sporadik, or the class of what it raised."""
    try:
        info = sporadik.describe(path)
        for axis in info.layouts:
            with sporadik.open_store(path, axis=axis) as reader:
                reader.to_layout()
    except Exception as error:  # noqa: BLE001 - the class is the answer
        print(json.dumps({"raised": type(error).__name__, "message": str(error)}))
        return
    print(json.dumps({"raised": "ok"}))


def slices(path, axis, positions_json):
    positions = json.loads(positions_json)
    with sporadik.open_store(path, axis=int(axis)) as reader:
        selection = reader.slices_at(positions)
        coords, values = selection.coords()
        print(
            json.dumps(
                {
                    "positions": np.asarray(selection.positions).tolist(),
                    "indptr": np.asarray(selection.indptr).tolist(),
                    "indices": _plain(selection.indices),
                    "data": _plain(selection.data),
                    "coords": [np.asarray(c).tolist() for c in coords],
                    "values": np.asarray(values).tolist(),
                    "dense": np.asarray(selection.to_dense()).reshape(-1).tolist(),
                    "dense_shape": list(selection.to_dense().shape),
                }
            )
        )


def _coords(spec):
    shape = tuple(spec["shape"])
    coords = tuple(np.asarray(c, dtype=np.int64) for c in spec["coords"])
    values = np.asarray(spec["values"], dtype=spec["dtype"])
    return shape, coords, values


def write(path, spec_path):
    with open(spec_path) as handle:
        spec = json.load(handle)
    shape, coords, values = _coords(spec)
    array = sporadik.SparseArray.from_coords(shape, coords, values, axes=spec.get("axes"))
    array.write(path, chunk=spec.get("chunk"), byte_addressable=bool(spec.get("byte_addressable")))
    print(json.dumps({"written": path}))


def anndata_check(path, spec_path):
    import anndata as ad
    import scipy.sparse as sp
    from anndata.io import read_elem, write_elem

    with open(spec_path) as handle:
        spec = json.load(handle)
    shape, coords, values = _coords(spec)
    coo = sp.coo_matrix((values, coords), shape=shape)
    ours = zarr.open_group(path, mode="r")
    report = {"anndata": version("anndata"), "layouts": {}}
    with tempfile.TemporaryDirectory() as scratch:
        theirs = zarr.open_group(scratch, mode="w")
        for axis, fmt in ((0, "csr"), (1, "csc")):
            name = f"axis{axis}"
            if name not in ours["layouts"]:
                continue
            matrix = coo.tocsr() if fmt == "csr" else coo.tocsc()
            write_elem(theirs, fmt, matrix)
            mine = ours["layouts"][name]
            arrays = {}
            for part in ("data", "indices", "indptr"):
                a, b = np.asarray(theirs[fmt][part][:]), np.asarray(mine[part][:])
                arrays[part] = {"anndata": str(a.dtype), "ours": str(b.dtype), "equal": bool(np.array_equal(a, b))}
            back = read_elem(mine)
            report["layouts"][name] = {
                "arrays": arrays,
                "attrs": {"anndata": dict(theirs[fmt].attrs), "ours": dict(mine.attrs)},
                "read_elem_format": back.format,
                "read_elem_shape": list(back.shape),
                "read_elem_equal": bool((back != matrix).nnz == 0) and back.shape == matrix.shape,
            }
    print(json.dumps(report))


def _compressors(name):
    """The bytes-to-bytes codecs zarr-python writes for `name` (zarr v3 core and numcodecs.*)."""
    from zarr import codecs
    from zarr.registry import get_codec_class

    core = {
        "gzip": lambda: [codecs.GzipCodec(level=5)],
        "zstd": lambda: [codecs.ZstdCodec(level=3)],
        "blosc": lambda: [codecs.BloscCodec(cname="lz4", shuffle="shuffle")],
        "crc32c": lambda: [codecs.Crc32cCodec()],
        "zstd+crc32c": lambda: [codecs.ZstdCodec(level=3), codecs.Crc32cCodec()],
    }
    if name in core:
        return core[name]()
    if name == "numcodecs.shuffle":
        return [get_codec_class(name)(elementsize=4), codecs.ZstdCodec(level=3)]
    return [get_codec_class(name)()]


def recompress(path, name):
    """Rewrite every array of a sporadik store with zarr-python, compressed with `name`."""
    root = zarr.open_group(path, mode="r+")

    def walk(group, prefix):
        for key, node in list(group.members()):
            if isinstance(node, zarr.Group):
                walk(node, f"{prefix}{key}/")
                continue
            values, attrs = node[...], dict(node.attrs)
            group.create_array(
                key,
                shape=node.shape,
                dtype=node.dtype,
                chunks=node.chunks,
                fill_value=node.fill_value,
                compressors=_compressors(name),
                attributes=attrs,
                overwrite=True,
            )[...] = values

    walk(root, "")
    print(json.dumps({"ok": True}))


def zarr_read(path):
    """Every array under STORE, read whole by zarr-python itself (not through sporadik)."""
    out = {}

    def walk(group, prefix):
        for key, node in sorted(group.members()):
            if isinstance(node, zarr.Group):
                walk(node, f"{prefix}{key}/")
            else:
                out[f"{prefix}{key}"] = _plain(node[...])

    try:
        walk(zarr.open_group(path, mode="r"), "")
    except Exception as error:  # noqa: BLE001 - the class is the answer
        print(json.dumps({"raised": type(error).__name__, "message": str(error)}))
        return
    print(json.dumps({"raised": "ok", "arrays": out}))


def zarr_meta(dtype, length, chunk):
    from zarr import codecs

    with tempfile.TemporaryDirectory() as scratch:
        zarr.open_group(scratch, mode="w").create_array(
            "a",
            shape=(int(length),),
            dtype=dtype,
            chunks=(int(chunk),),
            compressors=[codecs.ZstdCodec(level=0, checksum=True)],
        )
        with open(f"{scratch}/a/zarr.json") as handle:
            print(json.dumps({"text": handle.read()}))


if __name__ == "__main__":
    # Library deprecation chatter goes to stderr and says nothing about the format.
    warnings.filterwarnings("ignore")
    command, *args = sys.argv[1:]
    commands = {
        "read": read,
        "refusal": refusal,
        "write": write,
        "anndata": anndata_check,
        "slices": slices,
        "recompress": recompress,
        "zarr-read": zarr_read,
        "read-all": read_all,
        "zarr-meta": zarr_meta,
    }
    commands[command](*args)
