"""Reads saved ``deltacells stream`` outputs, some of them cut short, as two Python consumers would:
pyarrow alone with the end check the stream's documentation gives, and the example module
(examples/python/deltacells_stream.py), its command replaced by one that replays the file and exits
0 (as a wrapper that loses the command's exit code would).

Usage: stream_end_check.py FILE... ; prints one JSON line per file:
{"file", "pyarrow": R, "example": R}, R being {"complete": true, "batches": n, "cells": sha256 of
the int64 cell column of every batch, in order} or {"error": "Type: message"}.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

import pyarrow as pa
import pyarrow.ipc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "python"))
import deltacells_stream as dcs  # noqa: E402

REPLAY = "import shutil, sys; shutil.copyfileobj(open(sys.argv[1], 'rb'), sys.stdout.buffer)"


def read_checked(path: str) -> tuple[int, str]:
    """The documented check: every batch before the one with ``deltacells.end`` metadata, which
    must count them; no such batch means part of an epoch."""
    digest = hashlib.sha256()
    batches, end = 0, None
    with pa.ipc.open_stream(pa.OSFile(path)) as reader:
        while True:
            try:
                batch, meta = reader.read_next_batch_with_custom_metadata()
            except StopIteration:
                break
            if meta is not None and b"deltacells.end" in meta:
                end = json.loads(meta[b"deltacells.end"])
                continue
            batches += 1
            digest.update(batch.column("cell").to_numpy().astype("<i8").tobytes())
    if end is None or end["batches"] != batches:
        raise RuntimeError(f"incomplete epoch: {batches} batches and no end batch counting them")
    return batches, digest.hexdigest()


def read_example(path: str) -> tuple[int, str]:
    digest = hashlib.sha256()
    batches = 0
    with dcs.Stream(path, command=[sys.executable, "-c", REPLAY, path]) as stream:
        for batch in stream:
            batches += 1
            digest.update(batch.column("cell").to_numpy().astype("<i8").tobytes())
    return batches, digest.hexdigest()


def outcome(read, path: str) -> dict:
    try:
        batches, cells = read(path)
        return {"complete": True, "batches": batches, "cells": cells}
    except Exception as err:  # noqa: BLE001 - any error is what the consumer gets, and is reported
        return {"error": f"{type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}"}


def main() -> int:
    for path in sys.argv[1:]:
        print(json.dumps({"file": path, "pyarrow": outcome(read_checked, path), "example": outcome(read_example, path)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
