"""Which way is better, from a walkthrough ("is it a regression or an improvement?").

github-action-benchmark rate units other than ``ops/s`` and ``MB/s`` (``MiB/s``,
``items/s``, ``events/sec``...) were read as times, so a throughput's drop was
called an improvement. A long file's ``direction`` column (Otava's 1 / -1,
or higher / lower) was not read, without a word: every series' direction unknown.
serve's regression filter on data that says no direction said only "No alert
matches these filters", beside big steps both ways.
"""

from __future__ import annotations

import json
import re
import warnings

import pytest

from triage.core.errors import InputError
from triage.loaders import load
from triage.workspace.alerts import build_alerts
from triage.workspace.app import Workspace, create_app
from triage.workspace.store import LabelsStore

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # Starlette 1.x suggests httpx2 for its test client
    from starlette.testclient import TestClient

GAB_UNITS = {"ops/s": True, "MiB/s": True, "items/s": True, "events/sec": True, "msg/s": True, "rows/s": True,
             "it/s": True, "KiB/s": True, "req/s": True, "rows per second": True, "it_per_s": True,
             "ns/op": False, "ns/iter": False, "B/op": False, "allocs/op": False, "ms": False, "MiB": False,
             "score": None, "": None}


def _data_js(units: dict[str, bool | None], tool: str = "go") -> str:
    runs = [{"commit": {"id": f"c{i}"}, "date": 1_709_287_200_000 + i * 3_600_000, "tool": tool,
             "benches": [{"name": f"b{k}", "value": value, "unit": unit} for k, unit in enumerate(units)]}
            for i, value in enumerate([1000.0, 1001.0, 800.0])]
    return "window.BENCHMARK_DATA = " + json.dumps({"entries": {"Bench": runs}}) + ";\n"


def test_gab_rate_units_are_higher_is_better_and_unknown_units_unknown(tmp_path):
    path = tmp_path / "data.js"
    path.write_text(_data_js(GAB_UNITS))
    dataset = load(path)
    for k, (unit, higher) in enumerate(GAB_UNITS.items()):
        history = dataset[f"Bench/b{k}"]
        assert history.higher_is_better is higher, unit
        # A 20 % drop: a rate's regression, a time's improvement, an unknown unit's change.
        kind = {True: "regression", False: "improvement", None: "change"}[higher]
        assert history.change_kind(1001.0, 800.0) == kind, unit


def test_gab_tools_say_the_direction_where_the_unit_does_not(tmp_path):
    path = tmp_path / "data.js"
    for tool, higher in (("customBiggerIsBetter", True), ("customSmallerIsBetter", False), ("pytest", True)):
        path.write_text(_data_js({"score": None}, tool=tool))
        assert load(path)["Bench/b0"].higher_is_better is higher, tool
    # The user's own word wins over the unit.
    path.write_text(_data_js({"ms": None}, tool="customBiggerIsBetter"))
    assert load(path)["Bench/b0"].higher_is_better is True


