"""Walkthrough s17: awkward benchmark names (separators, control characters, unicode, markup, long ids) end to end.

Defects found (what a user did, what went wrong, what happens now):

1. Served (``triage serve``) a history whose series ids hold a tab or a line break (a
   quoted CSV cell; every reader keeps them). The queue listed the alerts and linked
   each to ``/series?id=<id>``, but that page and its plot answered "400 Bad Request:
   'id' holds a control character": the series could not be opened, and deciding on
   it sent the sheriff back to that refusal. Now a query value may hold a tab, LF or
   CR (a name still may not; other control characters are still refused) and the
   page and plot open.
2. Decided such an alert with the page's form in a browser: a browser sends a line
   break of a hidden field as CR LF, and the HTML parser reads a CR in an attribute as
   LF, so the series id came back changed and the decision was refused ("no alert at
   commit ..."). Now the forms also carry the id and the commit percent-encoded
   (``series_id_q``, ``commit_q``), which the server reads first; they come back byte
   for byte.
3. Scored (``triage score --candidates``) the candidates ``triage candidates`` wrote for
   series or commits named ``NaN``, ``None`` or ``null`` (ids that look like missing
   values; the data readers keep them as names): "row 5: series_id is missing", exit 2,
   for a file triage itself wrote, and a commit so named was taken as absent (placed by
   its index alone). The same in Otava and Perfherder candidate files. Now such a cell
   is a name; only an empty cell (or a JSON null) is missing.
4. Read JMH results (``triage summary --data 3f2a9c1.json``) of one benchmark run with
   ``{"codec": "a", "size": "1"}`` and with ``{"codec": "a,size=1"}`` (a ``@Param`` value
   holding a comma): both were named ``parse[codec=a,size=1]`` and the file was refused
   with "the same benchmark, parameters and mode as row 1", which they are not (across
   files they would have been one series). Now a parameter key or value holding ``,``,
   ``=``, ``"``, ``[`` or ``]`` is written JSON-quoted (``parse[codec="a,size=1"]``);
   other names are unchanged.
5. Read a github-action-benchmark ``data.js`` with suites ``A`` (bench ``x/1``) and
   ``A/x`` (bench ``1``): both are series ``A/x/1``, and their values were averaged as
   re-runs of one benchmark without a word (one series, where there are two). Now the
   file is refused naming both suites and benches; so is a suite with benches ``x``
   and ``x `` (one series id once stripped).
6. Opened the queue holding series ``a-b`` with an alert at commit ``c`` and series ``a``
   with one at ``b-c``: both rows had the id ``a-a-b-c`` (two elements of one id; after
   deciding, the page went back to the first of them). Now a ``-`` inside a series id or
   commit is percent-encoded in the row's id, and each row's id is its own.
7. Read a Google Benchmark file holding ``BM_x`` and ``BM_x `` (a trailing space, a
   name built from a format string): both became series ``BM_x`` and their repetitions
   were averaged into one value without a word. Now the stripped name is the one name,
   and the second benchmark is refused as "repetition 0 again" naming its row.
8. The same with JMH results: benchmarks ``org.B.x`` and ``org.B.x `` were averaged
   into one series. Now the second is refused as "the same benchmark, parameters and
   mode as row 1", as two entries of one name are.
9. Opened the workspace's series page of a benchmark with a long id (parametrised JMH
   names run to hundreds of characters; here 5,000): the plot's title was one line
   centred on a figure 960 pixels wide, both ends cut off, so the plot did not say
   which series it was. Now the title is broken into lines as ``triage plot`` breaks
   it (a very long one keeps its head and tail around an ellipsis).
10. Read an Otava CSV with a ``branch`` column whose cell is empty on some rows (results
    of the default branch): those rows became a series ``lat@`` (a branch named ""), and
    Otava's change of that metric (no branch) could not be placed: "unknown series
    'lat'". Now rows with no branch are the metric's own series ``lat``; a change on
    branch ``main`` is looked up in ``lat@main`` first (it went to ``lat`` once both
    existed: "commit 'c40' is not in series 'lat'").
11. Filtered the workspace queue by series ``café`` (typed: é is one code point, NFC)
    where the data holds ``café`` in both forms (one written ``cafe`` + a combining
    accent, NFD, as macOS file names are): only the NFC series was listed, though both
    read the same. Now the filter compares both sides in NFC, case-folded.
"""

from __future__ import annotations

import html
import re
import warnings
from urllib.parse import quote

import numpy as np
import pandas as pd
import pytest

from triage.core import labels as L
from triage.core.history import Dataset, History
from triage.workspace.alerts import build_alerts
from triage.workspace.app import Workspace, create_app
from triage.workspace.store import LabelsStore

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

AWKWARD = ["tab\there", "line\nbreak", "cr\rhere", "crlf\r\nhere", "<script>alert(1)</script>", "café",
           "cafe\u0301", "zero\u200bwidth", "a#b?c=d&e", "%2F..%2F", "x" * 5000]


