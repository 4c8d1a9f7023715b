"""JMH results read from standard input are refused: the file's stem is its commit id, and stdin has none.

They were read as commit ``stdin`` (the temporary copy's name), a commit id
that no one gave and that matches nothing in a history.
"""

from __future__ import annotations

import json
import subprocess

from helpers_cli import flat, invoke
from warm_start import warm_triage

RESULTS = [
    {
        "benchmark": "org.acme.ParserBench.parse",
        "mode": "thrpt",
        "params": {"size": "1024"},
        "primaryMetric": {"scoreUnit": "ops/s", "rawData": [[702.1, 998.7, 1001.2], [695.0, 1000.4, 999.1]]},
    }
]


def test_convert_of_jmh_on_stdin_is_refused_saying_how_to_name_the_commit(tmp_path):
    out = tmp_path / "x.csv"
    code, text = invoke(["convert", "--data", "-", "--out", out], stdin=json.dumps(RESULTS))
    assert code == 2, text
    text = flat(text)
    assert "<stdin>: JMH results are one commit, named by the file's stem" in text
    assert "--commits <commit>" in text
    assert not out.exists()


def test_jmh_from_dev_stdin_is_refused_too(tmp_path):
    # /dev/stdin is a real file descriptor: only a process of its own has it.
    proc = subprocess.run(
        [*warm_triage(), "convert", "--data", "/dev/stdin", "--out", str(tmp_path / "x.csv")],
        input=json.dumps(RESULTS), capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "/dev/stdin: JMH results are one commit" in flat(proc.stderr)


def test_the_suggested_route_gives_the_commit_and_the_same_value(tmp_path):
    named = tmp_path / "3f2a9c1.json"
    named.write_text(json.dumps(RESULTS))
    code, text = invoke(["convert", "--data", named, "--out", tmp_path / "direct.csv"])
    assert code == 0, text
    long = tmp_path / "long.csv"
    code, text = invoke(
        ["steady", "-", "--commits", "3f2a9c1", "--trim-warmup", "none", "--out", long], stdin=json.dumps(RESULTS)
    )
    assert code == 0, text
    code, text = invoke(["convert", "--data", long, "--out", tmp_path / "routed.csv"])
    assert code == 0, text
    direct = (tmp_path / "direct.csv").read_text().splitlines()
    assert direct == (tmp_path / "routed.csv").read_text().splitlines()
    assert direct[1].split(",")[1] == "3f2a9c1"
