"""Running the ``deltacells`` command: its arguments, its JSON stderr, its errors and progress.

Every call runs the command with ``DELTACELLS_STDERR=json``: the error that ends it comes as one
``{"error": ...}`` line (raised here as the exception of its tag, :mod:`deltacells.errors`),
progress as ``{"progress": ...}`` lines (a tqdm bar), and any other line (a warning) is passed on
to this process's stderr as it is.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import IO, Any

from ._node import cli_entry, find_node
from .errors import DeltacellsError, error_from_record

Progress = Callable[[dict[str, Any]], None]

#: The storage options of :func:`deltacells.open` and friends, as s3fs spells them, and what each becomes.
STORAGE_OPTIONS = ("anon", "key", "secret", "token", "profile", "region", "endpoint_url", "retries", "timeout")


def storage_arguments(options: Mapping[str, Any]) -> tuple[list[str], dict[str, str]]:
    """Command-line flags and environment variables for storage options (see :func:`deltacells.open`).

    Credentials go through the environment, never the command line (which other users of the
    machine can read).
    """
    unknown = sorted(set(options) - set(STORAGE_OPTIONS))
    if unknown:
        raise TypeError(f"unknown storage option(s) {', '.join(unknown)}; known: {', '.join(STORAGE_OPTIONS)}")
    args: list[str] = []
    env: dict[str, str] = {}
    if options.get("anon"):
        args.append("--no-sign-request")
    for name, var in (
        ("key", "AWS_ACCESS_KEY_ID"),
        ("secret", "AWS_SECRET_ACCESS_KEY"),
        ("token", "AWS_SESSION_TOKEN"),
        ("profile", "AWS_PROFILE"),
        ("region", "AWS_REGION"),
        ("endpoint_url", "AWS_ENDPOINT_URL"),
    ):
        if options.get(name) is not None:
            env[var] = str(options[name])
    if options.get("retries") is not None:
        args += ["--retries", str(int(options["retries"]))]
    if options.get("timeout") is not None:
        args += ["--timeout", str(options["timeout"])]
    return args, env


def flags(options: Mapping[str, Any]) -> list[str]:
    """Keyword options as the command's flags: ``tile_size=64`` is ``--tile-size 64``, ``True`` a bare
    flag, ``False`` and ``None`` nothing, a list or tuple its items joined by commas."""
    out: list[str] = []
    for name, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            out.append(flag)
        elif isinstance(value, (list, tuple)):
            out += [flag, ",".join(str(v) for v in value)]
        else:
            out += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    return out


def command(args: Sequence[str]) -> list[str]:
    """The full command line: node, the command's JavaScript, ``args``."""
    return [find_node().path, cli_entry(), *args]


def environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra or {})
    env["DELTACELLS_STDERR"] = "json"
    return env


class StderrReader:
    """Reads the command's stderr on a thread: the error record kept, progress handed to
    ``on_progress``, other lines passed on to ``sys.stderr``."""

    def __init__(self, stream: IO[bytes], on_progress: Progress | None = None) -> None:
        self.error: dict[str, Any] | None = None
        self.text: list[str] = []
        self.on_end: Callable[[], None] | None = None
        """Called on the reading thread once stderr ends (the command has exited or is exiting)."""
        self._stream = stream
        self._on_progress = on_progress
        self._thread = threading.Thread(target=self._run, name="deltacells-stderr", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for raw in iter(self._stream.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            record = None
            if line.startswith("{"):
                with contextlib.suppress(ValueError):
                    record = json.loads(line)
            if isinstance(record, dict) and isinstance(record.get("error"), dict):
                self.error = record["error"]
            elif isinstance(record, dict) and isinstance(record.get("progress"), dict):
                if self._on_progress is not None:
                    with contextlib.suppress(Exception):
                        self._on_progress(record["progress"])
            elif line:
                self.text.append(line)
                with contextlib.suppress(Exception):
                    sys.stderr.write(line + "\n")
        self._stream.close()
        if self.on_end is not None:
            with contextlib.suppress(Exception):
                self.on_end()

    def join(self, timeout: float | None = 30) -> None:
        self._thread.join(timeout)

    def failure(self, code: int, what: str) -> DeltacellsError:
        """The exception for an exit with ``code``: the error record's, or one made of the text."""
        if self.error is not None:
            return error_from_record(self.error, code)
        if code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
            message = f"{what} was stopped by signal {name}"
        else:
            message = f"{what} exited with code {code}"
        if self.text:
            message += ": " + " ".join(self.text[-3:])
        return DeltacellsError(message, exit_code=code)


def stop(proc: subprocess.Popen[bytes], grace: float = 30) -> None:
    """Interrupt ``proc`` (as Ctrl-C would: it cleans up and exits) and wait; kill it past ``grace`` seconds."""
    if proc.poll() is None:
        with contextlib.suppress(OSError):
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_json(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    on_progress: Progress | None = None,
) -> Any:
    """Run ``deltacells ARGS --json`` to its end and return what it printed, parsed; raise its error."""
    argv = command([*args, "--json"])
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment(env))
    assert proc.stdout is not None and proc.stderr is not None
    reader = StderrReader(proc.stderr, on_progress)
    try:
        out = proc.stdout.read()
        code = proc.wait()
    except BaseException:
        stop(proc)  # Ctrl-C in Python: the command stops too, saying what it left
        raise
    finally:
        proc.stdout.close()
        reader.join()
    if code != 0:
        raise reader.failure(code, f"deltacells {args[0]}")
    text = out.decode("utf-8", errors="replace").strip()
    return json.loads(text) if text else None


def positional(values: Iterable[Any]) -> list[str]:
    return [os.fspath(v) if isinstance(v, os.PathLike) else str(v) for v in values]
