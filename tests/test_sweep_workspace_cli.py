"""``triage serve``: the address it prints opens the workspace, and loopback is recognised as such."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from triage.cli.app import app
from triage.core import labels as L
from triage.core.history import Dataset, History
from triage.loaders import write_long
from triage.workspace.app import check_host


@pytest.fixture
def data(tmp_path) -> Path:
    n = 40
    labels = np.full(n, L.NONE, dtype=object)
    labels[20] = L.NOT_TRIAGED
    h = History(
        "s",
        [f"c{i}" for i in range(n)],
        np.r_[np.ones(20), np.full(20, 2.0)],
        labels,
        timestamps=pd.date_range("2026-01-01", periods=n).to_numpy(),
    )
    return write_long(Dataset([h], source="<t>"), tmp_path / "data.csv")


def _printed_url(monkeypatch, data: Path, tmp_path: Path, *args: str) -> str:
    import uvicorn

    monkeypatch.setattr(
        uvicorn.Server, "run", lambda self, sockets=None: None
    )  # print the address, serve nothing
    r = CliRunner().invoke(
        app,
        [
            "serve",
            "--data",
            str(data),
            "--labels",
            str(tmp_path / "l.sqlite"),
            "--port",
            "0",
            *args,
        ],
    )
    assert r.exit_code == 0, r.output
    m = re.search(r"open (http\S+)", r.output)
    assert m, r.output
    return m.group(1)


def test_the_printed_address_carries_the_whole_token(monkeypatch, data, tmp_path):
    token = "s3cret#with&odd chars+="  # a shell-generated secret may hold any of these
    url = _printed_url(monkeypatch, data, tmp_path, "--token", token)
    assert parse_qs(urlsplit(url).query)["token"] == [token]


def test_an_ipv6_address_is_printed_in_brackets(monkeypatch, data, tmp_path):
    url = _printed_url(
        monkeypatch, data, tmp_path, "--host", "::", "--token", "a-long-enough-secret"
    )
    assert urlsplit(url).hostname == "::" and url.startswith("http://[::]:")


@pytest.mark.parametrize("host", ["127.0.0.2", "127.1.2.3", "::1", "localhost"])
def test_every_loopback_address_is_loopback(host):
    check_host(host, None)  # no token needed: nothing off this machine can connect


def _served_app(monkeypatch, data: Path, tmp_path: Path, *args: str):
    """The application ``triage serve`` would run with ``args``."""
    import uvicorn

    served = []
    monkeypatch.setattr(
        uvicorn.Server, "run", lambda self, sockets=None: served.append(self.config.app)
    )
    r = CliRunner().invoke(
        app,
        [
            "serve",
            "--data",
            str(data),
            "--labels",
            str(tmp_path / "l.sqlite"),
            "--port",
            "0",
            *args,
        ],
    )
    assert r.exit_code == 0, r.output
    return served[0]


def test_on_loopback_the_workspace_answers_only_to_loopback_names(monkeypatch, data, tmp_path):
    """DNS rebinding: a web page whose name now resolves to 127.0.0.1 must not read or decide (no token here)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    served = _served_app(monkeypatch, data, tmp_path)
    for base in ("http://localhost:8765", "http://127.0.0.1:8765", "http://[::1]:8765"):
        assert TestClient(served, base_url=base).get("/").status_code == 200, base
    r = TestClient(served, base_url="http://rebind.attacker.example:8765").get("/")
    assert r.status_code == 421 and "rebind.attacker.example" in r.text and "localhost" in r.text
    assert "csrf" not in r.text  # the page with the form token is not served


def test_with_a_token_any_name_may_reach_the_workspace(monkeypatch, data, tmp_path):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    served = _served_app(
        monkeypatch, data, tmp_path, "--host", "0.0.0.0", "--token", "a-long-enough-secret"
    )
    client = TestClient(served, base_url="http://perf-box.internal:8765")
    assert (
        client.get("/", headers={"Authorization": "Bearer a-long-enough-secret"}).status_code == 200
    )
