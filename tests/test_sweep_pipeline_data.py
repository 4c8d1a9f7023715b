"""``triage convert``, ``summary`` and ``plot`` on input a sweep found mishandled; one test per defect."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def triage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from triage.cli.app import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _long_csv(path: Path) -> Path:
    rows = "".join(f"s1,c{i},{1.0 + 0.5 * (i >= 20) + 0.01 * (i % 3)}\n" for i in range(40))
    path.write_text("series_id,commit,value\n" + rows)
    return path


def test_convert_refuses_to_write_over_its_commit_order_file(tmp_path):
    # Was: --out naming the --commit-order file replaced it with the CSV.
    data = _long_csv(tmp_path / "h.csv")
    order = tmp_path / "order.txt"
    order.write_text("".join(f"c{i}\n" for i in range(40)))
    before = order.read_bytes()
    res = triage("convert", "--data", str(data), "--out", str(order), "--commit-order", str(order))
    assert res.returncode == 2, res.stdout + res.stderr
    assert "--out" in res.stderr and "input" in res.stderr
    assert order.read_bytes() == before
