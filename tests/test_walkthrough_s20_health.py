"""Code health (walkthrough s20): the layers ARCHITECTURE.md declares, dead private code, docstring fixes.

* Layers. ``tests/test_import_graph.py`` holds the static graph (every import,
  wherever it stands) against a hard-coded table. Here the same graph is held to
  the order ARCHITECTURE.md itself draws, that table is checked to be no looser
  than the drawing, every module is checked to sit in the drawing's layer the
  Parts table gives it, and every module is actually imported: a fresh
  interpreter per layer, which must load no module of a layer above it.
* Dead code. A private module-level function, class or constant that no code of
  the repository names is dead (``workspace.app._sort_key`` was).
* Docstrings corrected in this walkthrough, each held to the behaviour it now
  states.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import test_import_graph as graph_rules

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "ARCHITECTURE.md"
LAYER_NAMES = (
    "triage.cli",
    "product",
    "triage.training",
    "triage.features",
    "triage.detectors",
    "triage.core",
)


# -- ARCHITECTURE.md, read ------------------------------------------------------------


def _drawn_layers() -> list[list[str]]:
    """The layers of the drawing under "## Layers", top to bottom; side-by-side layers share a list."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    block = text.split("## Layers", 1)[1].split("```", 2)[1]
    rows = []
    for line in block.splitlines():
        # A layer row starts with a layer's name; connector rows start with blanks and pipes.
        if not re.match(r"(triage\.\w+|product)\b", line):
            continue
        # Side by side: names separated by a wide gap before the row's prose.
        names = [n for n in re.split(r"\s{2,}", line.strip()) if n in LAYER_NAMES]
        rows.append(names)
    return rows


def _below(layer: str) -> set[str]:
    """The layers drawn below ``layer`` (the ones it may import)."""
    rows = _drawn_layers()
    at = next(i for i, row in enumerate(rows) if layer in row)
    return {name for row in rows[at + 1 :] for name in row}


def _parts_table() -> dict[str, set[str]]:
    """Layer -> the names the Parts table's rows of that layer give in backticks (dotted ones kept)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    table = text.split("## Parts", 1)[1].split("\n## ", 1)[0]
    named: dict[str, set[str]] = {}
    package = ""
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or set(cells[0]) <= {"-", " "} and cells[0] or cells[0] == "package":
            continue
        if cells[0]:
            package = cells[0].strip("`")
        layer = (
            "product" if package in {"product", "triage.online", "triage.workspace"} else package
        )
        # The module column, and the row's prose (pairwise_sum, thresholds, progress are named there).
        names = set(re.findall(r"`([\w.]+)`", " ".join(cells[1:])))
        # A dotted name (readers.jmh) also names its package (readers).
        names |= {n.rpartition(".")[0] for n in names if "." in n}
        if package.startswith("triage."):
            own = package.removeprefix("triage.")
            names.add(own)
            if layer == "product":  # triage.online's `loop` is online.loop
                names |= {f"{own}.{n}" for n in names if n != own}
        named.setdefault(layer, set()).update(names)
    return named


def test_the_drawing_is_read_as_five_rows_with_features_beside_detectors():
    assert _drawn_layers() == [
        ["triage.cli"],
        ["product"],
        ["triage.training"],
        ["triage.features", "triage.detectors"],
        ["triage.core"],
    ]
    assert _below("triage.training") == {"triage.features", "triage.detectors", "triage.core"}
    assert _below("triage.core") == set()


def test_the_graph_points_down_the_drawing():
    # Side by side (features, detectors) is no permission: neither may import the other.
    bad = []
    for mod, edges in sorted(graph_rules.graph().items()):
        layer = graph_rules._layer_of(mod)
        for target, where in sorted(edges.items()):
            tl = graph_rules._layer_of(target)
            if tl != layer and tl not in _below(layer):
                bad += [f"{mod} ({layer}) -> {target} ({tl}): {w}" for w in where]
    assert not bad, "imports against ARCHITECTURE.md's drawing:\n" + "\n".join(bad)


def test_the_import_graph_table_is_no_looser_than_the_drawing():
    assert set(graph_rules.ALLOWED) == set(LAYER_NAMES)
    for layer, allowed in graph_rules.ALLOWED.items():
        granted = set(LAYER_NAMES) - {layer, "triage.cli"} if allowed is None else set(allowed)
        assert granted <= _below(layer), (layer, granted - _below(layer))


def test_every_module_sits_in_the_layer_the_parts_table_gives_it():
    table = _parts_table()
    assert set(table) == set(LAYER_NAMES), sorted(table)
    unplaced = []
    for mod in graph_rules.modules():
        if mod == "triage":
            continue  # the root package: loaded with any module, layered by nothing
        layer = graph_rules._layer_of(mod)
        # triage.__main__ is listed with the product but layered with the command it runs.
        listed_in = "product" if mod == "triage.__main__" else layer
        parts = mod.split(".")
        # Named by its own name or a dotted tail of it (jmh, readers.jmh).
        tails = {".".join(parts[i:]) for i in range(1, len(parts))}
        if not tails & table[listed_in]:
            unplaced.append(f"{mod} (layer {layer})")
    assert not unplaced, "modules the Parts table does not place in their layer:\n" + "\n".join(
        unplaced
    )


# -- every module, imported -----------------------------------------------------------


_PROBE = """
import importlib, json, sys
steps, seen = [], set()
for names in json.loads(sys.argv[1]):
    for name in names:
        importlib.import_module(name)
    now = {m for m in sys.modules if m.startswith("triage.")}
    steps.append(sorted(now - seen))
    seen = now
