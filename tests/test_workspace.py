"""The triage workspace through Starlette's test client: queue, decisions, safety, store, CLI."""

from __future__ import annotations

import re
import sqlite3
import threading
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from triage.core import labels as L
from triage.core.errors import InputError
from triage.core.history import Dataset, History
from triage.workspace.alerts import Alert, build_alerts, reason
from triage.workspace.app import Workspace, check_commit_url, check_host, create_app
from triage.workspace.store import LabelsStore, agreement_by_week, export_long, overlay

with warnings.catch_warnings():
    # Starlette 1.x suggests httpx2 for its test client; httpx still works.
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

MODEL = Path(__file__).resolve().parents[1] / "models" / "default-adaptive"
EVIL = "<script>alert('x')</script>"


def _step(series_id: str, n: int = 120, at: int = 60, rise: float = 0.12, seed: int = 0,
          label: str = L.NOT_TRIAGED) -> History:
    """A series of times (lower is better) at 100 (noise sd 1) that steps by ``rise`` at ``at`` and stays, with dates."""
    rng = np.random.default_rng(seed)
    values = 100.0 + rng.normal(0, 1.0, n)
    values[at:] += 100.0 * rise
    labels = np.full(n, L.NONE, dtype=object)
    labels[at] = label
    stamps = pd.date_range("2026-01-05", periods=n, freq="D").to_numpy()
    return History(series_id, [f"c{seed:02d}{i:04d}" for i in range(n)], values, labels, timestamps=stamps,
                   higher_is_better=False)


@pytest.fixture(scope="module")
def dataset() -> Dataset:
    from triage.synthetic import generate

    synth = generate("small", seed=3)
    steps = [_step(EVIL, seed=1), _step("suite/test/linux", rise=-0.2, seed=2, label=L.FALSE_POSITIVE)]
    return Dataset([*steps, *list(synth)[:12]], source="<test>")


@pytest.fixture(scope="module")
def classifier():
    from triage.inference import load_classifier

    return load_classifier(MODEL)


@pytest.fixture(scope="module")
def alerts(dataset, classifier) -> list[Alert]:
    return build_alerts(dataset, None, classifier)


@pytest.fixture
def ws(tmp_path, dataset, alerts) -> Workspace:
    store = LabelsStore(tmp_path / "labels.sqlite")
    return Workspace(dataset=dataset, alerts=alerts, store=store, model_name="default-adaptive",
                     commit_url="https://example.org/commit/{commit}", sheriff="tester")


@pytest.fixture
def client(ws) -> TestClient:
    return TestClient(create_app(ws))


def _decide(client, ws, alert, decision="true", note="", who="ann", csrf=None, next_="/"):
    form = {"csrf": ws.csrf if csrf is None else csrf, "series_id": alert.series_id, "commit": alert.commit,
            "decision": decision, "note": note, "who": who, "next": next_}
    return client.post("/decide", data=form, follow_redirects=False)


def _row(html: str, alert: Alert) -> str:
    """The queue row of ``alert`` (its <tr> ... </tr>)."""
    m = re.search(r'<tr id="[^"]*"[^>]*data-commit="' + re.escape(alert.commit) + r'">(.*?)</tr>', html, re.S)
    assert m, f"no row for {alert.commit}"
    return m.group(1)


# --------------------------------------------------------------------------- alerts and reasons


def test_reason_in_plain_words_with_direction():
    h = _step("s", rise=0.12, seed=4)
    why, pct, direction = reason(h, 60)
    assert direction == "regression"  # a time: lower is better, a rise is a regression
    assert 10 < pct < 14
    assert re.fullmatch(r"median rose 1\d(\.\d+)?% \(\d+\.\d noise sd\) and stayed up to the end of the history \(60 commits\)", why), why
    down = _step("s", rise=-0.12, seed=4)
    assert reason(down, 60)[2] == "improvement"


def test_higher_is_better_flips_the_direction():
    h = _step("ops", rise=0.12, seed=5)
    h.higher_is_better = True  # the field another module adds to History; read through getattr
    assert reason(h, 60)[2] == "improvement"


def test_a_spike_reads_as_one():
    h = _step("s", rise=0.0, seed=6)
    h.values[60] += 30.0
    assert "spike" in reason(h, 60)[0]


