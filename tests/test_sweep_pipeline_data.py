"""``triage convert``, ``summary`` and ``plot`` on input a sweep found mishandled; one test per defect.

Each checks a refusal's message or a file written, so the commands run in-process through main()'s
boundary (``invoke``): a fresh interpreter per run cost 2-3 s of imports and checked nothing more.
"""

from __future__ import annotations

from helpers_cli import flat, invoke
from helpers_cli import step_history as _long_csv


def test_convert_refuses_to_write_over_its_commit_order_file(tmp_path):
    # Was: --out naming the --commit-order file replaced it with the CSV.
    data = _long_csv(tmp_path / "h.csv")
    order = tmp_path / "order.txt"
    order.write_text("".join(f"c{i}\n" for i in range(40)))
    before = order.read_bytes()
    code, text = invoke(["convert", "--data", data, "--out", order, "--commit-order", order])
    assert code == 2, text
    assert "--out" in text and "input" in text
    assert order.read_bytes() == before


def test_convert_and_plot_take_the_sort_their_error_advises(tmp_path):
    # Was: "sort the file or ask for sorting (--sort-timestamps)", an option
    # only summary had: convert and plot said "No such option".
    data = tmp_path / "h.csv"
    data.write_text(
        "series_id,commit,timestamp,value\n"
        "s,c1,2024-01-02T00:00:00Z,1\ns,c2,2024-01-03T00:00:00Z,2\ns,c3,2024-01-01T00:00:00Z,3\n"
    )
    out = tmp_path / "o.csv"
    code, text = invoke(["convert", "--data", data, "--out", out])
    assert code == 2 and "--sort-timestamps" in text
    code, text = invoke(["convert", "--data", data, "--out", out, "--sort-timestamps"])
    assert code == 0, text
    assert [line.split(",")[1] for line in out.read_text().splitlines()[1:]] == ["c3", "c1", "c2"]
    code, text = invoke(["plot", "--data", data, "--out", tmp_path / "p.png", "--sort-timestamps"])
    assert code == 0, text


def test_plot_names_the_series_nearest_an_unknown_one(tmp_path):
    # Was: "unknown series 'x' (the file has 3 series)": with real ids
    # (long asv names) nothing to go on.
    rows = "".join(
        f"{s},c{i},{1.0 + i % 2}\n"
        for s in ("rhai/bench_eval/gha", "rhai/bench_parse/gha", "otel/x")
        for i in range(5)
    )
    data = tmp_path / "h.csv"
    data.write_text("series_id,commit,value\n" + rows)
    code, text = invoke(["plot", "--data", data, "--out", tmp_path / "p.png", "--series", "rhai/bench_evel/gha"])
    assert code == 2
    assert "unknown series 'rhai/bench_evel/gha'" in flat(text) and "'rhai/bench_eval/gha'" in flat(text)
