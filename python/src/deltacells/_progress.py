"""Progress bars through tqdm for the command's ``{"progress": ...}`` lines."""

from __future__ import annotations

import sys
from typing import Any


class TqdmBars:
    """One tqdm bar per phase of the command ("pass 1", "pass 2", "export", ...)."""

    def __init__(self, tqdm: Any) -> None:
        self._tqdm = tqdm
        self._bar: Any = None
        self._phase: str | None = None

    def __call__(self, p: dict[str, Any]) -> None:
        if self._bar is None or p.get("phase") != self._phase:
            self.close()
            self._phase = p.get("phase")
            self._bar = self._tqdm(total=p.get("total"), unit=p.get("unit") or "it", desc=self._phase, unit_scale=(p.get("total") or 0) >= 10_000, leave=True)
        self._bar.update(max(0, int(p.get("done", 0)) - self._bar.n))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def progress_bars(progress: bool | None) -> TqdmBars | None:
    """tqdm bars when ``progress`` is True (tqdm.auto: a widget in a notebook), or when it is None,
    tqdm is installed and stderr is a terminal; else None (the command is then asked for none)."""
    if progress is False:
        return None
    try:
        if progress:
            from tqdm.auto import tqdm
        else:
            if not (hasattr(sys.stderr, "isatty") and sys.stderr.isatty()):
                return None
            from tqdm import tqdm
    except ImportError:
        if progress:
            raise ImportError("progress=True needs tqdm: pip install tqdm") from None
        return None
    return TqdmBars(tqdm)