def test_alerts_carry_dates_scores_and_names(dataset, alerts):
    assert len(alerts) == sum(len(h.candidates()) for h in dataset)
    a = next(a for a in alerts if a.series_id == EVIL)
    assert a.date == pd.Timestamp("2026-03-06") and a.direction == "regression"
    assert 0.0 <= a.p_true <= 1.0 and a.model_call in L.TRIAGED


def test_perfherder_candidates_are_named_by_suite_test_platform(tmp_path, dataset):
    h = dataset["suite/test/linux"]
    path = tmp_path / "alerts.csv"
    pd.DataFrame({"signature_hash": ["suite/test/linux"], "revision": [h.commits[60]], "suite": ["tp6"],
                  "test": ["loadtime"], "machine_platform": ["linux64"]}).to_csv(path, index=False)
    (alert,) = build_alerts(dataset, path)
    assert alert.name == "tp6 / loadtime / linux64" and alert.detector == "perfherder"
    assert alert.p_true is None  # no model given


# --------------------------------------------------------------------------- pages


def test_queue_untriaged_first_then_by_p_true(client, ws):
    html = client.get("/").text
    commits = re.findall(r'data-commit="([^"]+)"', html)
    by_commit = {a.commit: a for a in ws.alerts}
    statuses = re.findall(r'<span class="badge st-(\w+)">', html)
    first_done = statuses.index(next(s for s in statuses if s != "untriaged"))
    assert all(s == "untriaged" for s in statuses[:first_done])
    assert all(s != "untriaged" for s in statuses[first_done:])
    p = [by_commit[c].p_true for c in commits[:first_done]]
    assert p == sorted(p, reverse=True)


def test_queue_row_shows_what_a_sheriff_needs(client, ws):
    a = next(a for a in ws.alerts if a.series_id == EVIL)
    row = _row(client.get("/").text, a)
    assert f'href="https://example.org/commit/{a.commit}"' in row
    assert "2026-03-06" in row and "regression" in row and f"{a.change_pct:+.1f}%" in row
    assert f"{a.p_true:.2f}" in row and "labelled in the data" in row and "median rose" in row


def test_filters(client, ws):
    def shown(**params):
        return set(re.findall(r'data-commit="([^"]+)"', client.get("/", params=params).text))

    imp = {a.commit for a in ws.alerts if a.direction == "improvement"}
    assert shown(direction="improvement") == imp
    assert shown(call="true") == {a.commit for a in ws.alerts if a.model_call == L.TRUE_POSITIVE}
    assert shown(status="false") == {a.commit for a in ws.alerts if a.data_label == L.FALSE_POSITIVE}
    assert shown(series="suite/test") == {ws.dataset["suite/test/linux"].commits[60]}
    assert shown(since="2026-03-01", until="2026-03-31") == {ws.dataset[EVIL].commits[60],
                                                           ws.dataset["suite/test/linux"].commits[60]}


def test_queue_pages(client, ws):
    html = client.get("/", params={"limit": 3, "direction": "change"}).text  # (the synthetic series say no direction)
    assert len(re.findall(r'data-commit="', html)) == 3
    assert 'href="/?direction=change&amp;limit=10000">show all</a>' in html


def test_series_page_and_plot(client, ws):
    a = next(a for a in ws.alerts if a.series_id == "suite/test/linux")
    page = client.get("/series", params={"id": a.series_id})
    assert page.status_code == 200 and 'src="/plot.png?id=suite%2Ftest%2Flinux"' in page.text
    png = client.get("/plot.png", params={"id": a.series_id})
    assert png.status_code == 200 and png.headers["content-type"] == "image/png"
    assert png.content[:8] == b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------- decisions


def test_decide_and_undo(client, ws):
    a = next(a for a in ws.alerts if a.data_label == L.NOT_TRIAGED)
    r = _decide(client, ws, a, "true", note="confirmed by bisect", next_="/?status=untriaged")
    assert r.status_code == 303 and r.headers["location"] == "/?status=untriaged"
    (d,) = ws.store.current().values()
    assert (d.series_id, d.commit, d.label, d.who, d.note) == (a.series_id, a.commit, L.TRUE_POSITIVE, "ann",
                                                              "confirmed by bisect")
    assert d.p_true == pytest.approx(a.p_true) and d.model_call == a.model_call and d.model == "default-adaptive"
    row = _row(client.get("/").text, a)
    assert 'badge st-true' in row and "true by ann" in row and "confirmed by bisect" in row
    assert client.post("/undo", data={"csrf": ws.csrf, "series_id": a.series_id, "commit": a.commit, "who": "bob"},
                       follow_redirects=False).status_code == 303
    assert ws.store.current() == {}
    (undone,) = ws.store.history()
    assert undone.undone_by == "bob" and undone.undone_at
    assert 'badge st-untriaged' in _row(client.get("/").text, a)
    # Nothing left to undo: a clear 409, not a silent success.
    again = client.post("/undo", data={"csrf": ws.csrf, "series_id": a.series_id, "commit": a.commit})
    assert again.status_code == 409 and "no decision to undo" in again.text


