"""Series-partitioned runs on a dask LocalCluster give the single-process results."""

from __future__ import annotations

import os
import signal
import threading

import numpy as np
import pandas as pd
import pytest
from warm_start import warm_triage

from triage.distributed import (
    STOPS,
    _KeptStop,
    _stops_held,
    _stops_kept,
    joblib_on,
    map_frames,
    map_series,
    partition_of,
    split,
)
from triage.synthetic import generate


@pytest.fixture(scope="module")
def dataset():
    full = generate("small", seed=3)
    return full.subset(full.series_ids[:12])  # enough for several partitions, quick on 2 cores


def test_partition_of_is_stable_and_split_covers_every_series_once(dataset):
    assert partition_of("a/b", 7) == partition_of("a/b", 7)  # CRC-32, not Python's salted hash
    assert partition_of("mongodb-1", 4) == 3  # zlib.crc32(b"mongodb-1") % 4: the same on every machine
    parts = split(dataset, 4)
    ids = [s for p in parts for s in p.series_ids]
    assert sorted(ids) == sorted(dataset.series_ids) and len(ids) == len(set(ids))
    for p in parts:
        assert len({partition_of(s, 4) for s in p.series_ids}) == 1


def _stats(part):
    # A per-series result with several rows per series, to check the reassembly order.
    rows = [(h.series_id, i, float(v)) for h in part for i, v in enumerate(h.values[:3])]
    return pd.DataFrame(rows, columns=["series_id", "i", "value"])


def _features(part, window, n_jobs=1):
    from triage.features.extract import extract_features

    return extract_features(part, window=window, n_jobs=n_jobs)


@pytest.mark.slow
def test_local_cluster_gives_the_single_process_results(dataset):
    from triage.batch_label import label_candidates
    from triage.inference import load_classifier
    from triage.model_lookup import resolve_model

    clf = load_classifier(resolve_model("default", "alerts"))
    single = label_candidates(dataset, clf, which="all", explain_top=0)
    assert map_series(len, dataset, None) == [len(dataset)]
    from triage.distributed import client

    with client("local") as c:
        address = c.scheduler.address
        # Through the address, as `--scheduler tcp://...` would: the same cluster.
        spread = map_frames(label_candidates, dataset, address, clf, which="all", explain_top=0, n_partitions=5)
        pd.testing.assert_frame_equal(spread, single)
        pd.testing.assert_frame_equal(map_frames(_stats, dataset, address, n_partitions=3), _stats(dataset))
        ref = _features(dataset, 5)
        with joblib_on(address, 1) as n_jobs:
            assert n_jobs == -1
            on_cluster = _features(dataset, 5, n_jobs)
        pd.testing.assert_frame_equal(on_cluster, ref)
        assert len(single) > 0 and np.isfinite(single["p_true"]).all()


@pytest.mark.slow
def test_cli_candidates_with_scheduler_local_writes_the_same_file(tmp_path, dataset):
    import subprocess

    from triage.loaders import write_long

    data = write_long(dataset, tmp_path / "h.csv")
    outs = []
    for extra in ([], ["--scheduler", "local"]):
        out = tmp_path / f"c{len(extra)}.csv"
        res = subprocess.run(
            [*warm_triage(), "candidates", "--data", str(data),
             "--detector", "edivisive", "--out", str(out), *extra],
            capture_output=True, text=True, env={**os.environ, "TRIAGE_DASK_WORKERS": "2"}, timeout=120,
        )
        assert res.returncode == 0, res.stderr
        outs.append(out.read_text())
    assert outs[0] == outs[1] and outs[0].count("\n") > 1


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:1", "no such thing"])
def test_an_unreachable_scheduler_is_a_usage_error_naming_it(tmp_path, dataset, monkeypatch, address):
    # dask waited 30 s and the command ended as an internal error (exit 1)
    from helpers_cli import flat, invoke

    import triage.distributed as distributed
    from triage.loaders import write_long

    monkeypatch.setattr(distributed, "CONNECT_TIMEOUT", 1.0)
    data = write_long(dataset, tmp_path / "h.csv")
    out = tmp_path / "c.csv"
    code, output = invoke(["candidates", "--data", data, "--detector", "binseg", "--out", out, "--scheduler", address])
    assert code == 2, output
    assert f"--scheduler: cannot reach a dask scheduler at '{address}'" in flat(output)
    assert not out.exists()
    if address.startswith("tcp://"):
        # refused at once, said as such (it had waited out the handshake's deadline, then asked
        # whether the port was the dashboard's)
        assert "nothing listens at 127.0.0.1:1: connection refused" in flat(output)


