"""Defects found in the second sweep of `triage report` (each test failed before its fix)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from triage.cli.app import app

runner = CliRunner()


def _history(path: Path) -> Path:
    rng = np.random.default_rng(3)
    rows = []
    for sid in ("web.latency", "db.query"):
        for i in range(60):
            rows.append((sid, f"c{i:03d}", f"2024-02-{1 + i // 3:02d}T00:{i:02d}:00Z",
                         10.0 + (4.0 if i >= 30 else 0.0) + rng.normal(0, 0.3)))
    pd.DataFrame(rows, columns=["series_id", "commit", "timestamp", "value"]).to_csv(path, index=False)
    return path


def _decisions(path: Path) -> Path:
    pd.DataFrame({"series_id": ["web.latency", "db.query"], "commit": ["c030", "c030"],
                  "p_true": [0.9, 0.2], "classification": ["true_positive", "false_positive"]}).to_csv(path, index=False)
    return path


def test_an_input_inside_the_report_directory_is_refused_not_deleted(tmp_path):
    data = _history(tmp_path / "history.csv")
    out = tmp_path / "report"
    first = runner.invoke(app, ["report", "--data", str(data), "--decisions", str(_decisions(tmp_path / "d.csv")),
                                "--out", str(out)])
    assert first.exit_code == 0, first.output
    # The next day's decisions saved beside the report they will refresh.
    kept = _decisions(out / "decisions.csv")
    before = kept.read_bytes()
    again = runner.invoke(app, ["report", "--data", str(data), "--decisions", str(kept), "--out", str(out)])
    assert again.exit_code != 0
    message = again.output + str(again.exception)  # main() prints an InputError as one line
    assert "decisions.csv" in message and "inside the report directory" in message
    assert kept.read_bytes() == before
    # The same for the data and for the candidates.
    moved = out / "history.csv"
    moved.write_bytes(data.read_bytes())
    third = runner.invoke(app, ["report", "--data", str(moved), "--decisions", str(tmp_path / "d.csv"),
                                "--out", str(out)])
    assert third.exit_code != 0 and moved.is_file()
    # --out naming the decisions file itself says so (not "inside the report directory").
    same = runner.invoke(app, ["report", "--data", str(data), "--decisions", str(kept), "--out", str(kept)])
    assert same.exit_code != 0 and "is also --out" in str(same.exception)
    assert kept.read_bytes() == before


def test_a_nearly_constant_series_names_its_axis_offset_in_the_label(tmp_path, monkeypatch):
    """Peak-memory series (emg3d-bench) sit at 1.2e8 +- a few bytes: matplotlib then labels
    the ticks 82..96 with "+1.234567e8" in the corner, where the report's legend covers it."""
    import matplotlib.pyplot as plt

    from triage.core.history import History
    from triage.report import plot_series

    seen = {}
    close = plt.close

    def spy(fig=None):
        fig.canvas.draw()
        ax = fig.axes[0]
        seen.update(offset=ax.yaxis.get_offset_text(), label=ax.get_ylabel())
        close(fig)

    monkeypatch.setattr(plt, "close", spy)
    values = 123456789 + np.random.default_rng(0).normal(0, 3, 60)
    plot_series(History("peakmem", [f"c{i}" for i in range(60)], values, None), tmp_path / "p.png")
    shown = seen["offset"].get_text() if seen["offset"].get_visible() else ""
    assert shown == ""  # not in the corner under the legend ...
    assert "+1.234567e8" in seen["label"]  # ... but in the axis label


def test_plot_files_differ_by_more_than_case(tmp_path):
    """'Query.Read' and 'query.read' got query.read.png and Query.Read.png: one file on macOS / Windows."""
    rng = np.random.default_rng(4)
    rows = [(sid, f"c{i:03d}", f"2024-02-01T00:{i:02d}:00Z", 10.0 + (i >= 30) + rng.normal(0, 0.2))
            for sid in ("Query.Read", "query.read") for i in range(60)]
    data = tmp_path / "h.csv"
    pd.DataFrame(rows, columns=["series_id", "commit", "timestamp", "value"]).to_csv(data, index=False)
    decisions = tmp_path / "d.csv"
    pd.DataFrame({"series_id": ["Query.Read", "query.read"], "commit": ["c030", "c030"], "p_true": [0.9, 0.8],
                  "classification": ["true_positive", "true_positive"]}).to_csv(decisions, index=False)
    out = tmp_path / "r"
    result = runner.invoke(app, ["report", "--data", str(data), "--decisions", str(decisions), "--out", str(out)])
    assert result.exit_code == 0, (result.output, result.exception)
    names = [p.name for p in (out / "plots").iterdir()]
    assert len(names) == 2 and len({n.lower() for n in names}) == 2, names


def test_a_series_plot_is_drawn_once_with_its_offset_in_the_label(tmp_path, monkeypatch):
    """The legend's height and the axis offset were read after two extra full draws of the figure
    (a third of a plot's time); they are measured without them, and the PNG's own draw is the only one."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from triage.core.history import History
    from triage.report import plot_series

    draws = []
    real = FigureCanvasAgg.draw
    monkeypatch.setattr(FigureCanvasAgg, "draw", lambda self: (draws.append(1), real(self))[1])
    values = 123456789 + np.random.default_rng(0).normal(0, 3, 60)
    out = plot_series(History("peakmem", [f"c{i}" for i in range(60)], values, None), tmp_path / "p.png")
    assert len(draws) == 1 and out.stat().st_size > 0