def test_unsure_stays_out_of_training_labels(client, ws):
    a = ws.alerts[0]
    _decide(client, ws, a, "unsure")
    assert 'badge st-unsure' in _row(client.get("/").text, a)
    merged, n = overlay(ws.dataset, ws.store)
    assert n == 1 and merged[a.series_id].labels[a.index] == L.UNDER_INVESTIGATION


def test_default_sheriff_when_the_page_sends_no_name(client, ws):
    _decide(client, ws, ws.alerts[0], "false", who="")
    assert next(iter(ws.store.current().values())).who == "tester"


# --------------------------------------------------------------------------- safety


def test_post_without_csrf_token_is_refused_and_stores_nothing(client, ws):
    for token in ("", "forged"):
        r = _decide(client, ws, ws.alerts[0], csrf=token)
        assert r.status_code == 403 and "form token" in r.text
    assert len(ws.store) == 0


def test_user_data_is_escaped(client, ws):
    a = next(a for a in ws.alerts if a.series_id == EVIL)
    _decide(client, ws, a, "true", note=EVIL, who=EVIL)
    for page in (client.get("/"), client.get("/series", params={"id": EVIL})):
        assert page.status_code == 200
        assert EVIL not in page.text and "<script>alert" not in page.text
        assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page.text
        assert "script-src 'self'" in page.headers["content-security-policy"]


@pytest.mark.parametrize(
    "method, url, kwargs, status, message",
    [
        ("get", "/series?id=nope", {}, 404, "no series"),
        ("get", "/plot.png?id=nope", {}, 404, "no series"),
        ("get", "/?since=yesterday-ish", {}, 400, "is not a date"),
        ("get", "/?status=maybe", {}, 400, "status must be one of"),
        ("get", "/?limit=-3", {}, 400, "limit must be"),
        ("get", "/nowhere", {}, 404, "Not Found"),
        ("get", "/decide", {}, 405, "Method Not Allowed"),
        ("post", "/decide", {"content": b"{}", "headers": {"content-type": "application/json"}}, 415, "urlencoded"),
        ("post", "/decide", {"content": b"x" * 200_000, "headers": {"content-type": "application/x-www-form-urlencoded"}}, 413, "larger than"),
    ],
)
def test_bad_requests_get_a_clear_4xx(client, method, url, kwargs, status, message):
    r = getattr(client, method)(url, **kwargs)
    assert r.status_code == status and message in r.text
    assert "Traceback" not in r.text


def test_bad_decision_fields(client, ws):
    a = ws.alerts[0]
    assert _decide(client, ws, a, "maybe").status_code == 400
    r = client.post("/decide", data={"csrf": ws.csrf, "series_id": a.series_id, "commit": "no-such-commit",
                                     "decision": "true"})
    assert r.status_code == 404 and "no alert at commit" in r.text
    assert _decide(client, ws, a, "true", note="n" * 3000).status_code == 400
    # An open redirect is not possible through `next`.
    assert _decide(client, ws, a, next_="//evil.example/").headers["location"] == "/"
    assert _decide(client, ws, a, next_="/series?id=x").headers["location"].startswith("/series?id=x#a-")
    assert len(ws.store) == 2


def test_unexpected_errors_show_no_traceback(ws, monkeypatch):
    client = TestClient(create_app(ws), raise_server_exceptions=False)
    monkeypatch.setattr(ws.store, "current", lambda: 1 / 0)
    r = client.get("/")
    assert r.status_code == 500 and "could not handle" in r.text and "ZeroDivision" not in r.text


