"""The online loop's hold-back: an alarm waits while its commit still sits at the old level.

With K = 4 the After window of the commit just before a step already holds
the new level, and the model called that commit; the refractory period then
kept the step's own commit from its alarm. On the real histories 157 of the
loop's 688 alarms named a commit before the step (BENCHMARKS.md, "Which
commit an alarm names"), e.g. index 37 of an otel-java series whose step is
at index 38.
"""

from __future__ import annotations

import numpy as np
import pytest

from triage.core.history import Dataset
from triage.loaders import load
from triage.model_lookup import bundled_model
from triage.online.loop import HELD_BACK, OnlineTriage, held_back

OTEL = (
    "otel-java/io.opentelemetry.sdk.MetricRecordBenchmark.threads1({aggregationTemporality:CUMULATIVE;"
    "cardinality:100;instrumentTypeAndAggregation:COUNTER_SUM})/otel-bench-runner"
)


def test_the_rule_waits_for_a_commit_still_at_the_old_level():
    pre = np.array([100.0, 101, 99, 100, 100.5])
    assert held_back(pre, np.array([100.4, 130, 131, 129, 130]))  # the step is after it
    assert not held_back(pre, np.array([129.0, 130, 131, 129, 130]))  # it is the step
    assert not held_back(pre, np.array([160.0, 100, 101, 99, 100]))  # a spike: nearer neither, the model's call
    assert not held_back(pre, np.array([100.4]))  # K = 0: no After beyond the commit
    assert not held_back(np.empty(0), np.array([100.4, 130, 131]))


@pytest.fixture
def otel(shared_data):
    real = load(shared_data / "real" / "histories.csv.gz")
    return Dataset([real[OTEL]])


def test_a_real_step_is_named_at_its_own_commit_by_detect_and_by_watch(otel):
    history = otel[OTEL]
    assert history.values[37] < 25e6 < history.values[38]  # 20.8 M, then 38.5 M
    loop = OnlineTriage.from_model_dir(bundled_model("online-w4"))
    alarms = [d.index for d in loop.replay(otel) if d.decision]
    assert 38 in alarms and 37 not in alarms
    # commit by commit, as `triage watch` takes them: the same alarms, and the reason at 37
    watcher = OnlineTriage.from_model_dir(bundled_model("online-w4"))
    decided = [d for c, v in zip(history.commits, history.values, strict=True)
               if (d := watcher.process_one(OTEL, c, float(v))) is not None]
    assert [d.index for d in decided if d.decision] == alarms
    at37 = next(d for d in decided if d.index == 37)
    assert not at37.decision and at37.top_features == [HELD_BACK] and at37.probability >= watcher.threshold
