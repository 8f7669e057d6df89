"""Rewrites a deltacells dataset's obs sidecar as another implementation would from the format
text alone (deltacells-format.md, "Obs"), with pyarrow and the standard library only: the same
columns and values, one row group per tile, zstd, but pyarrow's defaults where the text says
nothing (every field nullable, so category codes are OPTIONAL in parquet; statistics written;
dictionary encoding) and the fingerprint's canonical JSON with json.dumps's default separators
(", " and ": ").

Usage: obs_foreign_sidecar.py DATASET OUT [--null-codes] [--compact] [--no-obs-metadata]
  --null-codes       missing categories as null codes instead of -1 (pyarrow's dictionary arrays do so)
  --compact          the fingerprint with separators=(",", ":") instead (the strict form)
  --no-obs-metadata  drop the manifest metadata's obs_* keys (the free-form metadata deltacells
                     writes: which column is the index, ...), which another writer would not write
OUT is a copy of DATASET with new obs shards, obs_shard_bytes, obs_shard_sha256 and obs_fingerprint.
Prints {"fingerprint": ..., "separators": ...}.
"""

import argparse
import hashlib
import json
import os
import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dataset")
    p.add_argument("out")
    p.add_argument("--null-codes", action="store_true")
    p.add_argument("--compact", action="store_true")
    p.add_argument("--no-obs-metadata", action="store_true")
    args = p.parse_args()
    shutil.copytree(args.dataset, args.out)
    with open(os.path.join(args.out, "manifest.json")) as f:
        man = json.load(f)
    with open(os.path.join(args.out, "obs", "schema.json"), encoding="utf-8") as f:
        schema_text = f.read()
    columns = json.loads(schema_text)["columns"]
    k = man["obs_tiles_per_file"]
    tiles = man["tile_cells"]
    n_shards = len(man["obs_shard_sha256"])
    # the values, read back as a table of the schema's Arrow types (pyarrow's own reading)
    table = pa.concat_tables(
        [pq.read_table(os.path.join(args.out, "obs", f"obs_{s:04d}.parquet")) for s in range(n_shards)]
    )
    fields = [pa.field(c["name"], pa.type_for_alias(c["arrow_type"])) for c in columns]  # nullable=True
    arrays = []
    for c, f in zip(columns, fields):
        a = table.column(c["name"]).combine_chunks().cast(f.type)
        if c["kind"] == "category" and args.null_codes:
            a = pc.if_else(pc.equal(a, -1), pa.scalar(None, f.type), a)
        arrays.append(a)
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    sizes, shas = [], []
    at = 0
    for s in range(n_shards):
        path = os.path.join(args.out, "obs", f"obs_{s:04d}.parquet")
        with pq.ParquetWriter(path, table.schema, compression="zstd") as w:
            for n in tiles[s * k : (s + 1) * k]:
                w.write_table(table.slice(at, n), row_group_size=n)
                at += n
        data = open(path, "rb").read()
        sizes.append(len(data))
        shas.append(hashlib.sha256(data).hexdigest())
    doc = {"schema": schema_text, "tile_cells": tiles, "shards": shas}
    separators = (",", ":") if args.compact else (", ", ": ")
    text = json.dumps(doc, sort_keys=True, separators=separators)
    man["obs_shard_bytes"] = sizes
    man["obs_shard_sha256"] = shas
    man["obs_fingerprint"] = hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]
    if args.no_obs_metadata:
        man["metadata"] = {k: v for k, v in man["metadata"].items() if not k.startswith("obs_")}
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(man, f, indent=1)
    print(json.dumps({"fingerprint": man["obs_fingerprint"], "separators": list(separators)}))


if __name__ == "__main__":
    main()