def test_host_and_token_rules():
    check_host("127.0.0.1", None)
    with pytest.raises(ValueError, match="give --token"):
        check_host("0.0.0.0", None)
    with pytest.raises(ValueError, match="at least 12"):
        check_host("0.0.0.0", "short")
    check_host("0.0.0.0", "a-long-enough-secret")
    with pytest.raises(ValueError, match="commit-url"):
        check_commit_url("javascript:alert(1)//{commit}")


def test_token_is_required_when_set(ws):
    ws.token = "a-long-enough-secret"
    client = TestClient(create_app(ws))
    assert client.get("/").status_code == 401
    assert client.get("/", headers={"Authorization": "Bearer wrong-secret-123"}).status_code == 401
    assert client.get("/", headers={"Authorization": f"Bearer {ws.token}"}).status_code == 200
    r = client.get(f"/?token={ws.token}&status=true", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/?status=true"
    assert "httponly" in r.headers["set-cookie"].lower() and "samesite=strict" in r.headers["set-cookie"].lower()
    assert client.get("/").status_code == 200  # the cookie now


# --------------------------------------------------------------------------- concurrency


def test_two_sheriffs_at_once_lose_no_decision(ws):
    app = create_app(ws)
    per_sheriff = 25
    errors: list[BaseException] = []

    def sheriff(name: str) -> None:
        try:
            with TestClient(app) as c:
                for k in range(per_sheriff):
                    a = ws.alerts[k % len(ws.alerts)]
                    assert _decide(c, ws, a, "true" if k % 2 else "false", who=name).status_code == 303
        except BaseException as exc:  # surfaced below: a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=sheriff, args=(n,)) for n in ("ann", "bob")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    rows = ws.store.history()
    assert len(rows) == 2 * per_sheriff
    assert sorted(r.who for r in rows).count("ann") == per_sheriff


# --------------------------------------------------------------------------- the store


def test_store_refuses_what_is_not_a_store(tmp_path):
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(InputError, match="junk.sqlite"):
        LabelsStore(junk)
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).executescript("CREATE TABLE store_info (key TEXT PRIMARY KEY, value TEXT);"
                                         "INSERT INTO store_info VALUES ('format', 'something-else');")
    with pytest.raises(InputError, match="not a triage labels store"):
        LabelsStore(other)
    link = tmp_path / "link.sqlite"
    link.symlink_to(tmp_path / "target.sqlite")
    with pytest.raises(InputError, match="regular file"):
        LabelsStore(link)
    with pytest.raises(InputError, match="no such labels store"):
        LabelsStore(tmp_path / "missing.sqlite", create=False)


def test_a_damaged_labels_store_is_refused_with_its_recovery(tmp_path):
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    with pytest.raises(InputError, match=r"empty\.sqlite.*is empty \(0 bytes\).*move .* aside"):
        LabelsStore(empty)
    assert empty.stat().st_size == 0  # refused, not silently made a new store
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"SQLite format 3\x00" + b"\xff" * 8000)
    with pytest.raises(InputError, match="garbage.sqlite"):
        LabelsStore(garbage)
    dropped = tmp_path / "dropped.sqlite"
    store = LabelsStore(dropped)
    store.record("s", "c", "true", who="ann")
    store._con().close()  # the store's own open connection would make the check see it as in use
    db = sqlite3.connect(dropped, isolation_level=None)
    db.execute("DROP TABLE decisions")
    db.close()
    with pytest.raises(InputError, match="has no decisions table.*start again"):
        LabelsStore(dropped)
    malformed = tmp_path / "malformed.sqlite"
    store = LabelsStore(malformed)  # (another store object, its own connection)
    for i in range(200):
        store.record("s", f"c{i}", "true", who="ann", note="x" * 500)
    store._con().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store._con().close()
    with open(malformed, "r+b") as fh:
        fh.seek(4096)
        fh.write(b"\xff" * 8192)
    with pytest.raises(InputError, match="malformed.sqlite"):
        LabelsStore(malformed)


