"""deltacells.open: shape, var, obs and to_anndata, each against anndata reading the input."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO

import deltacells


@pytest.mark.parametrize("name", ["csr", "pbmc", "encodings"])
def test_open_gives_the_inputs_shape(datasets, sources, name) -> None:
    ds = deltacells.open(datasets[name])
    assert ds.shape == sources[name].shape
    assert (ds.n_cells, ds.n_genes) == sources[name].shape
    assert ds.nnz == sources[name].X.nnz or ds.nnz > 0
    assert repr(ds).startswith("<deltacells.Dataset")


@pytest.mark.parametrize("name", ["csr", "pbmc", "encodings"])
def test_var_is_the_inputs_gene_table_in_its_order(datasets, sources, name) -> None:
    ds = deltacells.open(datasets[name])
    pd.testing.assert_frame_equal(ds.var, sources[name].var)
    assert list(ds.var_names) == list(sources[name].var_names)


@pytest.mark.parametrize("name", ["csr", "pbmc", "encodings"])
def test_obs_is_the_inputs_cell_table_with_its_dtypes(datasets, sources, name) -> None:
    ds = deltacells.open(datasets[name])
    expected = sources[name].obs
    got = ds.obs()
    pd.testing.assert_frame_equal(got[list(expected.columns)], expected)
    # the obsm embeddings kept at conversion are obs columns too (X_umap_0, ...)
    for key, k in ds.info["metadata"].get("obs_embeddings", {}).items():
        values = np.asarray(sources[name].obsm[key], dtype=np.float32)
        np.testing.assert_array_equal(got[[f"{key}_{j}" for j in range(k)]].to_numpy(), values)


def test_obs_of_chosen_columns_in_their_order(datasets, sources) -> None:
    got = deltacells.open(datasets["pbmc"]).obs(["louvain", "bulk_labels"])
    assert list(got.columns) == ["louvain", "bulk_labels"]
    pd.testing.assert_frame_equal(got, sources["pbmc"].obs[["louvain", "bulk_labels"]])
    one = deltacells.open(datasets["pbmc"]).obs("phase")
    assert list(one.columns) == ["phase"]


def test_obs_shares_the_typescript_sides_cache_both_ways(datasets, tmp_path) -> None:
    ds_dir = tmp_path / "ds"
    subprocess.run(["cp", "-r", str(datasets["csr"]), str(ds_dir)], check=True)
    cache = tmp_path / "shared-cache"
    ds = deltacells.open(ds_dir)
    first = ds.obs(["cell_type"], cache_dir=cache)
    fingerprint = ds.info.get("obs_fingerprint") or next(p.name for p in cache.iterdir())
    cached = cache / fingerprint / "obs" / "cell_type.arrow"
    assert cached.is_file()
    # The command (the TypeScript side) filling the cache for another column ...
    node = deltacells.find_node().path
    from deltacells._node import cli_entry

    out = subprocess.run(
        [node, cli_entry(), "obs", str(ds_dir), "--columns", "batch", "--cache-dir", str(cache)],
        capture_output=True, text=True, check=True,
    )
    assert out.stdout.startswith("batch")
    # ... then no shard to read: both columns come from the cache alone.
    for shard in (ds_dir / "obs").glob("*.parquet"):
        shard.unlink()
    again = deltacells.open(ds_dir).obs(["cell_type", "batch"], cache_dir=cache)
    pd.testing.assert_series_equal(again["cell_type"], first["cell_type"])
    assert (cache / fingerprint / "obs" / "batch.arrow").is_file()
    out = subprocess.run(
        [node, cli_entry(), "obs", str(ds_dir), "--columns", "cell_type", "--cells", "0:3", "--cache-dir", str(cache)],
        capture_output=True, text=True, check=True,
    )
    assert out.stdout.splitlines()[1] == str(first["cell_type"].iloc[0])


def test_a_dataset_naming_no_obs_index_keeps_every_column_and_numbers_its_cells(datasets, sources, tmp_path) -> None:
    # as another implementation writes the manifest: none of deltacells' obs_* metadata
    ds_dir = tmp_path / "foreign"
    subprocess.run(["cp", "-r", str(datasets["csr"]), str(ds_dir)], check=True)
    manifest = json.loads((ds_dir / "manifest.json").read_text())
    manifest["metadata"] = {"source": "elsewhere"}
    (ds_dir / "manifest.json").write_text(json.dumps(manifest))
    src = sources["csr"].obs
    ds = deltacells.open(ds_dir)
    obs = ds.obs()
    assert list(obs.index) == [str(i) for i in range(len(src))]
    assert obs.index.name is None
    assert obs.columns[0] == "barcode", "the column that was the index stays a column"
    assert list(obs["barcode"]) == list(src.index)
    assert list(obs["cell_type"].astype(object)) == list(src["cell_type"].astype(object))
    adata = ds.to_anndata(cells=slice(3, 6))
    assert list(adata.obs_names) == ["3", "4", "5"]
    assert list(adata.obs["barcode"]) == list(src.index[3:6])


def test_obs_of_a_dataset_without_a_cell_table_is_not_found_not_a_usage_mistake(tmp_path) -> None:
    plain = tmp_path / "plain"
    deltacells.convert(REPO / "data/seurat-pbmc-small/pbmc_small_counts.mtx", plain, level=1, progress=False)
    with pytest.raises(deltacells.NotFound) as caught:
        deltacells.open(plain).obs()
    assert isinstance(caught.value, FileNotFoundError)
    assert "has no obs" in caught.value.message
    assert "obs=False" in caught.value.hint


def test_obs_goes_to_deltacells_cache_by_default(datasets, private_cache) -> None:
    deltacells.open(datasets["csr"]).obs(["score"])
    assert list(private_cache.glob("*/obs/score.arrow"))


def test_to_anndata_equals_the_input(datasets, sources) -> None:
    for name in ("csr", "pbmc", "encodings"):
        ds = deltacells.open(datasets[name])
        adata = ds.to_anndata()
        src = sources[name]
        assert adata.shape == src.shape
        assert (adata.X != src.X).nnz == 0
        pd.testing.assert_frame_equal(adata.var, src.var)
        pd.testing.assert_frame_equal(adata.obs, src.obs)
        kept = ds.info["metadata"].get("obs_embeddings", {})
        assert sorted(adata.obsm) == sorted(kept)
        for key in kept:
            np.testing.assert_array_equal(adata.obsm[key], np.asarray(src.obsm[key], dtype=np.float32))


@pytest.mark.parametrize(
    "cells",
    [slice(10, 40), range(5, 600, 1), slice(None, None, 7), [650, 3, 3, 17, 64], np.arange(700) % 3 == 0, [-1, -700]],
    ids=["slice", "range", "stepped", "list", "mask", "negative"],
)
def test_to_anndata_of_chosen_cells_equals_the_inputs_rows(datasets, sources, cells) -> None:
    src = sources["pbmc"]
    adata = deltacells.open(datasets["pbmc"]).to_anndata(cells=cells)
    rows = np.arange(src.n_obs)[cells]
    assert adata.shape == (len(rows), src.n_vars)
    assert (adata.X != src.X[rows]).nnz == 0
    # the rows of the input's obs, categoricals with all their categories (codes as in obs())
    pd.testing.assert_frame_equal(adata.obs, src.obs.iloc[rows])
    np.testing.assert_array_equal(adata.obsm["X_umap"], src.obsm["X_umap"][rows].astype(np.float32))


def test_to_anndata_of_chosen_genes_and_obs_columns(datasets, sources) -> None:
    src = sources["pbmc"]
    ds = deltacells.open(datasets["pbmc"])
    genes = list(src.var_names[[700, 3, 42]])
    adata = ds.to_anndata(cells=slice(0, 100), genes=genes, obs=["louvain"])
    assert list(adata.var_names) == genes
    assert (adata.X != src[:100, genes].X).nnz == 0
    pd.testing.assert_frame_equal(adata.var, src.var.loc[genes])
    assert list(adata.obs.columns) == ["louvain"]
    by_position = ds.to_anndata(cells=slice(0, 100), genes=[700, 3, 42], obs=False)
    assert (by_position.X != adata.X).nnz == 0
    assert list(by_position.obs.columns) == []
    assert list(by_position.obs_names) == list(src.obs_names[:100])
    with pytest.raises(KeyError):
        ds.to_anndata(cells=slice(0, 2), genes=["NOT_A_GENE"])
    with pytest.raises(IndexError):
        ds.to_anndata(cells=[700])


def test_an_s3_dataset_reads_as_the_folder_does(datasets, sources, moto, monkeypatch, tmp_path) -> None:
    for var, value in moto.items():
        monkeypatch.setenv(var, value)
    url = "s3://bucket/pbmc"
    deltacells.convert(REPO / "data/pbmc68k-counts/pbmc68k_counts.h5ad", url, tile_size=64, progress=False)
    ds = deltacells.open(url)
    assert ds.shape == (700, 765)
    pd.testing.assert_frame_equal(ds.var, sources["pbmc"].var)
    pd.testing.assert_frame_equal(ds.obs(["bulk_labels"]), sources["pbmc"].obs[["bulk_labels"]])
    assert (ds.to_anndata(cells=slice(100, 200)).X != sources["pbmc"][100:200].X).nnz == 0


def test_s3_credentials_can_be_given_as_options_and_none_at_all_is_refused_with_a_hint(moto, no_aws) -> None:
    opts = {"key": moto["AWS_ACCESS_KEY_ID"], "secret": moto["AWS_SECRET_ACCESS_KEY"], "region": "us-east-1", "endpoint_url": moto["AWS_ENDPOINT_URL"]}
    deltacells.convert(REPO / "data/anndata/csr.h5ad", "s3://bucket/creds", progress=False, **opts)
    assert deltacells.open("s3://bucket/creds", **opts).n_cells == 57
    with pytest.raises(deltacells.NoCredentials) as caught:
        deltacells.open("s3://bucket/creds", endpoint_url=moto["AWS_ENDPOINT_URL"], region="us-east-1")
    assert "anon=True" in (caught.value.hint or ""), caught.value.hint
    with pytest.raises(TypeError, match="unknown storage option"):
        deltacells.open("s3://bucket/creds", anonymous=True)


def test_anon_reads_a_public_bucket_unsigned(moto, no_aws, monkeypatch) -> None:
    import boto3

    s3 = boto3.client("s3", endpoint_url=moto["AWS_ENDPOINT_URL"], aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1")
    deltacells.convert(
        REPO / "data/anndata/csr.h5ad", "s3://bucket/public/csr", progress=False,
        key="testing", secret="testing", region="us-east-1", endpoint_url=moto["AWS_ENDPOINT_URL"],
    )
    policy = '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::bucket/public/*"]}]}'
    s3.put_bucket_policy(Bucket="bucket", Policy=policy)
    ds = deltacells.open("s3://bucket/public/csr", anon=True, endpoint_url=moto["AWS_ENDPOINT_URL"], region="us-east-1")
    assert ds.n_cells == 57
    assert len(ds.obs(["cell_type"])) == 57


def test_an_https_dataset_reads_through_a_server(datasets, sources) -> None:
    node = deltacells.find_node().path
    from deltacells._node import cli_entry

    proc = subprocess.Popen(
        [node, cli_entry(), "serve", str(datasets["pbmc"].parent), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        line = proc.stdout.readline()
        import re

        base = re.search(r"https?://[\d.:]+", line)
        assert base, line
        ds = deltacells.open(f"{base[0]}/pbmc/")
        assert ds.shape == (700, 765)
        pd.testing.assert_frame_equal(ds.obs(["phase"]), sources["pbmc"].obs[["phase"]])
        assert (ds.to_anndata(cells=slice(0, 50)).X != sources["pbmc"][:50].X).nnz == 0
    finally:
        proc.terminate()
        proc.wait(timeout=30)
