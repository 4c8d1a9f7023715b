"""Defects in shared modules found or left open before the twenty-second session, fixed there.

1. A long file compressed with gzip whose timestamps go backwards, read with
   ``--sort-timestamps``: the warning named the reader's temporary
   decompressed copy (``/tmp/triage-input-.../h.csv``), gone by the time it
   is read, not the file the user gave.
2. ``train`` / ``evaluate`` with ``--scheduler`` (joblib's dask backend) went
   on waiting when the cluster lost every worker: ``map_series`` ended with
   an error after ``WORKER_TIMEOUT`` seconds without workers, joblib's wait
   had no such look.
"""

from __future__ import annotations

import gzip
import signal
import threading
import time
import warnings

import pytest
from helpers_cli import invoke

from triage.core.history import UnsortedTimestampsWarning
from triage.loaders import load

UNSORTED = "series_id,commit,value,timestamp\na,c1,1.0,2024-01-02\na,c2,2.0,2024-01-01\na,c3,2.0,2024-01-03\n"


def test_sorting_a_gzipped_file_warns_with_the_users_file_name(tmp_path):
    given = tmp_path / "h.csv.gz"
    given.write_bytes(gzip.compress(UNSORTED.encode()))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dataset = load(given, sort_timestamps=True)
    assert [h.commits.tolist() for h in dataset] == [["c2", "c1", "c3"]]
    sorted_notes = [str(w.message) for w in caught if issubclass(w.category, UnsortedTimestampsWarning)]
    assert sorted_notes == [f"{given}: series 'a' sorted by timestamp (first out-of-order row 3)"]


def test_the_command_line_names_the_gzipped_file_and_stdin(tmp_path):
    given = tmp_path / "h.csv.gz"
    given.write_bytes(gzip.compress(UNSORTED.encode()))
    for data, stdin, name in ((given, None, str(given)), ("-", UNSORTED, "<stdin>")):
        with pytest.warns(UnsortedTimestampsWarning) as caught:
            code, text = invoke(["summary", "--data", data, "--sort-timestamps"], stdin=stdin)
        assert code == 0, text
        assert [str(w.message).split(": series")[0] for w in caught] == [name]


def _slow(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@pytest.mark.parametrize("ctrl_c", ["python's", "ignored"])
def test_joblib_on_a_cluster_that_loses_every_worker_ends_with_an_error(monkeypatch, ctrl_c):
    """Also when the process started with Ctrl-C ignored (``nohup triage train ... &`` in a script; a CI
    job run so failed here): the watch was off then; this test waited out its tasks, a run for ever."""
    import joblib
    from distributed import Client, LocalCluster

    from triage import distributed
    from triage.core.errors import InputError

    monkeypatch.setattr(distributed, "WORKER_TIMEOUT", 2.0)
    wanted = signal.default_int_handler if ctrl_c == "python's" else signal.SIG_IGN
    inherited = signal.signal(signal.SIGINT, wanted)
    try:
        _lose_every_worker(joblib, Client, LocalCluster, distributed, InputError)
        assert signal.getsignal(signal.SIGINT) is wanted  # as it was: Ctrl-C still ignored
    finally:
        signal.signal(signal.SIGINT, inherited)


def _lose_every_worker(joblib, Client, LocalCluster, distributed, InputError) -> None:
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0") as cluster,
        Client(cluster) as c,
    ):
        threading.Timer(1.0, lambda: cluster.scale(0)).start()
        started = time.monotonic()
        with pytest.raises(InputError, match="lost every worker during the run"), \
                distributed.joblib_on(c.scheduler.address, 1) as jobs:
            joblib.Parallel(n_jobs=jobs)(joblib.delayed(_slow)(10.0) for _ in range(4))
        # not the 40 s of the tasks, nor for ever: a hang guard with room for a loaded CI machine
        assert time.monotonic() - started < 30.0
