"""The online row in one compiled call, and the replay's screen in stages.

(a) ``pre_state_kernels.row_kernel`` (``PreState.features_array`` / ``row_into``
for a fresh Pre longer than 10 commits) gives the row of the Python path
(``pre_characteristics``, ``window_characteristics``, ``normalised_moments``,
``online_pair_features``, ``feature_row``) bit for bit, NaN included, on real
histories and on awkward windows (flat tails, quantised values, a constant
After, After of one value), with and without deferred characteristics, and
caches Pre's characteristics as the Python path does. (b) Its on-disk cache
is keyed on the sources of the modules it links. (c) A row built for the
screen's first stage and completed stage by stage (``complete_into``) equals
the row built at once for each stage and the full row.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from triage.features import fast, level_shift, pairwise_sum, pre_state_kernels
from triage.features.incremental import PreState
from triage.online.loop import OnlineTriage
from triage.training.model_files import load_model

ONLINE_W4 = Path(__file__).resolve().parents[1] / "models" / "online-w4"


@pytest.fixture(scope="module")
def names() -> list[str]:
    return list(load_model(ONLINE_W4).feature_names_)


@pytest.fixture
def real_values(shared_data) -> list[np.ndarray]:
    """18 real histories of 40 commits or more (every 20th such series of ../shared/data/real)."""
    frame = pd.read_csv(shared_data / "real" / "histories.csv.gz", usecols=["series_id", "value"])
    series = [g["value"].to_numpy(dtype=np.float64) for _, g in frame.groupby("series_id", sort=True)]
    long = [v[:300] for v in series if v.size >= 40]
    return long[::20][:18]


def _both(pre: PreState, after: np.ndarray, defer: tuple[str, ...], monkeypatch) -> tuple[PreState, PreState, np.ndarray, np.ndarray]:
    fused, python = copy.deepcopy(pre), copy.deepcopy(pre)
    a = fused.features_array(after, defer)
    with monkeypatch.context() as m:
        m.setattr(pre_state_kernels, "row_kernel", lambda *args: False)  # the Python path
        b = python.features_array(after, defer)
    return fused, python, a, b


def _assert_bits(a: np.ndarray, b: np.ndarray) -> None:
    np.testing.assert_array_equal(a.view(np.int64), b.view(np.int64))


DEFERS = [(), OnlineTriage.SCREEN_DEFER, OnlineTriage.SCREEN_STAGES[0]]


def test_the_fused_row_equals_the_python_path_on_real_histories(names, real_values, monkeypatch):
    compared = 0
    for values in real_values:
        pre = PreState(names)
        for i, x in enumerate(values[:-5]):
            if i > 10 and i % 9 == 0:
                after = np.ascontiguousarray(values[i : i + 5])
                for defer in DEFERS:
                    fused, python, a, b = _both(pre, after, defer, monkeypatch)
                    _assert_bits(a, b)
                    # The cached characteristics too: partial or full as the Python path left them.
                    for attr in ("_pre_cache", "_pre_partial"):
                        x_f, x_p = getattr(fused, attr), getattr(python, attr)
                        assert (x_f is None) == (x_p is None)
                        if x_f is not None:
                            _assert_bits(x_f, x_p)
                    # Completing the row later gives the full row either way.
                    _assert_bits(fused.features_array(after), python.features_array(after))
                    compared += 1
            pre.learn_one(x)
    assert compared > 300


@pytest.mark.parametrize("kind", ["quantised", "flat tail", "tiny noise", "large scale"])
def test_the_fused_row_equals_the_python_path_on_awkward_windows(names, kind, monkeypatch):
    rng = np.random.default_rng(["quantised", "flat tail", "tiny noise", "large scale"].index(kind))
    for n in (11, 40, 64, 65, 150):
        if kind == "quantised":
            values = np.round(100 + rng.standard_normal(n))
        elif kind == "flat tail":
            values = np.r_[100 + rng.standard_normal(max(n - 70, 1)), np.full(70, 5.0)][-n:]
        elif kind == "tiny noise":
            values = 7 + 1e-5 * rng.standard_normal(n)
        else:
            values = 1e6 * rng.standard_normal(n)
        pre = PreState(names).learn_many(values.tolist())
        for after in (np.full(5, 3.0), values[-1:].copy(), values[-3:].copy(), np.round(rng.standard_normal(5))):
            for defer in DEFERS:
                _, _, a, b = _both(pre, np.ascontiguousarray(after), defer, monkeypatch)
                _assert_bits(a, b)


def test_the_fused_row_is_cached_under_a_key_of_every_module_it_links():
    # numba keys a kernel's on-disk cache on its own file and on its closure's
    # cells; the kernel's one cell is the digest of the modules it calls into.
    cells = [c.cell_contents for c in pre_state_kernels.row_kernel.py_func.__closure__]
    assert cells == [pre_state_kernels._sources_digest(pre_state_kernels._ROW_SOURCES)]
    linked = {fast, level_shift, pairwise_sum}
    assert linked <= set(pre_state_kernels._ROW_SOURCES)


def test_a_row_completed_stage_by_stage_equals_the_row_built_at_once(names, real_values):
    stages = [defer for defer, _ in OnlineTriage(load_model(ONLINE_W4), explain="none")._screen_for(True)]
    assert stages == list(OnlineTriage.SCREEN_STAGES)
    values = real_values[0]
    pre = PreState(names).learn_many(values[:80].tolist())
    after = np.ascontiguousarray(values[80:85])
    row = copy.deepcopy(pre).row_into(after, np.empty(len(names)), stages[0])
    for defer in stages[1:]:
        pre_row = copy.deepcopy(pre)
        pre_row.row_into(after, np.empty(len(names)), stages[0])
        at_once = copy.deepcopy(pre).features_array(after, defer)
        pre_row.complete_into(row, defer)
        _assert_bits(row, at_once)
        pre_row.complete_into(row)
        _assert_bits(row, copy.deepcopy(pre).features_array(after))
    assert np.all(np.isfinite(row[[names.index(f"pre_{n}") for n in stages[0]]]))
