"""An independent decoder of deltacells v2 tiles, written from the spec (numpy + zstandard only).

Usage: tile_decode.py TILE [TILE ...]
Prints one JSON object per tile: {"n_cells", "n_genes", "nnz", "indptr", "indices", "data"}, or
{"error": "..."} when the tile breaks a rule of the format. The TypeScript tests compare it with
what @deltacells/core decodes.
"""

import json
import struct
import sys
import zlib

import numpy as np
import zstandard

HEADER = struct.Struct("<8sIIQQIIQQII")
CHUNK = struct.Struct("<12Q")
MARK = 65535


class Corrupt(Exception):
    pass


def frame(blob, off, length, expect_size=None):
    data = blob[off : off + length]
    params = zstandard.get_frame_parameters(data)
    if params.content_size == zstandard.CONTENTSIZE_UNKNOWN:
        raise Corrupt("frame without content size")
    if expect_size is not None and params.content_size != expect_size:
        raise Corrupt(f"frame content size {params.content_size} != {expect_size}")
    out = zstandard.ZstdDecompressor().decompress(data)
    if expect_size is not None and len(out) != expect_size:
        raise Corrupt("frame decompressed to the wrong size")
    return out


def planes_to_u16(raw, n):
    b = np.frombuffer(raw, dtype=np.uint8)
    return b[:n].astype(np.int64) | (b[n:].astype(np.int64) << 8)


def exceptions(blob, off, length, n):
    raw = frame(blob, off, length)
    if len(raw) == 0 or len(raw) % 8 or len(raw) > 8 * n:
        raise Corrupt("exception frame size")
    k = len(raw) // 8
    words = np.frombuffer(raw, dtype="<u4").astype(np.int64)
    pos, payload = words[:k], words[k:]
    if np.any(pos >= n) or np.any(np.diff(pos) <= 0):
        raise Corrupt("exception positions")
    return pos, payload


def decode(blob):
    if len(blob) < 64:
        raise Corrupt("shorter than the header")
    magic, version, flags, n_cells, nnz, n_genes, n_chunks, indptr_off, total_size, crc, reserved = HEADER.unpack_from(blob, 0)
    if magic != b"DELTACEL" or version != 2 or flags != 0 or reserved != 0:
        raise Corrupt("header")
    if total_size != len(blob):
        raise Corrupt("total_size")
    if zlib.crc32(blob[64:total_size]) & 0xFFFFFFFF != crc:
        raise Corrupt("crc32")
    if indptr_off % 8 or indptr_off < 64 + 96 * n_chunks or indptr_off + 8 * (n_cells + 1) > total_size:
        raise Corrupt("indptr_off")
    indptr = np.frombuffer(blob, dtype="<i8", count=n_cells + 1, offset=indptr_off).astype(np.int64)
    if indptr[0] != 0 or indptr[-1] != nnz or np.any(np.diff(indptr) < 0):
        raise Corrupt("indptr")
    indices = np.zeros(nnz, dtype=np.int64)
    data = np.zeros(nnz, dtype=np.int64)
    cell = pos = 0
    for k in range(n_chunks):
        cell_lo, cell_hi, nnz_lo, nnz_hi, g_off, g_len, v_off, v_len, ve_off, ve_len, ge_off, ge_len = CHUNK.unpack_from(
            blob, 64 + 96 * k
        )
        if cell_lo != cell or nnz_lo != pos or cell_hi < cell_lo or indptr[cell_hi] != nnz_hi:
            raise Corrupt("chunk table")
        n = nnz_hi - nnz_lo
        gaps = planes_to_u16(frame(blob, g_off, g_len, 2 * n), n)
        vals = planes_to_u16(frame(blob, v_off, v_len, 2 * n), n)
        if ve_len:
            p, v = exceptions(blob, ve_off, ve_len, n)
            if np.any(v < 65536) or np.any(v > 2**31 - 1) or np.any(vals[p] != MARK):
                raise Corrupt("vexc")
            vals[p] = v
        extra = np.zeros(n, dtype=np.int64)
        if ge_len:
            p, v = exceptions(blob, ge_off, ge_len, n)
            if np.any(v < 1) or np.any(v > n_genes - 1) or np.any(gaps[p] != MARK):
                raise Corrupt("gexc")
            extra[p] = v
        # Per-cell prefix sums: cumulative sum over the chunk minus the sum before each cell.
        starts = indptr[cell_lo:cell_hi] - nnz_lo
        lens = np.diff(indptr[cell_lo : cell_hi + 1])
        total = gaps + extra
        csum = np.cumsum(total)
        busy = lens > 0
        before = np.repeat(csum[starts[busy]] - total[starts[busy]], lens[busy])
        genes = csum - before
        if n and (genes.max() >= n_genes):
            raise Corrupt("gene index >= n_genes")
        indices[nnz_lo:nnz_hi] = genes
        data[nnz_lo:nnz_hi] = vals
        cell, pos = cell_hi, nnz_hi
    if cell != n_cells or pos != nnz:
        raise Corrupt("chunks do not cover the tile")
    return {
        "n_cells": n_cells,
        "n_genes": n_genes,
        "nnz": nnz,
        "indptr": indptr.tolist(),
        "indices": indices.tolist(),
        "data": data.tolist(),
    }


def main():
    for path in sys.argv[1:]:
        with open(path, "rb") as f:
            blob = f.read()
        try:
            out = decode(blob)
        except Corrupt as e:
            out = {"error": str(e)}
        print(json.dumps(out))


if __name__ == "__main__":
    main()
