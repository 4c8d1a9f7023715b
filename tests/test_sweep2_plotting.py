"""Defects found in the second sweep of the plots (each test failed before its fix)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from PIL import Image
from typer.testing import CliRunner

from triage.cli.app import app

runner = CliRunner()


def test_a_series_id_with_dollar_signs_is_a_title_not_math_text(tmp_path):
    # JMH / shell-ish benchmark names can hold '$'; matplotlib would parse them as TeX.
    names = ["cost $\\frac{a$ run", "bench_$x_1$_sum"]
    rows = [(n, f"c{i:03d}", f"2024-01-01T00:00:{i:02d}Z", 10.0 + (i > 15)) for n in names for i in range(30)]
    data = tmp_path / "h.csv"
    pd.DataFrame(rows, columns=["series_id", "commit", "timestamp", "value"]).to_csv(data, index=False)
    for k, name in enumerate(names):
        png = tmp_path / f"p{k}.png"
        result = runner.invoke(app, ["plot", "--data", str(data), "--series", name, "--out", str(png)])
        assert result.exit_code == 0, (result.output, result.exception)
        with Image.open(Path(png)) as im:
            assert im.format == "PNG"


def test_the_title_is_drawn_as_given(tmp_path, monkeypatch):
    import matplotlib.axes

    from triage.core.history import History
    from triage.plotting import plot_history

    seen = {}
    original = matplotlib.axes.Axes.set_title

    def spy(self, label, *args, **kwargs):
        text = original(self, label, *args, **kwargs)
        seen["text"], seen["math"] = text.get_text(), text.get_parse_math()
        return text

    monkeypatch.setattr(matplotlib.axes.Axes, "set_title", spy)
    import numpy as np

    history = History("bench_$x_1$_sum", [f"c{i}" for i in range(10)], np.arange(10, dtype=float), None)
    plot_history(history, tmp_path / "p.png")
    assert seen == {"text": "bench_$x_1$_sum", "math": False}
