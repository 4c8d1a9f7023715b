"""Which way is better, from a walkthrough ("is it a regression or an improvement?").

github-action-benchmark rate units other than ``ops/s`` and ``MB/s`` (``MiB/s``,
``items/s``, ``events/sec``...) were read as times, so a throughput's drop was
called an improvement. A long file's ``direction`` column (Otava's 1 / -1,
or higher / lower) was not read, without a word: every series' direction unknown.
"""

from __future__ import annotations

import json

import pytest

from triage.core.errors import InputError
from triage.loaders import load

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
