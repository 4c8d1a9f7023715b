"""The static HTML report (triage.report, `triage report`), checked without a browser."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image
from test_batch_label import trained_model
from typer.testing import CliRunner

from triage.batch_label import label_candidates, write_decisions
from triage.cli.app import app
from triage.cli.detectors import candidates_frame
from triage.core import labels
from triage.core.errors import InputError
from triage.core.history import Dataset, History
from triage.inference import load_classifier
from triage.loaders import load
from triage.report import build_report, read_decisions
from triage.synthetic import generate, preset_config

runner = CliRunner()
VOID = {"meta", "img", "br", "hr", "link", "input", "col", "area", "base", "wbr", "source"}


class PageParser(HTMLParser):
    """Collects what the tests look at and fails on mis-nested tags."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.images: list[str] = []
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.scripts = 0
        self.rows: list[list[str]] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._in_body_table = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "img":
            self.images.append(a.get("src", ""))
        if tag == "a" and "href" in a:
            self.links.append(a["href"])
        if tag == "script":
            self.scripts += 1
        if tag == "tbody":
            self._in_body_table = True
        if tag == "tr" and self._in_body_table:
            self._row = []
        if tag == "td" and self._row is not None:
            self._cell = []
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
            return
        self.stack.pop()
        if tag == "td" and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        if tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None
        if tag == "tbody":
            self._in_body_table = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def parse(page: Path) -> PageParser:
    parser = PageParser()
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    parser.feed(text)
    parser.close()
    assert not parser.errors, parser.errors[:5]
    assert parser.stack == [], parser.stack
    return parser


def check_images(page: Path, parser: PageParser) -> None:
    assert parser.images
    for src in parser.images:
        png = page.parent / src
        assert png.is_file(), src
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", src
        with Image.open(png) as im:
            im.verify()  # checks the chunks and their CRCs
        with Image.open(png) as im:
            assert im.format == "PNG" and im.size[0] >= 800 and im.size[1] >= 250


@pytest.fixture(scope="module")
def clf():
    return load_classifier(trained_model("rf"))


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    ds = generate(preset_config("small", n_series=12, not_triaged_share=0.4), seed=4)
    frame = ds.to_frame()
    # A series id that must be escaped in HTML and made safe as a file name.
    first = frame["series_id"].iloc[0]
    frame.loc[frame["series_id"] == first, "series_id"] = 'a<b>&"c/../d'
    path = tmp_path_factory.mktemp("syn") / "history.csv"
    frame.to_csv(path, index=False)
    return path


