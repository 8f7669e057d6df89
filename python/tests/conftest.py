"""Fixtures of the package's tests: datasets converted from data/, the source AnnData read by
anndata (the independent reading every result is compared with), moto_server for s3://."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python" / "src"))

import anndata  # noqa: E402

import deltacells  # noqa: E402

#: Inputs of the tests, each converted once per session with the tile size given.
INPUTS = {
    "csr": ("data/anndata/csr.h5ad", 16),
    "pbmc": ("data/pbmc68k-counts/pbmc68k_counts.h5ad", 64),
    "encodings": ("data/anndata/obs-encodings.h5ad", 8),
}


@pytest.fixture(scope="session")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("datasets")
    out = {}
    for name, (path, tile_size) in INPUTS.items():
        out[name] = root / name
        deltacells.convert(REPO / path, out[name], tile_size=tile_size, level=3, progress=False)
    return out


@pytest.fixture(scope="session")
def sources() -> dict[str, anndata.AnnData]:
    """The inputs as anndata reads them."""
    return {name: anndata.read_h5ad(REPO / path) for name, (path, _) in INPUTS.items()}


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's own obs cache ($DELTACELLS_CACHE), so none sees another's files."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("DELTACELLS_CACHE", str(cache))
    return cache


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def moto() -> dict[str, str]:
    """moto_server on a free port with a bucket ``bucket``; the AWS settings that reach it."""
    server = Path(sys.executable).parent / "moto_server"
    if not server.exists():
        pytest.skip(f"moto_server is not installed beside {sys.executable} (the conformance environment has it)")
    port = free_port()
    proc = subprocess.Popen([str(server), "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(url, timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        import boto3

        settings = {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": url,
        }
        s3 = boto3.client(
            "s3",
            endpoint_url=url,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )
        s3.create_bucket(Bucket="bucket")
        yield settings
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No AWS credentials anywhere the command looks."""
    for var in list(os.environ):
        if var.startswith("AWS_"):
            monkeypatch.delenv(var)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