def test_store_uses_wal(tmp_path):
    LabelsStore(tmp_path / "l.sqlite").record("s", "c", "true", who="ann")
    assert sqlite3.connect(tmp_path / "l.sqlite").execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_overlay_and_export(tmp_path, dataset):
    store = LabelsStore(tmp_path / "l.sqlite")
    h = dataset["suite/test/linux"]
    store.record(h.series_id, h.commits[60], "true", who="ann")  # the data said false_positive
    store.record(h.series_id, h.commits[10], "false", who="ann")  # not a candidate in the data
    merged, n = overlay(dataset, store)
    assert n == 2
    assert merged[h.series_id].labels[60] == L.TRUE_POSITIVE and merged[h.series_id].labels[10] == L.FALSE_POSITIVE
    assert dataset[h.series_id].labels[60] == L.FALSE_POSITIVE  # the input is not modified
    long = export_long(store, dataset)
    assert list(long.columns[:5]) == ["series_id", "commit", "timestamp", "value", "label"]
    assert len(long) == dataset.n_commits()
    flat = export_long(store)
    assert set(flat["label"]) == {L.TRUE_POSITIVE, L.FALSE_POSITIVE} and len(flat) == 2
    store.record("no-such-series", "c", "true", who="ann")
    with pytest.raises(InputError, match=r"l\.sqlite, row 3: .*no-such-series"):
        overlay(dataset, store)


def test_agreement_by_week(tmp_path):
    store = LabelsStore(tmp_path / "l.sqlite")
    calls = [("true", L.TRUE_POSITIVE)] * 3 + [("false", L.TRUE_POSITIVE)] + [("true", L.FALSE_POSITIVE)] * 2 \
        + [("false", L.FALSE_POSITIVE)] * 4 + [("unsure", L.TRUE_POSITIVE)]
    for k, (decision, call) in enumerate(calls):
        store.record("s", f"c{k}", decision, who="ann", p_true=0.5, model_call=call, model="m1")
    store.record("s", "nomodel", "true", who="ann")  # no model call: left out
    (week,) = agreement_by_week(store).to_dict("records")
    assert (week["decisions"], week["tp"], week["fp"], week["fn"], week["tn"]) == (10, 3, 1, 2, 4)
    assert week["precision"] == pytest.approx(3 / 4) and week["recall"] == pytest.approx(3 / 5)
    assert week["model"] == "m1" and re.fullmatch(r"\d{4}-W\d\d", week["week"])


def test_agreement_page(client, ws):
    a = ws.alerts[0]
    _decide(client, ws, a, "true" if a.model_call == L.TRUE_POSITIVE else "false")
    html = client.get("/agreement").text
    assert "default-adaptive" in html and "1.00" in html


# --------------------------------------------------------------------------- the commands


def test_labels_commands(tmp_path, dataset):
    from typer.testing import CliRunner

    from triage.cli.app import app
    from triage.loaders import load, write_long

    data = write_long(dataset.subset(["suite/test/linux", EVIL]), tmp_path / "data.csv")
    store = LabelsStore(tmp_path / "l.sqlite")
    h = dataset["suite/test/linux"]
    store.record(h.series_id, h.commits[60], "true", who="ann", p_true=0.2, model_call=L.FALSE_POSITIVE, model="m")
    runner = CliRunner()
    r = runner.invoke(app, ["labels", "export", "--labels", str(tmp_path / "l.sqlite"), "--out", str(tmp_path / "d.csv")])
    assert r.exit_code == 0, r.output
    assert pd.read_csv(tmp_path / "d.csv")["label"].tolist() == [L.TRUE_POSITIVE]
    r = runner.invoke(app, ["labels", "export", "--labels", str(tmp_path / "l.sqlite"), "--data", str(data),
                            "--out", str(tmp_path / "long.csv")])
    assert r.exit_code == 0, r.output
    assert load(tmp_path / "long.csv")[h.series_id].labels[60] == L.TRUE_POSITIVE
    r = runner.invoke(app, ["labels", "agreement", "--labels", str(tmp_path / "l.sqlite")])
    # precision n/a: the model called nothing true; recall 0: it missed the one confirmed alert
    assert r.exit_code == 0 and "n/a" in r.output and "0.000" in r.output
    r = runner.invoke(app, ["labels", "agreement", "--labels", str(tmp_path / "missing.sqlite")])
    assert r.exit_code != 0 and isinstance(r.exception, InputError)


def test_serve_refuses_a_public_host_without_token(tmp_path):
    from typer.testing import CliRunner

    from triage.cli.app import app

    r = CliRunner().invoke(app, ["serve", "--data", str(tmp_path / "x.csv"), "--labels", str(tmp_path / "l.sqlite"),
                                 "--host", "0.0.0.0"])
    assert r.exit_code == 2 and "--token" in r.output
    assert not (tmp_path / "l.sqlite").exists()