def test_report_page_images_and_table(synthetic, clf, tmp_path):
    dataset = load(synthetic)
    decisions = label_candidates(dataset, clf, which="all")
    dec_file = write_decisions(decisions, tmp_path / "decisions.csv")
    cand = candidates_frame(dataset, "perfherder")
    cand.to_csv(tmp_path / "cands.csv", index=False)
    out = tmp_path / "report"
    result = runner.invoke(app, ["report", "--data", str(synthetic), "--decisions", str(dec_file),
                                 "--candidates", str(tmp_path / "cands.csv"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    page = out / "index.html"
    parser = parse(page)
    assert parser.scripts == 0
    assert "<style>" in page.read_text()  # inline CSS, no external sheet
    check_images(page, parser)
    # One plot per series with a decision or a detector candidate.
    expected_series = set(decisions["series_id"]) | set(cand["series_id"])
    assert len(parser.images) == len(expected_series)
    assert all(src.startswith("plots/") and "/" not in src[len("plots/"):] for src in parser.images)
    # Every in-page link lands on an element.
    assert all(href[1:] in parser.ids for href in parser.links if href.startswith("#"))

    rows = parser.rows
    assert len(rows) == len(decisions)
    p_shown = [float(r[6]) for r in rows]
    assert p_shown == sorted(p_shown, reverse=True)  # most likely true alerts first
    top = decisions.sort_values("p_true", ascending=False, kind="stable").iloc[0]
    assert rows[0][1] == top["series_id"] and rows[0][2] == top["commit"]
    assert rows[0][7].startswith("true alert" if top["classification"] == labels.TRUE_POSITIVE else "false alert")
    differs = ((decisions["label"].isin(labels.TRIAGED))
               & ((decisions["label"] == labels.TRUE_POSITIVE) != (decisions["classification"] == labels.TRUE_POSITIVE)))
    assert sum(r[7].endswith("\u2260 human") for r in rows) == int(differs.sum())
    assert {r[1] for r in rows} == set(decisions["series_id"])  # the odd id came through escaped, intact
    assert 'a&lt;b&gt;&amp;&quot;c/../d' in page.read_text()
    n_true = int((decisions["classification"] == labels.TRUE_POSITIVE).sum())
    assert f"<b>{n_true}</b> likely true alerts" in page.read_text()


def test_report_is_replaced_whole_and_refuses_foreign_directories(synthetic, clf, tmp_path):
    dataset = load(synthetic)
    decisions = label_candidates(dataset, clf, which="untriaged", explain_top=0)
    frame = read_decisions(write_decisions(decisions, tmp_path / "d.csv"), dataset)
    out = tmp_path / "report"
    build_report(dataset, frame, out, max_plots=2)
    (out / "plots" / "stale.png").write_bytes(b"old")
    page = build_report(dataset, frame, out, max_plots=2)
    assert not (out / "plots" / "stale.png").exists()
    parser = parse(page)
    assert len(parser.images) == 2
    assert "not plotted" in page.read_text()
    assert all(href[1:] in parser.ids for href in parser.links if href.startswith("#"))
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    foreign = tmp_path / "precious"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("x")
    with pytest.raises(InputError, match="not a report directory"):
        build_report(dataset, frame, foreign)
    assert (foreign / "thesis.tex").read_text() == "x"


def test_mongodb_demo_report(shared_data, clf, tmp_path):
    data = shared_data / "mongodb_demo.csv"
    dataset = load(data)
    decisions = write_decisions(label_candidates(dataset, clf, which="all"), tmp_path / "d.csv")
    out = tmp_path / "r"
    result = runner.invoke(app, ["report", "--data", str(data), "--decisions", str(decisions), "--out", str(out)])
    assert result.exit_code == 0, result.output
    parser = parse(out / "index.html")
    check_images(out / "index.html", parser)
    assert sorted(int(r[3]) for r in parser.rows) == [72, 165, 267, 410, 432, 448]


def test_bad_decisions_file(synthetic, tmp_path):
    dataset = load(synthetic)
    sid = dataset.series_ids[1]
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"series_id": [sid, sid], "commit": [dataset[sid].commits[3], "nope"],
                  "p_true": [0.4, 0.5], "classification": ["false_positive"] * 2}).to_csv(bad, index=False)
    with pytest.raises(InputError) as info:
        read_decisions(bad, dataset)
    assert info.value.row == 3 and "commit 'nope' is not in series" in info.value.problem
    bad.write_text("series_id,commit,p_true,classification\n" f"{sid},{dataset[sid].commits[0]},1.7,true_positive\n")
    with pytest.raises(InputError, match="p_true '1.7' is not a probability"):
        read_decisions(bad, dataset)
    bad.write_text("series_id,p_true\nx,0.3\n")
    with pytest.raises(InputError, match="needs series_id, p_true, classification and commit or index"):
        read_decisions(bad, dataset)


def test_plot_marks_decisions_where_they_are(tmp_path):
    """A decision lands at its x position: the red dot sits mid-plot for a mid-series index."""
    from triage.core.history import History
    from triage.report import plot_series

    n = 200
    h = History("s", [f"c{k}" for k in range(n)], np.random.default_rng(0).normal(100, 1, n), None)
    png = plot_series(h, tmp_path / "p.png",
                      decisions=pd.DataFrame({"index": [n // 2], "p_true": [0.9], "classification": [labels.TRUE_POSITIVE]}))
    with Image.open(png) as im:
        rgb = np.asarray(im.convert("RGB")).astype(int)
    # matplotlib's tab:red is (214, 39, 40); the legend (also holding a red dot) is in the top rows.
    red = np.abs(rgb - np.array([214, 39, 40])).sum(axis=2) < 60
    red[: int(0.12 * rgb.shape[0])] = False
    cols = np.flatnonzero(red.any(axis=0))
    assert len(cols) > 0
    assert abs(np.median(cols) / rgb.shape[1] - 0.53) < 0.06


def test_report_from_detector_scores_shows_the_human_labels_of_the_data(synthetic, clf, tmp_path):
    from triage.candidate_files import CandidateTable
    from triage.scoring import score_candidates

    dataset = load(synthetic)
    h = max(dataset, key=lambda s: len(s.confirmed()))
    points = [int(h.confirmed()[0]), 1]
    scored = score_candidates(dataset, CandidateTable.from_points([h.series_id] * 2, points), clf)
    assert "label" not in scored.columns
    path = tmp_path / "scores.csv"
    scored.to_csv(path, index=False)
    frame = read_decisions(path, dataset)
    page = build_report(dataset, frame, tmp_path / "r")
    rows = {int(r[3]): r[5] for r in parse(page).rows}
    assert rows == {points[0]: labels.TRUE_POSITIVE, 1: h.labels[1] or "-"}


def test_the_step_column_says_regression_or_improvement_by_the_units_direction():
    from triage.report import step_text

    up = np.r_[np.full(10, 100.0), np.full(10, 120.0)]
    faster = History("ops", [str(i) for i in range(20)], up, None, higher_is_better=True)
    slower = History("time", [str(i) for i in range(20)], up, None, higher_is_better=False)
    unknown = History("x", [str(i) for i in range(20)], up, None)
    assert step_text(faster, 10) == "improvement +20.0%"
    assert step_text(slower, 10) == "regression +20.0%"
    assert step_text(unknown, 10) == "change +20.0%"
    assert step_text(slower, 0) == ""  # nothing before the first commit


def test_decisions_as_json_lines_are_read_too(tmp_path):
    dataset = Dataset([History("s", ["a", "b", "c"], [1.0, 1.0, 5.0], None)])
    path = tmp_path / "d.jsonl"
    path.write_text('{"series_id":"s","commit":"c","p_true":0.9,"classification":"true_positive"}\n')
    frame = read_decisions(path, dataset)
    assert frame["index"].tolist() == [2] and frame["p_true"].tolist() == [0.9]