print(json.dumps(steps))
"""


def _layer_modules(layers: set[str]) -> list[str]:
    return sorted(
        m for m in graph_rules.modules() if m != "triage" and graph_rules._layer_of(m) in layers
    )


def _chains() -> list[list[str]]:
    """Layers to import in turn, bottom up, one interpreter per chain.

    A module already loaded by a lower step is never a new load, so a layer
    beside another (detectors beside features) gets a chain of its own:
    otherwise its import of its neighbour would go unseen.
    """
    rows = _drawn_layers()[::-1]
    main = [row[0] for row in rows]
    beside = [[*(r[0] for r in rows[:i]), name] for i, row in enumerate(rows) for name in row[1:]]
    return [main, *beside]


def test_each_layer_imports_without_loading_a_layer_above():
    # Each step of a chain imports every module of its layer; what it newly
    # loads must be of that layer or one drawn below it.
    assert _chains() == [
        ["triage.core", "triage.features", "triage.training", "product", "triage.cli"],
        ["triage.core", "triage.detectors"],
    ]
    jobs = []
    for chain in _chains():
        steps = [_layer_modules({layer}) for layer in chain]
        proc = subprocess.Popen(
            [sys.executable, "-c", _PROBE, json.dumps(steps)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        jobs.append((chain, proc))
    imported: set[str] = set()
    for chain, proc in jobs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, f"importing {chain} failed:\n{err[-3000:]}"
        for layer, new in zip(chain, json.loads(out.strip().splitlines()[-1]), strict=True):
            may = {layer} | _below(layer)
            above = [m for m in new if graph_rules._layer_of(m) not in may]
            assert not above, f"importing {layer} loaded modules of a layer above it: {above}"
            imported |= set(new)
    # Every module of the project was imported, triage.__main__ included.
    assert set(graph_rules.modules()) - {"triage"} <= imported


# -- dead private code ----------------------------------------------------------------


def _python_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [ROOT / f for f in listed if not (ROOT / f).is_symlink() and (ROOT / f).is_file()]


def test_no_private_module_level_name_is_left_unreferenced():
    used: set[str] = set()
    defined: list[tuple[str, str, int]] = []
    for path in _python_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
                used.add(node.id)
            elif isinstance(node, ast.Attribute):
                used.add(node.attr)
            elif isinstance(node, ast.alias):
                used.add(node.name.rpartition(".")[2])
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                used.add(node.value)  # a name looked up by its text (getattr, __all__)
        top = path.relative_to(ROOT).parts[0]
        if top not in {"triage", "features", "training"}:
            continue
        for node in tree.body:
            names: list[str] = []
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                if not node.decorator_list:  # a decorator may register it (a command, a route)
                    names = [node.name]
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [t.id for t in targets if isinstance(t, ast.Name)]
            rel = str(path.relative_to(ROOT))
            defined += [
                (rel, n, node.lineno) for n in names if n.startswith("_") and not n.startswith("__")
            ]
    dead = [f"{rel}:{line}: {name}" for rel, name, line in defined if name not in used]
    assert not dead, "private names nothing refers to (remove them):\n" + "\n".join(dead)


def test_the_queue_order_kept_its_one_home():
    from triage.workspace import app
    from triage.workspace.alerts import Alert

    assert not hasattr(app, "_sort_key")

    def alert(sid: str, p: float | None, pct: float) -> Alert:
        return Alert(sid, sid, "c", 3, None, pct, "change", "d", "", "", p_true=p)

    rows = [
        (alert("a", 0.9, 1.0), "decided"),
        (alert("b", 0.2, 50.0), "untriaged"),
        (alert("c", 0.7, 1.0), "untriaged"),
        (alert("d", None, 80.0), "untriaged"),
        (alert("e", None, 5.0), "untriaged"),
    ]
    order = [a.series_id for a, _ in sorted(rows, key=lambda pair: app._order(*pair))]
    assert order == ["c", "b", "d", "e", "a"]


# -- docstrings corrected --------------------------------------------------------------


def _history(values: np.ndarray, candidate: int):
    from triage.core import labels
    from triage.core.history import History

    n = len(values)
    marks = np.full(n, labels.NONE, dtype=object)
    marks[candidate] = labels.NOT_TRIAGED
    return History(
        "s",
        np.array([f"c{i}" for i in range(n)], dtype=object),
        np.asarray(values, dtype=np.float64),
        marks,
    )


def test_extract_features_pair_columns_may_be_nan_the_catalogue_ones_never():
    from triage.core.history import Dataset
    from triage.features import catalogue, extract
    from triage.features.level_shift import PAIR_COLUMNS

    # Pre around 0 (median exactly 0): the relative change is undefined.
    values = np.r_[
        [0.0, 1.0, -1.0, 0.0, 2.0, -2.0, 0.0, 0.5, -0.5, 0.0],
        np.full(10, 5.0) + np.arange(10) * 0.01,
    ]
    frame = extract.extract_features(Dataset([_history(values, 10)]), pair=True)
    assert list(frame.columns) == extract.matrix_columns() + list(PAIR_COLUMNS)
    assert np.isfinite(frame[catalogue.feature_columns()].to_numpy(dtype=float)).all()
    assert np.isnan(frame.loc[0, "pair_rel_change"])


def test_matrix_feature_columns_are_the_prefixes_its_docstring_names():
    from triage.features import matrix
    from triage.inference import DETECTOR_SCORE_RANK

    for column in (
        "pre_hurst",
        "after_entropy",
        "norm_sd_pre",
        "pair_overlap",
        "ctx_dominance",
        DETECTOR_SCORE_RANK,
    ):
        assert matrix.is_feature_column(column), column
        prefix = column.split("_", 1)[0] + "_*"
        assert f"``{prefix}``" in (matrix.__doc__ or "") or column == "norm_sd_pre", prefix
    assert DETECTOR_SCORE_RANK in (matrix.__doc__ or "")
    assert not matrix.is_feature_column("truth_label")


def test_row_layout_places_pair_columns_in_a_fourth_copy():
    from triage.features.level_shift import PAIR_COLUMNS
    from triage.features.row import RowLayout, feature_row

    layout = RowLayout(["pair_overlap", "pre_hurst", "norm_sd_after", "after_entropy"])
    pre, after = np.arange(20.0), 100 + np.arange(20.0)
    norm, pair = np.array([0.1, 0.2, 0.3, 0.4]), 1000 + np.arange(float(len(PAIR_COLUMNS)))
    row = feature_row(layout, pre, after, norm, pair=pair)
    assert row.tolist() == [pair[PAIR_COLUMNS.index("pair_overlap")], 6.0, 0.4, 101.0]


class _StubModel:
    """Enough of a fitted classifier for :func:`triage.inference.decide` (P(true) 0.8 for every row)."""

    def __init__(self):
        self.feature_names_ = ["pre_hurst", "after_hurst"]
        self.threshold_ = 0.5
        self.manifest_: dict = {}

    def predict_proba(self, rows):
        return np.tile([0.2, 0.8], (len(rows), 1))


def test_decide_explains_rule_decided_rows_even_with_explain_top_0():
    from triage.features import noise_free
    from triage.inference import NOT_SCORABLE, NotScorable, decide

    matrix = pd.DataFrame(
        {
            "series_id": ["s", "s", "s"],
            "commit": ["a", "b", "c"],
            "index": [0, 40, 80],
            "pre_hurst": [0.5, 0.5, 0.5],
            "after_hurst": [0.5, 0.5, 0.5],
            "pre_series_length": [0.0, 30.0, 30.0],
            "after_series_length": [5.0, 5.0, 5.0],
            "norm_mean_pre": [0.0, 0.0, 0.3],
            "norm_mean_after": [1.0, 1.0, 0.6],
            "norm_sd_pre": [0.0, 0.0, 0.2],
            "norm_sd_after": [0.0, 0.0, 0.2],
        }
    )
    assert noise_free.verdict(matrix).tolist()[1] == noise_free.STEP
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotScorable)
        out = decide(_StubModel(), matrix, explain_top=0)
    assert out["classification"].tolist() == [NOT_SCORABLE, "true_positive", "true_positive"]
    assert out.loc[0, "explanation"].startswith("not scorable")
    assert out.loc[1, "explanation"].startswith("noise-free step")
    assert out.loc[2, "explanation"] == ""  # the model's own call: no reasons asked for


def test_write_decisions_rounds_to_4_in_csv_and_3_in_published(tmp_path):
    from triage.batch_label import OUTPUT_COLUMNS, write_decisions

    decisions = pd.DataFrame(
        {
            "series_id": ["s"],
            "commit": ["c"],
            "label": ["not_triaged"],
            "p_false": [0.123456],
            "p_true": [0.876544],
            "classification": ["true_positive"],
            "change_pct": [12.5],
            "change_kind": ["regression"],
            "explanation": [""],
        }
    )[list(OUTPUT_COLUMNS)]
    csv = pd.read_csv(write_decisions(decisions, tmp_path / "d.csv"))
    assert csv.loc[0, "p_true"] == 0.8765
    published = (write_decisions(decisions, tmp_path / "p.csv", fmt="published")).read_text()
    assert published.splitlines()[1] == "c;not_triaged;0.123;0.877;TRUE"


def test_the_model_manifest_name_has_one_home():
    from triage import model_lookup
    from triage.training import model_dirs

    assert model_lookup.MANIFEST is model_dirs.MANIFEST
    for name in model_lookup.bundled_names():
        assert model_dirs.is_model_dir(model_lookup.bundled_model(name)), name
