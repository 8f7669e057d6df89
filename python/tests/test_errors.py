"""The command's tagged errors as Python exceptions of the same names, with message and hint."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest
from conftest import REPO

import deltacells
from deltacells import errors


def test_a_refusal_raises_the_exception_of_its_tag_with_message_object_and_exit_code(tmp_path: Path) -> None:
    target = tmp_path / "full"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    with pytest.raises(deltacells.TargetNotEmpty) as caught:
        deltacells.convert(REPO / "data/anndata/csr.h5ad", target, progress=False)
    err = caught.value
    assert isinstance(err, deltacells.DeltacellsError)
    assert isinstance(err, FileExistsError)
    assert err.tag == "TargetNotEmpty"
    assert err.exit_code == 1
    assert str(target) in (err.object or "") + err.message
    assert (target / "notes.txt").read_text() == "mine"


def test_the_hint_comes_with_the_message(tmp_path: Path) -> None:
    with pytest.raises(deltacells.MissingMatrix) as caught:
        deltacells.convert(REPO / "data/anndata/csr.h5ad", tmp_path / "out", layer="nope", progress=False)
    err = caught.value
    assert err.hint and re.search(r"--layer counts|--raw", err.hint)
    assert str(err) == f"{err.message}\nhint: {err.hint}"


def test_a_usage_mistake_is_a_usage_error_and_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(deltacells.Usage) as caught:
        deltacells.convert(REPO / "data/anndata/csr.h5ad", tmp_path / "x", tile_size="zero", progress=False)
    assert isinstance(caught.value, ValueError)
    assert caught.value.exit_code == 2
    assert "--tile-size" in caught.value.message


def test_a_missing_dataset_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(deltacells.DeltacellsError) as caught:
        deltacells.open(tmp_path / "nothing-here")
    assert caught.value.tag in ("NotFound", "NotAStore")


def test_every_tag_of_every_package_has_its_exception_class() -> None:
    tags: set[str] = set()
    for path in sorted((REPO / "packages").glob("*/src/errors.ts")):
        text = path.read_text()
        for union in re.findall(r"export type \w+Tag\s*=([^;]*);", text):
            code = re.sub(r"/\*.*?\*/|//[^\n]*", "", union, flags=re.S)  # comments may quote words
            tags |= set(re.findall(r'"(\w+)"', code))
    assert len(tags) > 40
    missing = sorted(t for t in tags if not isinstance(getattr(errors, t, None), type))
    assert missing == []
    for tag in tags:
        cls = getattr(deltacells, tag)
        assert issubclass(cls, deltacells.DeltacellsError) and cls.tag == tag


def test_an_unknown_tag_still_raises_a_family_exception_named_after_it() -> None:
    err = errors.error_from_record({"tag": "SomethingNew", "message": "m", "hint": "h"}, 1)
    assert type(err).__name__ == "SomethingNew" and isinstance(err, deltacells.DeltacellsError)
    assert isinstance(errors.error_from_record({"tag": "EACCES", "message": "denied"}), OSError)


def test_errors_pickle_with_their_fields() -> None:
    err = deltacells.NoCredentials("no credentials", hint="anon=True", object="s3://b/x", exit_code=1)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is deltacells.NoCredentials
    assert (back.message, back.hint, back.object, back.exit_code) == ("no credentials", "anon=True", "s3://b/x", 1)