def test_stops_held_while_a_cluster_starts_arrive_once_delivered():
    """A SIGTERM while held is neither lost nor acted on before ``deliver``; the handlers and the
    signal mask are as before once the block ends."""
    seen: list[int] = []
    before = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
        with _stops_held() as held:
            assert STOPS <= signal.pthread_sigmask(signal.SIG_BLOCK, [])
            # To this thread: one sent to the process may go to another thread of it (pytest-xdist's
            # own, which blocks nothing) and reach the handler only after the block ended, as a
            # loaded run showed (seen [SIGTERM], pending []).
            here = threading.get_ident()
            signal.pthread_kill(here, signal.SIGTERM)
            signal.pthread_kill(here, signal.SIGTERM)  # a standard signal pends once
        assert seen == [] and held.pending == [signal.SIGTERM]
        assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == mask
        held.deliver()
        assert seen == [signal.SIGTERM] and held.pending == []
        held.deliver()
        assert seen == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, before)


@pytest.fixture
def python_sigint():
    """Python's own Ctrl-C handler for the test, whatever this process inherited (a CI job started
    in the background of a script ignores Ctrl-C)."""
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, inherited)


@pytest.mark.parametrize("where", ["gc callback", "__del__", "weakref callback"])
def test_a_stop_that_lands_where_python_drops_exceptions_is_sent_again(capfd, python_sigint, where):
    """Python runs a signal's handler wherever the main thread is; raised inside a gc callback (dask's
    GCDiagnosis, in any process running a scheduler or worker), a weakref callback (a WeakSet's, in
    CI's run) or a ``__del__``, Ctrl-C's KeyboardInterrupt was printed as "Exception ignored" and
    lost: the command went on."""
    import gc
    import time
    import weakref

    class Dropping:
        def __del__(self):
            signal.raise_signal(signal.SIGINT)  # its handler runs here, before __del__ returns
            sum(range(10))

    class Target:
        pass

    fired: list[int] = []

    def callback(phase, info):
        if phase == "start" and not fired:
            fired.append(1)
            signal.raise_signal(signal.SIGINT)
            sum(range(10))

    with _stops_kept():
        assert isinstance(signal.getsignal(signal.SIGINT), _KeptStop)
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            if where == "gc callback":
                gc.callbacks.append(callback)
                try:
                    gc.collect()
                finally:
                    gc.callbacks.remove(callback)
            elif where == "__del__":
                Dropping()
            else:
                target = Target()
                refs = [weakref.ref(target, lambda r: (signal.raise_signal(signal.SIGINT), sum(range(10))))]
                del target  # the callback runs here
                assert refs[0]() is None
            time.sleep(30)  # the stop, sent again, ends this (without it, no KeyboardInterrupt at all)
        # Far below the sleep, not a timing goal: a full collection in a loaded test process took 2.1 s.
        assert time.monotonic() - started < 20
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert "Exception ignored" not in capfd.readouterr().err


def test_a_local_cluster_whose_workers_do_not_start_in_time_is_a_usage_error(tmp_path, dataset, monkeypatch):
    """dask waited for a starting worker for ever (and a stop is held while it starts); past the
    limit the command ends with an error that says so, not dask's bare "Status.starting"."""
    from helpers_cli import flat, invoke

    import triage.distributed as distributed
    from triage.loaders import write_long

    monkeypatch.setattr(distributed, "WORKER_TIMEOUT", 0.01)
    data = write_long(dataset.subset(dataset.series_ids[:2]), tmp_path / "h.csv")
    out = tmp_path / "c.csv"
    code, output = invoke(["candidates", "--data", data, "--detector", "binseg", "--out", out, "--scheduler", "local"])
    assert code == 2, output
    assert "--scheduler: local: the local dask cluster's workers did not start within 0.01 s" in flat(output)
    assert not out.exists()
