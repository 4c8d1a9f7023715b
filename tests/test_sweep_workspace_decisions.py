"""Decisions are neither lost nor duplicated: double submits, two tabs on one alert, undo twice.

Every form carries what its page showed (``seen``: the alert's current
decision id, 0 for none; the undo form the id it undoes), so the server can
tell a repeat of the same click from a decision made on a stale page.
"""

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


def _step(series_id: str, n: int = 80, at: int = 40) -> History:
    rng = np.random.default_rng(1)
    values = 100.0 + rng.normal(0, 1.0, n)
    values[at:] += 15.0
    labels = np.full(n, L.NONE, dtype=object)
    labels[at] = L.NOT_TRIAGED
    stamps = pd.date_range("2026-01-05", periods=n, freq="D").to_numpy()
    return History(series_id, [f"c{i:04d}" for i in range(n)], values, labels, timestamps=stamps)


@pytest.fixture
def ws(tmp_path) -> Workspace:
    dataset = Dataset([_step("suite/a"), _step("suite/b")], source="<test>")
    return Workspace(
        dataset=dataset,
        alerts=build_alerts(dataset),
        store=LabelsStore(tmp_path / "labels.sqlite"),
        sheriff="tester",
    )


@pytest.fixture
def client(ws) -> TestClient:
    return TestClient(create_app(ws))


def _form(client: TestClient, action: str, commit: str = "c0040") -> dict[str, str]:
    """The hidden fields of the queue's ``action`` form for ``commit``, as the browser would send them."""
    html = client.get("/").text
    row = re.search(
        r'<tr id="[^"]*"[^>]*data-series="suite/a" data-commit="' + commit + r'">(.*?)</tr>',
        html,
        re.S,
    )
    assert row
    form = re.search(
        r'<form method="post" action="' + action + r'"[^>]*>(.*?)</form>', row.group(1), re.S
    )
    assert form, f"no {action} form in the row"
    return dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form.group(1)))


def _post(client: TestClient, action: str, fields: dict[str, str], **extra: str):
    return client.post(action, data={**fields, **extra}, follow_redirects=False)


def test_a_double_submit_records_one_decision(client, ws):
    form = _form(client, "/decide")
    assert _post(client, "/decide", form, decision="true", who="ann").status_code == 303
    assert (
        _post(client, "/decide", form, decision="true", who="ann").status_code == 303
    )  # the same click again
    assert len(ws.store.history()) == 1


def test_undo_after_a_double_submit_goes_back_to_untriaged(client, ws):
    form = _form(client, "/decide")
    _post(client, "/decide", form, decision="true", who="ann")
    _post(client, "/decide", form, decision="true", who="ann")
    undo = _form(client, "/undo")
    assert _post(client, "/undo", undo, who="ann").status_code == 303
    assert ws.store.current() == {}


def test_a_decision_from_a_stale_tab_is_refused_not_silently_overwriting(client, ws):
    tab_a, tab_b = (
        _form(client, "/decide"),
        _form(client, "/decide"),
    )  # two tabs, both show 'untriaged'
    assert _post(client, "/decide", tab_a, decision="true", who="ann").status_code == 303
    r = _post(client, "/decide", tab_b, decision="false", who="bob")
    assert r.status_code == 409
    assert "decided meanwhile" in r.text and "true by ann" in r.text and "Traceback" not in r.text
    (current,) = ws.store.current().values()
    assert (current.label, current.who) == (L.TRUE_POSITIVE, "ann")
    # Reloaded, the page shows ann's decision, and bob may now change it on purpose.
    assert (
        _post(client, "/decide", _form(client, "/decide"), decision="false", who="bob").status_code
        == 303
    )
    (current,) = ws.store.current().values()
    assert (current.label, current.who) == (L.FALSE_POSITIVE, "bob")


def test_a_double_undo_undoes_one_decision(client, ws):
    _post(client, "/decide", _form(client, "/decide"), decision="false", who="ann")
    _post(client, "/decide", _form(client, "/decide"), decision="true", who="bob")
    undo = _form(client, "/undo")
    assert _post(client, "/undo", undo, who="bob").status_code == 303
    assert (
        _post(client, "/undo", undo, who="bob").status_code == 303
    )  # the same click again: nothing more undone
    (current,) = ws.store.current().values()
    assert (current.label, current.who) == (L.FALSE_POSITIVE, "ann")


def test_undo_from_a_stale_tab_is_refused(client, ws):
    _post(client, "/decide", _form(client, "/decide"), decision="false", who="ann")
    stale = _form(client, "/undo")  # shows ann's decision
    _post(client, "/decide", _form(client, "/decide"), decision="true", who="bob")
    r = _post(client, "/undo", stale, who="ann")
    assert r.status_code == 409 and "decided meanwhile" in r.text
    (current,) = ws.store.current().values()
    assert (
        current.who == "bob"
    )  # bob's newer decision was not undone by a page that never showed it


@pytest.mark.parametrize("field, value", [("seen", "abc"), ("seen", "-1"), ("decision_id", "x1")])
def test_a_malformed_page_state_is_a_clear_400(client, ws, field, value):
    action = "/undo" if field == "decision_id" else "/decide"
    if action == "/undo":
        _post(client, "/decide", _form(client, "/decide"), decision="false", who="ann")
    r = _post(client, action, {**_form(client, action), field: value}, decision="true")
    assert r.status_code == 400 and field in r.text


def test_the_conflict_page_links_back_to_the_page_the_sheriff_came_from(client, ws):
    """Reloading an error page that answered a POST would send the stale form again: link back instead."""
    tab_a, tab_b = _form(client, "/decide"), _form(client, "/decide")
    _post(client, "/decide", tab_a, decision="true", who="ann")
    r = _post(client, "/decide", tab_b, decision="false", who="bob", next="/series?id=suite%2Fa")
    assert r.status_code == 409
    assert "<h1>409 Conflict</h1>" in r.text
    assert '<a href="/series?id=suite%2Fa#a-suite%2Fa-c0040">back to the alert</a>' in r.text
    assert "Reload the page" not in r.text


def test_a_form_from_before_a_restart_links_back_instead_of_saying_reload(client, ws):
    form = {**_form(client, "/decide"), "csrf": "token-of-the-previous-server-run"}
    r = _post(client, "/decide", form, decision="true", next="/?status=untriaged")
    assert r.status_code == 403 and "form token" in r.text
    assert '<a href="/?status=untriaged">back to the page</a>' in r.text
    assert "reload" not in r.text.lower()
    assert len(ws.store.history()) == 0


def test_a_field_given_twice_with_different_values_is_a_400_and_records_nothing(client, ws):
    """decision=true&decision=false was recorded as the last one (a walkthrough, thirtieth session)."""
    from urllib.parse import urlencode

    form = _form(client, "/decide")
    body = urlencode([*form.items(), ("decision", "true"), ("decision", "false")])
    r = client.post("/decide", content=body, headers={"content-type": "application/x-www-form-urlencoded"},
                    follow_redirects=False)
    assert r.status_code == 400 and "&#39;decision&#39; is given twice with different values" in r.text, r.text
    assert ws.store.history() == []
    # The same value twice is one value.
    body = urlencode([*form.items(), ("decision", "true"), ("decision", "true")])
    r = client.post("/decide", content=body, headers={"content-type": "application/x-www-form-urlencoded"},
                    follow_redirects=False)
    assert r.status_code == 303 and len(ws.store.history()) == 1