def _step(sid: str, seed: int) -> History:
    rng = np.random.default_rng(seed)
    values = 100.0 + rng.normal(0, 1.0, 80)
    values[40:] += 15.0
    labels = np.full(80, L.NONE, dtype=object)
    labels[40] = L.NOT_TRIAGED
    return History(sid, [f"c{i}" for i in range(80)], values, labels,
                   timestamps=pd.date_range("2026-01-05", periods=80, freq="D").to_numpy())


@pytest.fixture
def served(tmp_path):
    ds = Dataset([_step(s, i) for i, s in enumerate(AWKWARD)], source="<test>")
    ws = Workspace(dataset=ds, alerts=build_alerts(ds), store=LabelsStore(tmp_path / "labels.sqlite"))
    return ws, TestClient(create_app(ws))


@pytest.mark.parametrize("sid", AWKWARD)
def test_every_series_page_and_plot_opens(served, sid):
    ws, client = served
    page = client.get("/series?id=" + quote(sid, safe=""))
    assert page.status_code == 200, page.text[-300:]
    assert "<script>alert" not in page.text
    assert client.get("/plot.png?id=" + quote(sid, safe="")).status_code == 200


def test_control_characters_other_than_line_breaks_are_still_refused(served):
    _, client = served
    assert client.get("/series?id=a%00b").status_code == 400
    assert client.get("/?ser%0Aies=x").status_code == 400


def _browser_form(page: str, sid: str) -> dict[str, str]:
    """The decide form of ``sid``'s first alert as a browser submits it: the HTML parser reads CR
    (and CR LF) as LF, and the urlencoded form sends every line break as CR LF."""
    forms = re.findall(r'<form method="post" action="/decide".*?</form>', page, flags=re.S)
    assert forms
    fields = {}
    for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', forms[0]):
        value = html.unescape(value.replace("\r\n", "\n").replace("\r", "\n"))
        fields[name] = value.replace("\n", "\r\n")
    fields["decision"] = "true"
    return fields


@pytest.mark.parametrize("sid", ["line\nbreak", "cr\rhere", "crlf\r\nhere", "tab\there", "cafe\u0301"])
def test_deciding_through_the_page_form_records_the_right_series(served, sid):
    ws, client = served
    page = client.get("/series?id=" + quote(sid, safe=""))
    assert page.status_code == 200
    r = client.post("/decide", data=_browser_form(page.text, sid), follow_redirects=False)
    assert r.status_code == 303, r.text[-300:]
    assert [key[0] for key in ws.store.current()] == [sid]


def test_candidates_of_series_and_commits_named_like_missing_values_are_scored(tmp_path):
    from helpers_cli import invoke

    names = ["007", "7", "NaN", "None", "null", "true"]
    rows = []
    for k, sid in enumerate(names):
        commits = [f"c{i}" for i in range(60)]
        commits[30] = names[(k + 2) % len(names)]  # the step's commit is an awkward word too
        rows += [f"{sid},{c},{1.0 + 0.5 * (i >= 30) + 0.01 * (i % 3)}" for i, c in enumerate(commits)]
    data = tmp_path / "data.csv"
    data.write_text("series_id,commit,value\n" + "\n".join(rows) + "\n")
    cands, scored = tmp_path / "cands.csv", tmp_path / "scored.csv"
    code, out = invoke(["candidates", "--data", data, "--detector", "perfherder", "--out", cands])
    assert code == 0, out
    code, out = invoke(["score", "--data", data, "--candidates", cands, "--out", scored])
    assert code == 0, out
    got = pd.read_csv(scored, dtype=str, keep_default_na=False)
    assert sorted(zip(got["series_id"], got["commit"], strict=True)) == sorted(
        (sid, names[(k + 2) % len(names)]) for k, sid in enumerate(names))


def test_otava_and_perfherder_candidates_keep_commits_named_like_missing_values(tmp_path):
    from triage.candidate_files import read_candidates

    otava = tmp_path / "otava.csv"
    otava.write_text("metric,commit,forward_change_percent\nNaN,null,5\nthroughput,None,7\n")
    table = read_candidates(otava)
    assert table.commits == ["null", "None"] and table.keys[0] == ("NaN",)
    ph = tmp_path / "ph.csv"
    ph.write_text("signature_hash,revision\nabc,NaN\n")
    assert read_candidates(ph).commits == ["NaN"]


def test_jmh_parameters_holding_separators_name_their_own_series(tmp_path):
    import json

    from triage.readers.jmh import read_jmh

    def entry(params: dict, base: float) -> dict:
        return {"benchmark": "org.Bench.parse", "mode": "thrpt", "params": params,
                "primaryMetric": {"scoreUnit": "ops/s", "rawData": [[base, base + 1, base + 2]]}}

    path = tmp_path / "007.json"
    path.write_text(json.dumps([entry({"size": "1", "codec": "a"}, 1000), entry({"codec": "a,size=1"}, 2000),
                                entry({"k": "[x]"}, 3000)]))
    frame = read_jmh(path)
    assert sorted(frame["series_id"].unique()) == [
        'org.Bench.parse[codec="a,size=1"]', "org.Bench.parse[codec=a,size=1]", 'org.Bench.parse[k="[x]"]']


