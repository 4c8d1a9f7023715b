"""Walkthrough s16: a sheriff reviewing real alerts in the web workspace (`triage serve`).

Defects found (what a user did, what went wrong):

1. Started `triage serve --data B --labels store.sqlite` on a store whose decisions
   were all made on another data set (A): the server started without a word, the
   queue showed every alert untriaged and the agreement page counted the other data
   set's decisions, so a sheriff on the wrong store could not tell why the record
   was empty. Now `serve` prints a note naming the store, how many decided alerts
   are on series not in this data and one such series (the decisions are kept).
2. Marked as false an alert the model called true, then opened /agreement: the
   week's recall (no alert the sheriffs confirmed) read "nan" on the page, where
   `triage labels agreement` prints "n/a". Now the page says "n/a" too.
3. Ran `triage labels export --labels store.sqlite --out - > decisions.csv` (and with
   --data): the summary line "N decisions written to -" went to stdout after the
   CSV, so the piped file ended in a line that is not a row. Now the summary goes
   to stderr when the CSV goes to stdout, as `triage candidates --out -` does.
4. The same summary line said "written to -"; `triage label` / `score` now say
   "written to standard output", and so does `labels export`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from triage.cli.app import app
from triage.workspace.store import LabelsStore

REAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "real" / "histories.csv.gz"


@pytest.fixture(scope="module")
def real_series() -> dict[str, pd.DataFrame]:
    if not REAL.exists():
        pytest.skip(f"real histories not found at {REAL} (../shared/data/real is absent)")
    frame = pd.read_csv(REAL, nrows=20_000)
    frame = frame[frame["series_id"].str.startswith(("django-asv", "rhai", "otel-java"))]
    groups = {sid: g for sid, g in frame.groupby("series_id", sort=False)}
    if len(groups) < 3:
        pytest.skip("fewer than 3 real series in the first rows of histories.csv.gz")
    return dict(list(groups.items())[:3])


def _write(tmp_path: Path, name: str, parts: list[pd.DataFrame]) -> tuple[Path, Path]:
    """A long data file and a candidates file with one alert at the middle commit of each series."""
    data = tmp_path / f"{name}.csv"
    pd.concat(parts).to_csv(data, index=False)
    rows = []
    for g in parts:
        commits = list(dict.fromkeys(g["commit"]))
        i = len(commits) // 2
        rows.append({"series_id": g["series_id"].iloc[0], "commit": commits[i], "index": i,
                     "detector": "pelt", "score": 5.0})
    cands = tmp_path / f"{name}_cands.csv"
    pd.DataFrame(rows).to_csv(cands, index=False)
    return data, cands


def _serve(monkeypatch, data: Path, cands: Path, store: Path, served: list | None = None):
    import uvicorn

    def run(self, sockets=None):  # print, serve nothing; keep the application
        if served is not None:
            served.append(self.config.app)

    monkeypatch.setattr(uvicorn.Server, "run", run)
    return CliRunner().invoke(app, ["serve", "--data", str(data), "--candidates", str(cands),
                                    "--labels", str(store), "--port", "0"])


def test_a_store_from_another_data_set_is_named_at_start(monkeypatch, tmp_path, real_series):
    sids = list(real_series)
    data_a, cands_a = _write(tmp_path, "a", [real_series[sids[0]], real_series[sids[1]]])
    data_b, cands_b = _write(tmp_path, "b", [real_series[sids[2]]])
    store = tmp_path / "store.sqlite"
    s = LabelsStore(store)
    for sid in sids[:2]:
        commits = list(dict.fromkeys(real_series[sid]["commit"]))
        s.record(sid, commits[len(commits) // 2], "true", who="ann", note="", p_true=None, model_call=None,
                 model=None)
    s.close()

    r = _serve(monkeypatch, data_b, cands_b, store)
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert "2 of the 2 decided alerts in" in out and "not in this data" in out, out
    assert sids[0][:60] in out or sids[1][:60] in out, out
    assert len(LabelsStore(store)) == 2  # kept, not touched

    # The store of this very data set: no note.
    r = _serve(monkeypatch, data_a, cands_a, store)
    assert r.exit_code == 0, r.output
    assert "not in this data" not in r.output, r.output
    assert re.search(r"open http", r.output)


def test_agreement_page_says_n_a_where_the_cli_does(monkeypatch, tmp_path, real_series):
    import warnings

    from triage.core import labels as L

    sid = next(iter(real_series))
    data, cands = _write(tmp_path, "a", [real_series[sid]])
    commit = pd.read_csv(cands)["commit"].iloc[0]
    store = tmp_path / "store.sqlite"
    s = LabelsStore(store)
    # The model called it true, the sheriff said false: precision 0, recall undefined (nothing confirmed).
    s.record(sid, commit, "false", who="ann", p_true=0.9, model_call=L.TRUE_POSITIVE, model="m")
    s.close()
    cli = CliRunner().invoke(app, ["labels", "agreement", "--labels", str(store)])
    assert cli.exit_code == 0 and "n/a" in cli.output, cli.output

    served: list = []
    r = _serve(monkeypatch, data, cands, store, served)
    assert r.exit_code == 0, r.output
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from starlette.testclient import TestClient
    page = TestClient(served[0], base_url="http://127.0.0.1").get("/agreement")
    assert page.status_code == 200
    cells = re.findall(r'<td class="num">([^<]*)</td>', page.text)
    assert cells[-3:] == ["0.00", "n/a", "0.00"], cells
    assert "nan" not in cells


@pytest.mark.parametrize("with_data", [False, True])
def test_labels_export_to_stdout_is_only_csv(tmp_path, real_series, with_data):
    import io

    sids = list(real_series)[:2]
    data, cands = _write(tmp_path, "a", [real_series[sid] for sid in sids])
    store = tmp_path / "store.sqlite"
    s = LabelsStore(store)
    for sid, commit, word in zip(sids, pd.read_csv(cands)["commit"], ["true", "false"], strict=True):
        s.record(sid, commit, word, who="ann", note="n\u00e9 \u2603")
    s.close()
    args = ["labels", "export", "--labels", str(store), "--out", "-"] + (["--data", str(data)] if with_data else [])
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    frame = pd.read_csv(io.StringIO(r.stdout), dtype=str, keep_default_na=False)
    assert "written to" not in r.stdout, r.stdout[-300:]
    assert "written to standard output" in " ".join(r.stderr.split()), r.stderr
    if with_data:
        assert len(frame) == sum(len(real_series[sid]) for sid in sids)
        assert set(frame["series_id"]) == set(sids)
    else:
        assert list(frame["series_id"]) == sids and list(frame["label"]) == ["true_positive", "false_positive"]