def _long_csv(path, header: str, cells: dict[str, list[str]]):
    lines = [f"series_id,commit,value,{header}"]
    for sid, said in cells.items():
        lines += [f"{sid},c{i},{100 + 20 * (i >= 2)},{cell}" for i, cell in enumerate(said)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_long_direction_column_is_read_as_otava_means_it(tmp_path):
    path = _long_csv(tmp_path / "d.csv", "direction", {"lat": ["-1"] * 4, "thr": ["1"] * 4, "up": ["higher", "", "Higher", ""],
                                                      "down": ["lower"] * 4, "unk": [""] * 4})
    dataset = load(path)
    assert {h.series_id: h.higher_is_better for h in dataset} == {
        "lat": False, "thr": True, "up": True, "down": False, "unk": None}
    assert dataset["lat"].change_kind(100, 120) == "regression" and dataset["thr"].change_kind(100, 120) == "improvement"


def test_long_direction_column_refuses_other_cells_and_a_disagreeing_higher_is_better(tmp_path):
    path = _long_csv(tmp_path / "d.csv", "direction", {"a": ["1", "1", "up", "1"]})
    with pytest.raises(InputError, match=r"d\.csv, row 4: direction 'up' is not 1 / -1"):
        load(path)
    path = _long_csv(tmp_path / "d.csv", "direction", {"a": ["1", "-1", "1", "1"]})
    with pytest.raises(InputError, match=r"row 3: the direction of series 'a' changes"):
        load(path)
    path = _long_csv(tmp_path / "d.csv", "direction,higher_is_better",
                     {"a": ["1,true", "1,", ",true", "-1,true"]})
    with pytest.raises(InputError, match=r"row 5: direction '-1' and higher_is_better 'true' disagree"):
        load(path)
    path = _long_csv(tmp_path / "d.csv", "lower_is_better,direction", {"a": ["true,-1", "true,lower", ",-1", "true,1"]})
    with pytest.raises(InputError, match=r"row 5: direction '1' and lower_is_better 'true' disagree"):
        load(path)


def _queue(tmp_path, directions: dict[str, str]):
    """serve's queue on two series that step up at c10 and down at c20, with these higher_is_better cells."""
    lines = ["series_id,commit,value,higher_is_better"]
    for sid, cell in directions.items():
        lines += [f"{sid},c{i:02d},{100 + 20 * (10 <= i < 20) + (i % 3) * 0.1},{cell}" for i in range(30)]
    data = _write(tmp_path / "data.csv", lines)
    cands = _write(tmp_path / "cands.csv", ["series_id,commit", *(f"{s},{c}" for s in directions for c in ("c10", "c20"))])
    dataset = load(data)
    ws = Workspace(dataset=dataset, alerts=build_alerts(dataset, cands), store=LabelsStore(tmp_path / "l.sqlite"))
    return TestClient(create_app(ws))


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))


def test_serve_regression_filter_on_data_without_a_direction_says_why_it_is_empty(tmp_path):
    client = _queue(tmp_path, {"lat": "", "thr": ""})
    assert len(re.findall(r'data-commit="', client.get("/", params={"direction": "change"}).text)) == 4
    for direction in ("regression", "improvement"):
        html = client.get("/", params={"direction": direction}).text
        assert not re.findall(r'data-commit="', html)
        text = _text(html)
        assert "No alert matches these filters" not in text
        assert ("No series says whether higher is better, so none of its changes can be called a regression or an "
                "improvement: see change (4 alerts)") in text
        assert 'href="/?direction=change"' in html
    html = client.get("/", params={"direction": "regression", "series": "lat"}).text
    assert "No series of the alerts these filters keep says whether higher is better" in _text(html)
    assert 'href="/?series=lat&amp;direction=change"' in html


def test_serve_regression_filter_counts_the_alerts_of_series_without_a_direction(tmp_path):
    client = _queue(tmp_path, {"lat": "false", "unk": ""})
    html = client.get("/", params={"direction": "regression"}).text
    assert re.findall(r'data-commit="([^"]+)"', html) == ["c10"]  # lat's rise
    assert ("2 more alerts are of series that do not say whether higher is better, so neither a regression nor an "
            "improvement: see change") in _text(html)
    # Where every series says it, or the filter is not regression / improvement, no word.
    (tmp_path / "all").mkdir()
    every = _queue(tmp_path / "all", {"lat": "false", "thr": "true"})
    for page, params in ((every, {"direction": "regression"}), (client, {"direction": "change"}), (client, {})):
        assert "whether higher is better" not in _text(page.get("/", params=params).text)


def test_a_parquet_direction_column_of_lists_is_refused_before_reading(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "h.parquet"
    pq.write_table(pa.table({"series_id": ["s", "s"], "commit": ["a", "b"], "value": [1.0, 2.0],
                             "direction": pa.array([[1], [1]])}), path)
    with pytest.raises(InputError, match="column 'direction' holds list"):
        load(path)


def test_a_direction_column_that_changes_within_a_series_is_named(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("series_id,commit,value,direction\na,c1,1,1\na,c2,2,-1\n")
    with pytest.raises(InputError, match=r"direction '-1' here: lower is better, higher on an earlier row"):
        load(path)