def test_serve_with_bad_data_leaves_no_store_behind(tmp_path):
    from triage.cli.workspace import build_workspace

    with pytest.raises(InputError, match="no such file"):
        build_workspace(tmp_path / "missing.csv", tmp_path / "l.sqlite", None, None, commit_url=None,
                        sheriff="ann", token=None)
    assert not (tmp_path / "l.sqlite").exists()


def test_train_on_history_plus_decisions(tmp_path, dataset):
    from typer.testing import CliRunner

    from triage.cli.app import app
    from triage.loaders import write_long
    from triage.training.model_files import load_model

    data = write_long(dataset, tmp_path / "data.csv")
    store = LabelsStore(tmp_path / "l.sqlite")
    # Flip every triaged label of the data: a model trained with --labels must see the flipped ones.
    n = 0
    for h in dataset:
        for i in h.indices_with(L.TRIAGED):
            store.record(h.series_id, h.commits[i], "false" if h.labels[i] == L.TRUE_POSITIVE else "true", who="ann")
            n += 1
    args = ["train", "--data", str(data), "--no-track", "--test-size", "0", "--param", "n_estimators=20"]
    r = CliRunner().invoke(app, [*args, "--labels", str(tmp_path / "l.sqlite"), "--out", str(tmp_path / "m")])
    assert r.exit_code == 0, r.output
    assert f"{n:,} sheriff decisions" in r.output
    pos = sum(int((h.labels == L.FALSE_POSITIVE).sum()) for h in dataset)  # false alerts became true ones
    assert load_model(tmp_path / "m").n_train_["positives"] == pos


def test_a_chunked_body_is_refused_after_the_limit_not_after_the_whole_body(ws):
    """No Content-Length to refuse up front: the app stops reading at the limit (no unbounded buffering)."""
    import asyncio

    from triage.workspace.app import MAX_BODY

    app = create_app(ws)
    read = 0
    sent: list[dict] = []

    async def receive() -> dict:
        nonlocal read
        read += 1
        if read > 10_000:  # the whole of a 10 MB body
            return {"type": "http.request", "body": b"", "more_body": False}
        return {"type": "http.request", "body": b"x" * 1024, "more_body": True}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/decide", "raw_path": b"/decide", "query_string": b"", "root_path": "",
             "headers": [(b"host", b"testserver"), (b"content-type", b"application/x-www-form-urlencoded"),
                         (b"transfer-encoding", b"chunked")],
             "client": ("127.0.0.1", 1), "server": ("testserver", 80)}
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    assert start["status"] == 413
    assert read <= MAX_BODY // 1024 + 2


@pytest.mark.parametrize(("note", "message"), [("%ff%fe", "not UTF-8"), ("a%00b", "control character")])
def test_a_note_that_is_not_text_is_refused(client, ws, note, message):
    a = ws.alerts[0]
    body = (f"csrf={ws.csrf}&series_id={a.series_id}&commit={a.commit}&decision=true&note={note}&who=ann&next=/")
    before = len(ws.store)
    r = client.post("/decide", content=body.encode(), headers={"content-type": "application/x-www-form-urlencoded"},
                    follow_redirects=False)
    assert r.status_code == 400 and message in r.text
    assert len(ws.store) == before


def test_a_row_edited_outside_the_workspace_is_named_not_used(ws, tmp_path):
    """(thirty-first session's walkthrough) `sqlite3 labels.sqlite "update decisions set label='bogus'"`:
    `labels export` wrote the row and `train --labels` trained on it without a word. Reading the store
    now names the row; the workspace answers 503 naming it, not a 500."""
    import sqlite3

    from helpers_cli import flat, invoke

    a = ws.alerts[0]
    ws.store.record(a.series_id, a.commit, "true", who="ann")
    ws.store.record(a.series_id, a.commit, "false", who="ann")
    with sqlite3.connect(ws.store.path) as con:
        con.execute("UPDATE decisions SET label = 'bogus' WHERE id = 2")
    code, text = invoke(["labels", "export", "--labels", ws.store.path, "--out", tmp_path / "ex.csv"])
    assert code == 2 and "row 2: label 'bogus' is none of" in flat(text), text
    assert not (tmp_path / "ex.csv").exists()
    r = TestClient(create_app(ws), raise_server_exceptions=False).get("/")
    assert r.status_code == 503 and "label &#39;bogus&#39; is none of" in r.text
