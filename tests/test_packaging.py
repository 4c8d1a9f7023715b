"""The installed import names: everything under ``triage``, nothing else at the top level."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[1]


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


#: Listed packages that hold data only (no __init__.py): the bundled models.
DATA_ONLY = {"triage.models"}


def test_every_package_in_the_checkout_is_listed_for_the_wheel():
    listed = set(_pyproject()["tool"]["setuptools"]["packages"])
    found = set(find_packages(str(ROOT), include=["triage", "triage.*"]))
    assert found | DATA_ONLY == listed


def test_the_bundled_models_are_package_data_of_triage_models():
    setuptools = _pyproject()["tool"]["setuptools"]
    assert setuptools["package-dir"]["triage.models"] == "models"
    assert "*/*" in setuptools["package-data"]["triage.models"]
    link = ROOT / "triage" / "models"
    assert link.is_symlink() and link.resolve() == (ROOT / "models").resolve()


def test_no_top_level_package_but_triage():
    assert {p.split(".")[0] for p in _pyproject()["tool"]["setuptools"]["packages"]} == {"triage"}


@pytest.mark.parametrize("pkg", ["features", "training"])
def test_the_design_folders_are_the_triage_subpackages(pkg):
    link = ROOT / "triage" / pkg
    assert link.is_symlink() and link.resolve() == (ROOT / pkg).resolve()
    assert _pyproject()["tool"]["setuptools"]["package-dir"][f"triage.{pkg}"] == pkg


@pytest.mark.parametrize("pkg", ["features", "training"])
def test_bare_top_level_import_is_refused(pkg, monkeypatch):
    import importlib
    import sys

    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.delitem(sys.modules, pkg, raising=False)
    with pytest.raises(ImportError, match=f"import triage.{pkg}"):
        importlib.import_module(pkg)
