"""The wheel's build hook: the command laid in (``src/deltacells/_runtime``), and the platform tag.

The wheel holds native Node-API addons, so it is not pure Python: its tag is the platform the
runtime was built for (``runtime.json``, written by ``scripts/build-python.mjs``). Building from a
checkout of the repository without a runtime laid in runs that script first (``pip install ./python``
after ``npm run build``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class RuntimeHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return  # an editable install runs the checkout's own command (deltacells/_node.py)
        root = Path(self.root)
        manifest = root / "src" / "deltacells" / "_runtime" / "runtime.json"
        script = root.parent / "scripts" / "build-python.mjs"
        if not manifest.is_file():
            node = shutil.which("node")
            if not script.is_file() or node is None:
                raise RuntimeError(
                    f"{manifest} is missing: build the wheel in the repository with `npm run build && npm run build:python`"
                )
            subprocess.run([node, str(script), "--runtime-only"], check=True)
        info = json.loads(manifest.read_text())
        build_data["pure_python"] = False
        build_data["tag"] = f"py3-none-{info['platform_tag']}"