def test_data_js_suites_and_benches_that_make_one_series_id_are_refused(tmp_path):
    from helpers_cli import flat, invoke

    def run(value: float, name: str) -> dict:
        return {"commit": {"id": "007"}, "date": 1700000000000, "tool": "cargo",
                "benches": [{"name": name, "value": value, "unit": "ns/iter"}]}

    import json

    path = tmp_path / "data.js"
    path.write_text("window.BENCHMARK_DATA = " + json.dumps(
        {"entries": {"A": [run(10, "x/1")], "A/x": [run(20, "1")], "B": [run(5, "y")]}}))
    code, out = invoke(["summary", "--data", path])
    assert code == 2, out
    assert "'A/x/1' is also bench 'x/1' of suite 'A'" in flat(out), out
    path.write_text("window.BENCHMARK_DATA = " + json.dumps({"entries": {"A": [run(10, "x"), run(20, "x ")]}}))
    code, out = invoke(["summary", "--data", path])
    assert code == 2 and "'A/x ' is also bench 'x' of suite 'A'" in flat(out), out


def test_every_alert_row_has_its_own_id(tmp_path):
    def at(sid: str, commit: str) -> History:
        h = _step(sid, 0)
        commits = list(h.commits)
        commits[40] = commit
        return History(sid, commits, h.values, h.labels, timestamps=h.timestamps)

    ds = Dataset([at("a-b", "c"), at("a", "b-c")], source="<test>")
    ws = Workspace(dataset=ds, alerts=build_alerts(ds), store=LabelsStore(tmp_path / "labels.sqlite"))
    page = TestClient(create_app(ws)).get("/")
    ids = re.findall(r'<tr id="([^"]+)"', page.text)
    assert len(ids) == 2 and len(set(ids)) == 2, ids


def test_gbench_names_that_differ_by_white_space_are_not_averaged(tmp_path):
    import json

    from helpers_cli import flat, invoke

    def bench(name: str, value: float) -> dict:
        return {"name": name, "run_name": name, "run_type": "iteration", "repetition_index": 0,
                "real_time": value, "time_unit": "ns"}

    path = tmp_path / "007.json"
    path.write_text(json.dumps({"context": {}, "benchmarks": [bench("BM_x", 10), bench("BM_x ", 99)]}))
    code, out = invoke(["convert", "--data", path, "--out", tmp_path / "out.csv"])
    assert code == 2, out
    assert "row 2: BM_x: repetition 0 again" in flat(out), out


def test_jmh_names_that_differ_by_white_space_are_not_averaged(tmp_path):
    import json

    from helpers_cli import flat, invoke

    def entry(name: str, value: float) -> dict:
        return {"benchmark": name, "mode": "avgt", "primaryMetric": {"scoreUnit": "ns/op", "rawData": [[value] * 3]}}

    path = tmp_path / "007.json"
    path.write_text(json.dumps([entry("org.B.x", 10), entry("org.B.x ", 99)]))
    code, out = invoke(["convert", "--data", path, "--out", tmp_path / "out.csv"])
    assert code == 2, out
    assert "row 2: org.B.x: the same benchmark, parameters and mode as row 1" in flat(out), out


@pytest.mark.parametrize("sid", ["org.acme.Bench.parse[" + ",".join(f"p{i}=v{i}" for i in range(40)) + "]", "x" * 5000])
def test_workspace_plot_title_of_a_long_id_fits_the_figure(sid):
    from triage.workspace.plot import series_figure

    fig = series_figure(_step(sid, 0), [(40, "untriaged", None, None)], title=sid)
    title = fig.axes[0].title
    box = title.get_window_extent(renderer=fig.canvas.get_renderer())
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width, (box, fig.bbox)
    shown = title.get_text().replace("\n", "")
    assert shown[:20] == sid[:20] and shown[-20:] == sid[-20:]


def test_otava_rows_without_a_branch_are_the_metric_s_own_series(tmp_path):
    from helpers_cli import invoke

    lines = ["time,commit,branch,lat"]
    for i in range(60):
        stamp = pd.Timestamp("2024-01-01") + pd.Timedelta(minutes=i)
        lines.append(f"{stamp.isoformat()},c{i},{'main' if i % 2 == 0 else ''},{10 + 10 * (i >= 30) + 0.1 * (i % 3)}")
    data = tmp_path / "otava.csv"
    data.write_text("\n".join(lines) + "\n")
    cands = tmp_path / "changes.csv"
    cands.write_text("metric,commit,branch,forward_change_percent\nlat,c31,,100\nlat,c30,main,100\n")
    out = tmp_path / "scored.csv"
    code, text = invoke(["score", "--data", data, "--candidates", cands, "--out", out])
    assert code == 0, text
    got = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert got["series_id"].tolist() == ["lat", "lat@main"]


def test_queue_series_filter_finds_both_unicode_forms_of_a_name(served):
    _, client = served
    for typed in ("caf\u00e9", "cafe\u0301", "CAF\u00c9"):
        page = client.get("/?series=" + quote(typed, safe=""))
        assert page.status_code == 200
        rows = re.findall(r'<tr id="a-', page.text)
        assert len(rows) == 2, (typed, len(rows))
