"""A series of one value has no change point, for every detector and every cost of the penalised searches.

Found in the sixteenth session's walkthrough: ``pelt`` / ``binseg`` with
``model=mahalanobis`` failed the whole ``triage candidates`` run on such a
series ("Singular matrix"); a constant benchmark (a fixed allocation count,
a cached result) is common in real exports.
"""

from __future__ import annotations

import numpy as np
import pytest

from triage.detectors import make, names
from triage.detectors.penalised import MODELS

CASES = [(n, {}) for n in names()] + [(n, {"model": m}) for n in ("pelt", "binseg") for m in MODELS]


@pytest.mark.parametrize(("name", "params"), CASES, ids=[f"{n}-{p.get('model', 'default')}" for n, p in CASES])
def test_a_constant_series_has_no_change_point(name, params):
    assert make(name, **params).detect(np.full(120, 85.25)) == []


def test_two_noiseless_levels_are_still_a_change():
    """The guard is for one value only: two constant levels are found, and no cost fails on them."""
    x = np.r_[np.full(60, 3.0), np.full(60, 4.0)]
    assert [c.index for c in make("pelt").detect(x)] == [60]
    assert [c.index for c in make("binseg").detect(x)] == [60]
    for model in MODELS:
        make("pelt", model=model).detect(x)
        make("binseg", model=model).detect(x)
