"""``triage detect --format json``: the probabilities as the CSV (and ``watch``) give them, every digit."""

from __future__ import annotations

import gzip
import json

import pandas as pd
from helpers_cli import invoke


def _history(path):
    rows = "".join(
        f"s{k},c{i},{1.0 + (0.5 + 0.1 * k) * (i >= 30) + 0.01 * ((i * 7 + k) % 5)}\n"
        for k in range(3) for i in range(60)
    )
    path.write_text("series_id,commit,value\n" + rows)
    return path


def test_json_output_keeps_every_digit_of_a_probability(tmp_path):
    # pandas' to_json wrote 10 significant digits: 0.9811435938 where the CSV says
    # 0.9811435938436213 (observed on the real histories: all 688 differed by up to 5e-11).
    data = _history(tmp_path / "h.csv")
    for name in ("a.csv", "a.jsonl", "a.jsonl.gz"):
        code, out = invoke(["detect", "--data", data, "--min-pre", "0", "--out", tmp_path / name] +
                           (["--format", "json"] if "json" in name else []))
        assert code == 0, out
    csv_rows = pd.read_csv(tmp_path / "a.csv").to_dict("records")
    assert csv_rows, "the history should give change points"
    plain = [json.loads(x) for x in (tmp_path / "a.jsonl").read_text().splitlines()]
    packed = [json.loads(x) for x in gzip.decompress((tmp_path / "a.jsonl.gz").read_bytes()).decode().splitlines()]
    assert plain == packed
    assert [(r["series_id"], r["commit"], r["index"], r["probability"]) for r in plain] == [
        (r["series_id"], r["commit"], r["index"], r["probability"]) for r in csv_rows
    ]
