"""A read-only window (pandas hands them out) compiles no second kernel: each feature kernel has
one specialization for float64 windows, whoever holds the array. Before, the row kernel, the pair
kernels and the window preparation were each compiled again for read-only arrays (2.6 MB more
machine code in a fresh checkout's test suite)."""

from __future__ import annotations

import numpy as np
from numba.core import types

from triage.features import level_shift, pre_state_kernels
from triage.features.incremental import PreState, window_characteristics
from triage.model_lookup import bundled_models_dir
from triage.training.model_files import load_model


def _read_only(values) -> np.ndarray:
    a = np.array(values, dtype=np.float64)
    a.flags.writeable = False  # as pandas hands out arrays under copy-on-write
    return a


def _readonly_signatures(*dispatchers) -> list[str]:
    return [f"{d.__name__}{sig}" for d in dispatchers for sig in d.signatures
            if any(isinstance(t, types.Array) and not t.mutable for t in sig)]


def test_read_only_windows_reach_the_kernels_as_writable_ones():
    rng = np.random.default_rng(24)
    history = 100 + rng.standard_normal(80)
    after = _read_only(history[60:65] + 3)
    pre = _read_only(history[:60])

    writable = level_shift.pair_features(pre.copy(), after.copy())
    assert np.array_equal(level_shift.pair_features(pre, after), writable, equal_nan=True)
    assert np.array_equal(level_shift.pair_features(pre, after, res=None),
                          level_shift.pair_features(pre.copy(), after.copy(), res=None), equal_nan=True)
    assert level_shift.resolution(pre) == level_shift.resolution(pre.copy())
    assert np.array_equal(window_characteristics(after), window_characteristics(after.copy()), equal_nan=True)

    names = list(load_model(bundled_models_dir() / "online-w4").feature_names_)
    state = PreState(names).learn_many(history[:60].tolist())
    assert np.array_equal(state.features_array(after), PreState(names).learn_many(history[:60].tolist())
                          .features_array(after.copy()), equal_nan=True)

    assert _readonly_signatures(
        level_shift._pair_kernel, level_shift._pair_own_floor, level_shift._resolution, level_shift._mean_var,
        level_shift._robust_scale, pre_state_kernels.row_kernel, pre_state_kernels.prepare_window,
        pre_state_kernels.normalised_moments,
    ) == []

