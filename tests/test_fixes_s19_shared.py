"""Defects the nineteenth session's helpers reported in shared modules, fixed there.

1. (numbers walkthrough) ``triage watch`` on an instruction count of 5e10
   that rose by 16 and stayed: the noise-free rule raised the alarm at the
   step's commit, and the re-check withdrew it five commits later (score
   0.32): a window of one value was given a noise scale of 1e-9 of its
   level, 50 here, against ``withdraw_below`` 2. A Pre of one value now has
   no scale: the re-check keeps the alarm when the later commits stand
   beyond the values' resolution (1e-10 of the level, as the rule reads
   it) and withdraws it when they came back to Pre's value.
2. ``pytest tests/test_noise_free.py`` (and three more files) failed at
   collection, "No module named 'tests'": they imported ``tests.helpers_cli``,
   which only ``python -m pytest`` finds. Every test imports ``helpers_cli``.
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers_cli import invoke

from triage.model_lookup import resolve_model
from triage.online.loop import OnlineTriage


def _stream(values: list[float]) -> str:
    return "".join(json.dumps({"series_id": "m", "commit": f"c{i}", "value": v}) + "\n" for i, v in enumerate(values))


def _records(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_a_flat_step_of_sixteen_in_5e10_is_alarmed_and_kept(tmp_path):
    code, text = invoke(["watch", "--state", tmp_path / "s.db"], stdin=_stream([5e10] * 60 + [5e10 + 16] * 20))
    assert code == 0, text
    records = _records(text)
    assert [r["commit"] for r in records if r.get("decision") is True] == ["c60"]
    assert not [r for r in records if "withdrawn" in json.dumps(r)], records


def test_a_flat_level_that_comes_back_is_withdrawn():
    # the After window of K + 1 = 5 commits is one new value (the rule alarms); with a
    # re-check 10 commits later the median of the 15 from the alarm is Pre's value again
    loop = OnlineTriage.from_model_dir(resolve_model("default", "online"), recheck_after=10)
    values = [1000.0] * 60 + [1100.0] * 5 + [1000.0] * 30
    decisions = [loop.process_one("m", f"c{i}", v) for i, v in enumerate(values)]
    alarms = [d.commit for d in decisions if d is not None and d.decision]
    withdrawals = [d.withdrawal for d in decisions if d is not None and d.withdrawal is not None]
    assert alarms == ["c60"]
    assert [(w.commit, w.decided_at, w.score) for w in withdrawals] == [("c60", "c74", 0.0)]


def test_no_test_file_imports_the_tests_package():
    """``tests`` is not a package on a plain ``pytest`` run's path; ``helpers_cli`` is (rootdir conftest)."""
    tests = Path(__file__).resolve().parent
    offenders = [p.name for p in sorted(tests.glob("*.py"))
                 if any(line.startswith(("from tests.", "import tests.")) for line in p.read_text().splitlines())]
    assert offenders == []
