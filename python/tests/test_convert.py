"""deltacells.convert: the command's options as keywords, its summary, its progress through tqdm."""

from __future__ import annotations

from pathlib import Path

import anndata
import numpy as np
import pytest
from conftest import REPO

import deltacells


def test_convert_returns_the_summary_and_the_dataset_holds_the_inputs_counts(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    summary = deltacells.convert(REPO / "data/anndata/csr.h5ad", out, tile_size=16, progress=False)
    source = anndata.read_h5ad(REPO / "data/anndata/csr.h5ad")
    assert (summary["n_cells"], summary["n_genes"]) == source.shape
    assert summary["n_tiles"] == 4
    assert summary["has_obs"] is True
    adata = deltacells.open(out).to_anndata()
    assert (adata.X != source.X).nnz == 0


def test_options_become_the_commands_flags(tmp_path: Path) -> None:
    summary = deltacells.convert(
        [REPO / "data/anndata/csr.h5ad"], tmp_path / "layer", layer="counts", obs=False, chunks=2, progress=False
    )
    assert summary["matrix_path"] == "layers/counts"
    assert summary["has_obs"] is False
    store = deltacells.convert(tmp_path / "layer", tmp_path / "store.zarr", format="sporadik", axes=(0,), progress=False)
    assert (store["n_cells"], store["n_genes"]) == (57, 41)


def test_progress_true_draws_a_tqdm_bar_per_pass_to_every_cell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tqdm")
    deltacells.convert(REPO / "data/anndata/csr.h5ad", tmp_path / "ds", tile_size=16, progress=True)
    err = capsys.readouterr().err
    assert "pass 1" in err and "pass 2" in err, err
    assert "57/57" in err, err


def test_a_converted_dataset_can_be_replaced_with_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    deltacells.convert(REPO / "data/anndata/csr.h5ad", out, progress=False)
    with pytest.raises(deltacells.TargetNotEmpty):
        deltacells.convert(REPO / "data/pbmc68k-counts/pbmc68k_counts.h5ad", out, progress=False)
    deltacells.convert(REPO / "data/pbmc68k-counts/pbmc68k_counts.h5ad", out, overwrite=True, progress=False)
    assert deltacells.open(out).shape == (700, 765)
    assert np.all(deltacells.open(out).var_names == anndata.read_h5ad(REPO / "data/pbmc68k-counts/pbmc68k_counts.h5ad").var_names)


def test_a_plain_mtx_takes_its_names_as_keywords_and_the_summary_says_what_is_unnamed_or_not_stored(tmp_path: Path) -> None:
    mtx = REPO / "data/seurat-pbmc-small/pbmc_small_counts.mtx"
    bare = deltacells.convert(mtx, tmp_path / "bare", progress=False)
    assert bare["unnamed"] == ["genes", "cells"]
    genes = tmp_path / "genes.txt"
    genes.write_text("".join(f"GENE{j}\n" for j in range(230)))
    barcodes = tmp_path / "barcodes.txt"
    barcodes.write_text("".join(f"CELL{i}\n" for i in range(80)))
    named = deltacells.convert(mtx, tmp_path / "named", genes=genes, barcodes=barcodes, progress=False)
    assert named["unnamed"] == []
    adata = deltacells.open(tmp_path / "named").to_anndata()
    assert list(adata.var_names) == [f"GENE{j}" for j in range(230)]
    assert list(adata.obs_names) == [f"CELL{i}" for i in range(80)]
    layer = deltacells.convert(REPO / "data/anndata/csr.h5ad", tmp_path / "layer", layer="counts", progress=False)
    assert [(p["part"], p.get("flag")) for p in layer["not_stored"]] == [("X", None), ("raw/X", "--raw")]


def test_sporadik_writes_the_rows_in_embedding_order_unless_sporadik_rows_is_false(tmp_path: Path) -> None:
    pbmc = REPO / "data/pbmc68k-counts/pbmc68k_counts.h5ad"
    rows = deltacells.convert(pbmc, tmp_path / "rows", sporadik=True, threads=1, progress=False)
    assert rows["sporadik_rows"]["embedding"] == ["X_umap_0", "X_umap_1"]
    assert (tmp_path / "rows/sporadik-rows/order.npy").exists()
    plain = deltacells.convert(pbmc, tmp_path / "plain", sporadik=True, sporadik_rows=False, threads=1, progress=False)
    assert "sporadik_rows" not in plain
    assert not (tmp_path / "plain/sporadik-rows").exists()
