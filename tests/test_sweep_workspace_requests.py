"""Query strings a person types by hand: refused with a sentence naming the problem, never ignored."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

from triage.core import labels as L
from triage.core.history import Dataset, History
from triage.workspace.alerts import build_alerts
from triage.workspace.app import Workspace, create_app
from triage.workspace.store import LabelsStore

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # Starlette suggests httpx2 for its test client
    from starlette.testclient import TestClient


@pytest.fixture
def client(tmp_path) -> TestClient:
    n = 60
    values = np.r_[np.full(30, 100.0), np.full(30, 120.0)] + np.random.default_rng(0).normal(
        0, 1, n
    )
    labels = np.full(n, L.NONE, dtype=object)
    labels[30] = L.NOT_TRIAGED
    stamps = pd.date_range("2026-03-01", periods=n, freq="D").to_numpy()
    dataset = Dataset(
        [History("s", [f"c{i}" for i in range(n)], values, labels, timestamps=stamps)], source="<t>"
    )
    ws = Workspace(
        dataset=dataset, alerts=build_alerts(dataset), store=LabelsStore(tmp_path / "l.sqlite")
    )
    return TestClient(create_app(ws), raise_server_exceptions=False)


def _shown(html: str) -> int:
    return len(re.findall(r'<tr id="a-', html))


@pytest.mark.parametrize(
    "query, message",
    [
        (
            "since=nat",
            "since: 'nat' is not a date",
        ),  # pandas reads it as NaT: the filter was dropped
        ("until=NaT", "until: 'NaT' is not a date"),
        ("since=-1", "since: '-1' is not a date"),  # pandas: the year -1
        ("since=12/11/2026", "since: '12/11/2026' is not a date"),  # 11 December or 12 November?
        ("since=now", "since: 'now' is not a date"),
        # A day filter: a time would be widened to its whole day without a word.
        ("until=2026-03-30T23:00:00", "until: '2026-03-30T23:00:00' is not a date"),
    ],
)
def test_a_date_filter_that_is_no_date_is_refused(client, query, message):
    r = client.get("/?" + query)
    assert r.status_code == 400 and message.replace("'", "&#39;") in r.text


def test_iso_dates_still_filter(client):
    assert _shown(client.get("/?since=2026-03-31&until=2026-03-31").text) == 1
    assert _shown(client.get("/?since=2026-04-01").text) == 0
    assert _shown(client.get("/?until=2026-03-30").text) == 0


@pytest.mark.parametrize("url", ["/?series=a%00b", "/series?id=s%01", "/plot.png?id=%1b[2J"])
def test_control_characters_in_the_query_are_refused(client, url):
    r = client.get(url)
    assert r.status_code == 400 and "control character" in r.text
    assert "\x00" not in r.text and "\x1b" not in r.text


@pytest.mark.parametrize("url", ["/series", "/series?id=", "/plot.png"])
def test_a_series_page_without_an_id_says_so(client, url):
    r = client.get(url)
    assert r.status_code == 400 and "give the series" in r.text


@pytest.mark.parametrize(
    "method, url, status, sentence",
    [
        ("get", "/nowhere", 404, "no page at /nowhere"),
        ("get", "/static/../app.py", 404, "no page at /app.py"),
        ("get", "/decide", 405, "GET is not allowed on /decide"),
        ("delete", "/", 405, "DELETE is not allowed on /"),
    ],
)
def test_routing_errors_are_sentences(client, method, url, status, sentence):
    r = getattr(client, method)(url)
    assert r.status_code == status and sentence in r.text


def test_times_on_the_page_say_they_are_utc(client):
    """Sheriffs sit in several time zones: a bare 02:07 reads as their own clock."""
    html = client.get("/").text
    form = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', html))
    client.post("/decide", data={**form, "decision": "true", "who": "ann"})
    html = client.get("/").text
    assert "<th>date (UTC)</th>" in html
    assert re.search(r"true by ann, \d{4}-\d\d-\d\d \d\d:\d\d UTC", html)


def test_an_empty_queue_says_there_is_nothing_rather_than_blaming_the_filters(tmp_path):
    h = History("s", ["a", "b", "c"], np.array([1.0, 1.0, 1.0]), np.full(3, L.NONE, dtype=object))
    dataset = Dataset([h], source="<t>")
    ws = Workspace(
        dataset=dataset, alerts=build_alerts(dataset), store=LabelsStore(tmp_path / "l.sqlite")
    )
    html = TestClient(create_app(ws)).get("/").text
    assert "No alert matches these filters" not in html
    assert "No alerts to triage" in html and "--candidates" in html
