"""Start-up: importing the detectors and the steady-state methods leaves scipy.stats, scipy.signal
and ruptures for the methods that use them (about 1 s each to import: `triage summary` on a
40-row file took 2.7 s of CPU, 1.5 s after)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from triage.detectors import make

HEAVY = ("scipy.stats", "scipy.signal", "ruptures")


def _loaded_after(code: str) -> list[str]:
    probe = f"import sys, json\n{code}\nprint(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_the_detectors_and_steady_state_methods_loads_none_of_the_slow_libraries():
    assert _loaded_after("import triage.detectors, triage.steady_state, triage.cli.data") == []


def test_perfherder_runs_without_them_and_edivisive_and_pelt_load_what_they_need():
    assert _loaded_after("import numpy as np; from triage.detectors import make; "
                         "make('perfherder').detect(np.r_[np.zeros(30), np.ones(30)])") == []
    assert _loaded_after("import numpy as np; from triage.detectors import make; "
                         "make('pelt').detect(np.r_[np.zeros(30), np.ones(30)])") == ["scipy.stats", "scipy.signal",
                                                                                       "ruptures"]


def test_every_registry_detector_still_finds_a_clear_step():
    x = np.r_[np.random.default_rng(0).normal(0, 1, 60), np.random.default_rng(1).normal(10, 1, 60)]
    for name in ("perfherder", "hybrid_welch", "hybrid_mwu", "hybrid_ks", "edivisive", "bocpd", "pelt", "binseg"):
        found = [cp.index for cp in make(name).detect(x)]
        assert any(abs(i - 60) <= 2 for i in found), (name, found)
    # Levene's test is about spread: a noise level five times higher from commit 60 on
    spread = np.r_[np.random.default_rng(0).normal(0, 1, 60), np.random.default_rng(1).normal(0, 5, 60)]
    found = [cp.index for cp in make("hybrid_levene").detect(spread)]
    assert any(abs(i - 60) <= 3 for i in found), found
