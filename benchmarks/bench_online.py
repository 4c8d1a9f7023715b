"""Speed and state size of the online loop (BENCHMARKS.md, "Online loop").

Measures :class:`triage.online.loop.OnlineTriage` (Bauer et al., ICPE 2022,
Algorithm 1) with a window-0 random forest (scikit-learn defaults of
:class:`~training.classifier.TriageClassifier`: 300 trees) evaluated by the
compiled predictor:

(a) **latency**: TigerBeetle's 365 results (``../shared/data/tigerbeetle.json``,
    the history Apache Otava's incremental mode is timed on) replayed commit by
    commit with ``process_one``, state in memory: per-commit wall time of
    features + decision + state update (``explain="none"``; the cost of an
    explanation, paid on positive decisions only by default, is reported
    apart);
(b) **throughput**: many synthetic series (``default`` preset generator)
    replayed side by side with :meth:`OnlineTriage.replay` (one predictor call
    per round of the batch), single process (one core);
(c) **state size**: ``len(json.dumps(SeriesState.to_dict()))`` per series
    after (b), and the bytes SQLite stores;
(d) **persisted**: (a) again with a :class:`~triage.online.state_store.StateStore`
    (one transaction per commit, WAL, ``synchronous=NORMAL``), and (b)'s
    batches with one transaction per batch.

Apart, each with its own option: (e) ``triage watch`` fed a backlog, (f)
``triage detect --jobs 2`` on a preset, (b) alone (``--replay-only``), and
(g) every decision over the real histories (``--real-decisions``), to show
that a speed change leaves decisions and probabilities as they were
(``--compare-decisions OLD NEW`` after running the same file on a worktree of
the commit before, with ``PYTHONPATH``), and the change points a replay
returns, with its screen or without (``--real-replay``, ``--no-screen``;
``--compare-decisions --positives-only`` compares them with each other or
with ``--real-decisions``' alarms that were not withdrawn), (h) the same for ``max_kl_shift``
on windows of the real histories (``--real-windows``, ``--compare-windows``),
and (i) where one commit's time goes (``--breakdown``).

The model is trained here, through the training API, on the ``small``
preset for the per-commit question (ground-truth change points positive;
false-alert candidates and ten ordinary commits per series negative), once
with the paper's characteristics (18 columns) and once with the whole
catalogue (44 columns). Pass ``--model DIR`` to time an existing model
instead.

Usage::

    .venv/bin/python -m benchmarks.bench_online --series 1000 --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

from triage.online.loop import OnlineTriage
from triage.online.state_store import StateStore

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def train_model(out: Path, names: list[str] | None, seed: int = 0) -> Path:
    """A window-0 forest for the per-commit question (see the module docstring)."""
    from triage.core import labels as L
    from triage.features.extract import extract_features
    from triage.synthetic import generate
    from triage.training.pipeline import train

    ds = generate("small", seed=seed)
    rng = np.random.default_rng(seed)
    picks, truth = {}, {}
    for h in ds:
        t = h.true_change_points()
        others = np.setdiff1d(np.arange(1, len(h)), np.concatenate([t, h.candidates()]))
        fp = np.flatnonzero(h.labels == L.FALSE_POSITIVE)
        picks[h.series_id] = np.unique(
            np.concatenate([t, fp, rng.choice(others, 10, replace=False)])
        )
        truth[h.series_id] = t
    matrix = extract_features(ds, candidates=picks, window=0, names=names, change_points=truth)
    positive = [
        int(i) in set(truth[s].tolist())
        for s, i in zip(matrix["series_id"], matrix["index"], strict=True)
    ]
    matrix["label"] = np.where(positive, L.TRUE_POSITIVE, L.FALSE_POSITIVE)
    train(matrix, out, model="rf", window=0, test_size=0, track=False, random_state=seed)
    return out


def tigerbeetle() -> np.ndarray:
    path = SHARED / "tigerbeetle.json"
    if not path.is_file():
        raise SystemExit(f"{path} is absent: (a) and (d) need ../shared/data beside the checkout")
    return np.asarray(json.loads(path.read_text()), dtype=np.float64)


def latency(
    model: Path, values: np.ndarray, repeats: int, store_dir: Path | None = None
) -> dict[str, float]:
    """Per-commit ns of process_one over the whole history, pooled over repeats."""
    times = []
    positives = 0
    for r in range(repeats):
        store = None
        if store_dir is not None:
            db = store_dir / f"latency-{r}.db"
            db.unlink(missing_ok=True)
            store = StateStore(db)
        loop = OnlineTriage.from_model_dir(model, explain="none", store=store)
        loop.process_one("warm-up", "w0", 1.0)  # compile / load numba caches outside the timing
        for i, x in enumerate(values):
            t0 = time.perf_counter_ns()
            d = loop.process_one("tigerbeetle", str(i), x)
            times.append(time.perf_counter_ns() - t0)
            positives += bool(d is not None and d.decision)
        if store is not None:
            store.close()
    t = np.array(times) / 1e3
    return {
        "median_us": float(np.median(t)),
        "p90_us": float(np.percentile(t, 90)),
        "p99_us": float(np.percentile(t, 99)),
        "positives": positives / repeats,
    }


def explain_cost(model: Path, values: np.ndarray) -> float:
    """Median µs of a positive decision's explanation (triage.explain), one row."""
    loop = OnlineTriage.from_model_dir(model, explain="positive")
    X = np.array([loop.new_state("x").pre.features_array(float(v)) for v in values[:50]])
    times = []
    for row in X:
        t0 = time.perf_counter_ns()
        loop._explain(row[None, :], np.array([True]))
        times.append(time.perf_counter_ns() - t0)
    return float(np.median(times) / 1e3)


def throughput(
    model: Path, dataset, store_dir: Path | None, batch_series: int, commits_per_batch: int
) -> dict[str, float]:
    store = None
    if store_dir is not None:
        db = store_dir / "throughput.db"
        db.unlink(missing_ok=True)
        store = StateStore(db)
    loop = OnlineTriage.from_model_dir(model, explain="none", store=store)
    loop.process_one("warm-up", "w0", 1.0)
    n = dataset.n_commits()
    t0 = time.perf_counter()
    c0 = time.process_time()
    found = loop.replay(dataset, batch_series=batch_series, commits_per_batch=commits_per_batch)
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - c0
    sizes = np.array(
        [
            len(json.dumps(st, separators=(",", ":")))
            for s, st in loop.state_dict().items()
            if s != "warm-up"
        ]
    )
    out = {
        "commits": n,
        "series": len(dataset),
        "seconds": seconds,
        "per_s": n / seconds,
        "cpu_s": cpu,
        "per_cpu_s": n / cpu,
        "found": len(found),
        "state_median_B": float(np.median(sizes)),
        "state_max_B": float(sizes.max()),
    }
    if store is not None:
        row = store._db.execute(
            "SELECT avg(length(state)), max(length(state)) FROM series"
        ).fetchone()
        out["sqlite_state_avg_B"], out["sqlite_state_max_B"] = float(row[0]), float(row[1])
        store.close()
        out["db_bytes_per_commit"] = db.stat().st_size / n
    return out


def serialisation_cost(model: Path, values: np.ndarray) -> float:
    """Median µs to serialise one series' state as the store does (to_dict + JSON)."""
    loop = OnlineTriage.from_model_dir(model, explain="none")
    times = []
    for i, x in enumerate(values):
        loop.process_one("s", str(i), x)
        st = loop.state("s")
        t0 = time.perf_counter_ns()
        json.dumps(loop._state_to_dict(st), separators=(",", ":"))
        times.append(time.perf_counter_ns() - t0)
    return float(np.median(times) / 1e3)


def _child_run(cmd: list[str], stdin_bytes: bytes | None = None) -> dict[str, float]:
    """Run a command; wall seconds, CPU seconds of it and its children, their peak RSS."""
    import resource
    import subprocess
    import threading

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    total_peak = [0.0]
    peaks: dict[int, float] = {}  # peak RSS (MB) per process of the tree: its VmHWM as last read
    # CPU seconds (user + system) per process of the tree as last read: a
    # process's last 0.2 s at most is missed, the total above is exact.
    cpus: dict[int, float] = {}
    stop = threading.Event()

    def high_water_mb(pid: int) -> float:
        # The kernel's own peak RSS of the process (VmHWM), so a peak between
        # two samples is not missed.
        try:
            with open(f"/proc/{pid}/status") as fh:
                for line in fh:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            pass
        return 0.0

    def sample() -> None:
        # The sum of RSS over the command and its worker processes, every 0.2 s
        # (ru_maxrss only gives the largest single process).
        try:
            import psutil
        except ImportError:
            return
        try:
            root = psutil.Process(proc.pid)
        except psutil.Error:
            return
        while not stop.wait(0.2):
            try:
                tree = [root, *root.children(recursive=True)]
                each = {p.pid: p.memory_info().rss / 2**20 for p in tree if p.is_running()}
            except psutil.Error:
                continue
            for pid, mb in each.items():
                peaks[pid] = max(peaks.get(pid, 0.0), mb, high_water_mb(pid))
            for p in tree:
                try:
                    t = p.cpu_times()
                    cpus[p.pid] = t.user + t.system
                except psutil.Error:
                    pass
            total_peak[0] = max(total_peak[0], sum(each.values()))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate(stdin_bytes)
    stop.set()
    sampler.join()
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {err.decode()[-2000:]}")
    return {
        "wall_s": wall,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        # The largest process's own peak (VmHWM) where the sampler read it. Not ru_maxrss
        # of RUSAGE_CHILDREN alone: that is the largest of *every* child this benchmark
        # waited for so far (a docs walkthrough read "largest process 1160 MB, all together
        # 520 MB" after an earlier step's child); it stays the fallback without psutil.
        "peak_mb": max(peaks.values()) if peaks else after.ru_maxrss / 1024,
        "total_peak_mb": total_peak[0],
        # the command's own process first, then its workers, largest first
        "peaks_mb": [peaks.get(proc.pid, 0.0)] + sorted((v for k, v in peaks.items() if k != proc.pid), reverse=True),
        # the same order of processes: the command's own, then the others by CPU
        "cpus_s": [cpus.get(proc.pid, 0.0)] + sorted((v for k, v in cpus.items() if k != proc.pid), reverse=True),
        "stdout_lines": out.count(b"\n"),
    }


def watch_backlog(model: Path, n_lines: int, n_series: int = 1000) -> None:
    """(e) A backlog of JSON lines piped into `triage watch --state` (one process, SQLite store)."""
    import sys

    rng = np.random.default_rng(0)
    per = n_lines // n_series
    values = 100 * (1 + 0.02 * rng.standard_normal((n_series, per)))
    values[:, per // 2 :] *= np.where(rng.random(n_series) < 0.3, 1.2, 1.0)[:, None]
    lines = [
        json.dumps({"series_id": f"s{j}", "commit": f"c{i}", "value": float(values[j, i])})
        for i in range(per)
        for j in range(n_series)
    ]
    work = Path(tempfile.mkdtemp(prefix="bench-watch-"))
    cmd = [sys.executable, "-m", "triage.cli.app", "watch", "--model", str(model), "--state", str(work / "s.db"),
           "--explain", "none"]
    r = _child_run(cmd, ("\n".join(lines) + "\n").encode())
    print(
        f"(e) triage watch --state, {len(lines):,} JSON lines over {n_series:,} series piped at once: "
        f"{r['wall_s']:.1f} s wall = {len(lines) / r['wall_s']:,.0f} commits/s; CPU {r['cpu_s']:.1f} s; "
        f"peak RSS {r['peak_mb']:.0f} MB; {r['stdout_lines']:,} output lines"
    )


def detect_replay(model: Path, preset: str, data: Path | None = None, screen: bool = True, workers: str = "auto") -> None:
    """(f) `triage detect --jobs 2 --workers W` on a synthetic preset (written once as long CSV, or ``data``: that CSV)."""
    import sys

    work = Path(tempfile.mkdtemp(prefix="bench-detect-"))
    if data is None:
        from triage.synthetic import generate_frame

        data = work / f"{preset}.csv"
        frame = generate_frame(preset, seed=0)
        frame[["series_id", "commit", "timestamp", "value"]].to_csv(data, index=False)
        del frame
    import pandas as pd

    for jobs in (2,):
        cmd = [sys.executable, "-m", "triage.cli.app", "detect", "--data", str(data), "--model", str(model),
               "--out", str(work / "found.csv"), "--jobs", str(jobs), "--workers", workers] + ([] if screen else ["--no-screen"])
        r = _child_run(cmd)
        found = sum(1 for _ in open(work / "found.csv")) - 1
        # Counted after the run: a large frame in this process would be
        # inherited by the child before its exec and counted in ru_maxrss.
        ids = pd.read_csv(data, usecols=["series_id", "commit"])
        n_commits = int(ids.groupby("series_id")["commit"].nunique().sum())
        del ids
        print(
            f"(f) triage detect --jobs {jobs} --workers {workers}{'' if screen else ' --no-screen'}, preset {preset} "
            f"({n_commits:,} commits; {found} change points -> {work / 'found.csv'}): {r['wall_s']:.0f} s wall, "
            f"{r['cpu_s']:.0f} CPU-seconds (all processes, loading included), peak RSS of the largest "
            f"process {r['peak_mb']:.0f} MB ({'VmHWM' if r['peaks_mb'][0] else 'ru_maxrss'}), of all its processes together {r['total_peak_mb']:.0f} MB "
            f"(sampled every 0.2 s); peak RSS (VmHWM) of the reading process, then of each other process: "
            f"{', '.join(f'{mb:.0f}' for mb in r['peaks_mb'])} MB; CPU-seconds of the reading process, then of "
            f"each other process (sampled every 0.2 s): {', '.join(f'{c:.1f}' for c in r['cpus_s'])}; "
            f"load average {os.getloadavg()[0]:.1f}"
        )


def replay_only(model: Path, n_series: int, screen: bool = True, drop_states: bool = False) -> None:
    """(b) alone: CPU per commit of an in-memory replay, every compiled kernel loaded beforehand.

    ``drop_states``: states dropped as each group is replayed, as ``triage
    detect``'s workers replay (``keep_states=False``).
    """
    import inspect

    from triage.synthetic import generate, preset_config

    # The same file times code from before the screen existed (PYTHONPATH on a worktree).
    kwargs = {"screen": screen} if "screen" in inspect.signature(OnlineTriage.replay).parameters else {}
    dataset = generate(preset_config("default", n_series=n_series), seed=1)
    loop = OnlineTriage.from_model_dir(model, explain="none")
    dropped = {"keep_states": False} if drop_states else {}
    # Loads every kernel outside the timing (a replay with states dropped has kernels of its own).
    loop.replay(generate(preset_config("default", n_series=3), seed=7), **kwargs, **dropped)
    loop.states.clear()
    c0, t0 = time.process_time(), time.perf_counter()
    found = loop.replay(dataset, **kwargs, **dropped)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    n = dataset.n_commits()
    mode = "" if not kwargs else (", screen" if screen else ", no screen")
    mode += ", states dropped" if drop_states else ""
    print(
        f"(b) replay {len(dataset)} series / {n} commits, memory, one process{mode}: {cpu:.2f} CPU-s, {wall:.2f} s wall = "
        f"{cpu / n * 1e3:.3f} ms of CPU per commit; {len(found)} change points; load average {os.getloadavg()[0]:.1f}"
    )


def breakdown(model: Path) -> None:
    """(i) Where one commit's time goes: median µs of the feature row and its largest parts, and of the model.

    A Pre of 100 commits (level 100, unit noise, seeded) and an After of
    ``K + 1`` values; Pre's cache cleared before each row, as a new commit
    does; ``max_kl_shift`` on Pre's bounded 64-commit window; the model on
    one row (``process_one``) and on a round of 100 rows (a replay).
    """
    from triage.features import fast, pre_state_kernels

    loop = OnlineTriage.from_model_dir(model, explain="none")
    rng = np.random.default_rng(0)
    pre = loop.new_state("s").pre
    pre.learn_many((100 + rng.standard_normal(100)).tolist())
    after = 100 + rng.standard_normal(loop.confirm_after + 1)

    def median_us(fn, reps: int = 3000) -> float:
        fn()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter_ns()
            fn()
            times.append(time.perf_counter_ns() - t0)
        return float(np.median(times) / 1e3)

    def row():
        pre._pre_cache = pre._pre_partial = None
        return pre.features_array(after)

    def pre_chars():
        pre._pre_cache = pre._pre_partial = None
        return pre.pre_characteristics()

    screen = loop._screen_for(True)
    staged = hasattr(pre, "row_into")  # the same file times code from before the screen's stages
    if screen is not None and not staged:
        screen = (screen,)  # one stage: (deferred names, free columns)
    first = screen[0][0] if screen is not None else ()
    out = np.empty(len(loop.feature_names))

    def screened_row():  # the replay's first row (one compiled call), without the first stage's characteristics
        pre._pre_cache = pre._pre_partial = None
        return pre.row_into(after, out, first) if staged else pre.features_array(after, first)

    def second_stage():  # that row completed to the next stage's (only the characteristics freed there)
        pre._pre_cache = None
        pre._pre_partial, pre._partial_key = partial.copy(), first
        return pre.complete_into(out, screen[1][0])

    z = pre_state_kernels.standardised_tail(pre._ring, pre.n, pre.horizon)
    X1 = row()[None, :]
    X100 = X1 * (1 + 0.01 * rng.standard_normal((100, X1.shape[1])))
    if screen is not None and loop._bound is not None:
        free = screen[0][1]
        bound = loop._bound
        screened_row()
        partial = pre._pre_partial.copy()
        stages = ""
        if len(screen) > 1:
            stages = f"; completed to the next stage (without {', '.join(screen[1][0])}) {median_us(second_stage):.1f} µs"
        print(
            f"(i) screened replay: row without {', '.join(first)} {median_us(screened_row):.1f} µs{stages}; "
            f"bound of the model {median_us(lambda: bound(X100, free), 300) / 100:.1f} µs per row in a round of 100"
        )
    print(
        f"(i) feature row {median_us(row):.1f} µs, of which Pre's characteristics {median_us(pre_chars):.1f} µs, "
        f"of which max_kl_shift on {z.size} commits {median_us(lambda: fast.max_kl_shift(z, 10)):.1f} µs; "
        f"model {median_us(lambda: loop._predict(X1)):.1f} µs for one row, "
        f"{median_us(lambda: loop._predict(X100), 300) / 100:.1f} µs per row in a round of 100; "
        f"load average {os.getloadavg()[0]:.1f}"
    )


def real_decisions(model: Path, out: Path, commits_per_batch: int = 16) -> None:
    """(g) Every decision over the real histories, written to ``out`` to compare two versions of the code.

    The 372 untouched histories of ``../shared/data/real/`` and the same
    histories' stable stretches with the real-data benchmark's injected shifts
    (``benchmarks/real_data.py``, mode ``stable``, seed 0), each replayed side
    by side in batches of ``commits_per_batch`` rounds as
    :meth:`OnlineTriage.replay` does, keeping every decision (not only the
    positive ones): series, commit, index, probability (exact, as ``repr``),
    decision, and the alarm a re-check withdrew. Run the same file with
    ``PYTHONPATH`` on a worktree of another commit, then ``--compare-decisions``.
    """
    import csv

    import triage
    from benchmarks.real_data import inject, load_real

    real = load_real(SHARED / "real")
    sets = {"real": real, "injected": inject(real, mode="stable", seed=0)}
    n_rows = 0
    c0 = time.process_time()
    with open(out, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["set", "series", "commit", "index", "probability", "decision", "withdrawn_commit"])
        for name, data in sets.items():
            loop = OnlineTriage.from_model_dir(model, explain="none")
            histories = list(data)
            longest = max(len(h) for h in histories)
            for start in range(0, longest, commits_per_batch):
                records = [
                    (h.series_id, str(h.commits[i]), float(h.values[i]))
                    for h in histories
                    for i in range(start, min(start + commits_per_batch, len(h)))
                ]
                for d in loop.process_many(records):
                    if d is None:
                        continue
                    withdrawn = "" if d.withdrawal is None else d.withdrawal.commit
                    w.writerow([name, d.series, d.commit, d.index, _exact(d.probability), int(d.decision), withdrawn])
                    n_rows += 1
    print(
        f"(g) {n_rows:,} decisions over {len(real)} real histories and {len(sets['injected'])} injected stretches "
        f"written to {out} in {time.process_time() - c0:.0f} CPU-s (code: {Path(triage.__file__).parent})"
    )


def real_replay(model: Path, out: Path, screen: bool = True) -> None:
    """(g) The change points :meth:`OnlineTriage.replay` returns over the real histories (``--real-decisions``' sets).

    Written in ``--real-decisions``' layout (every row positive, none
    withdrawn: a replay leaves withdrawn alarms out), so that
    ``--compare-decisions --positives-only`` compares a screened replay with
    an unscreened one, or with the alarms of ``--real-decisions`` (every
    commit decided in full by ``process_many``) that were not withdrawn.
    """
    import csv

    from benchmarks.real_data import inject, load_real

    real = load_real(SHARED / "real")
    sets = {"real": real, "injected": inject(real, mode="stable", seed=0)}
    n_rows, cpu = 0, 0.0
    predicted: list[int] = []  # rows the model saw in full, per call
    bounded: Counter[int] = Counter()  # rows the screen bounded, per number of free columns (one per stage)
    with open(out, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["set", "series", "commit", "index", "probability", "decision", "withdrawn_commit"])
        for name, data in sets.items():
            loop = OnlineTriage.from_model_dir(model, explain="none")
            predict, bound = loop._predict, loop._bound
            loop._predict = lambda X, _p=predict: (predicted.append(len(X)), _p(X))[1]
            if bound is not None:
                def counted_bound(X, free, _b=bound):
                    bounded[int(free.sum())] += len(X)
                    return _b(X, free)

                loop._bound = counted_bound
            c0 = time.process_time()
            found = loop.replay(data, keep_states=False, screen=screen)
            cpu += time.process_time() - c0
            for d in found:
                w.writerow([name, d.series, d.commit, d.index, _exact(d.probability), int(d.decision), ""])
                n_rows += 1
    n = sum(h.values.size for data in sets.values() for h in data)
    print(
        f"(g) replay{'' if screen else ' without the screen'}: {n_rows:,} change points over {len(real)} real "
        f"histories and {len(sets['injected'])} injected stretches ({n:,} commits) in {cpu:.1f} CPU-s "
        f"({cpu / n * 1e3:.3f} ms per commit; load average {os.getloadavg()[0]:.1f}) -> {out}; "
        f"rows bounded per stage {', '.join(f'{bounded[k]:,}' for k in sorted(bounded, reverse=True)) or 0}, "
        f"rows predicted in full {sum(predicted):,}"
    )


def _positives(frame):
    """The alarms of a decisions file that no later re-check withdrew, without the withdrawal column."""
    withdrawn = set(zip(frame["set"], frame["series"], frame["withdrawn_commit"], strict=True))
    keep = (frame["decision"] == 1).to_numpy() & np.array(
        [(s, r, c) not in withdrawn for s, r, c in zip(frame["set"], frame["series"], frame["commit"], strict=True)],
        dtype=bool,
    )
    return frame[keep].assign(withdrawn_commit="")


def compare_decisions(old: Path, new: Path, positives_only: bool = False) -> None:
    """Exit 1 unless two ``--real-decisions`` files hold the same decisions with the same probabilities (1e-12 relative).

    ``positives_only``: compare only the alarms no re-check withdrew (what a
    replay returns; ``--real-replay`` files hold nothing else).
    """
    import pandas as pd

    keys = ["set", "series", "commit", "index"]
    a = pd.read_csv(old, dtype={"series": str, "commit": str, "withdrawn_commit": str}, keep_default_na=False)
    b = pd.read_csv(new, dtype={"series": str, "commit": str, "withdrawn_commit": str}, keep_default_na=False)
    if positives_only:
        a, b = _positives(a), _positives(b)
    both = a.merge(b, on=keys, how="outer", suffixes=("_old", "_new"), indicator=True)
    unmatched = int((both["_merge"] != "both").sum())
    both = both[both["_merge"] == "both"]
    # An empty cell: no probability (a commit the stream rule held back, the model not asked).
    p_old = pd.to_numeric(both["probability_old"], errors="coerce").to_numpy(float)
    p_new = pd.to_numeric(both["probability_new"], errors="coerce").to_numpy(float)
    none_old, none_new = np.isnan(p_old), np.isnan(p_new)
    rel = np.abs(p_new - p_old)[~(none_old | none_new)] / np.maximum(
        np.abs(p_old[~(none_old | none_new)]), np.finfo(float).tiny)
    same_decision = (both["decision_old"] == both["decision_new"]) & (
        both["withdrawn_commit_old"] == both["withdrawn_commit_new"]
    ) & (none_old == none_new)
    print(
        f"(g) {len(a):,} / {len(b):,} decisions ({int(a['decision'].sum())} / {int(b['decision'].sum())} positive, "
        f"{int((a['withdrawn_commit'] != '').sum())} / {int((b['withdrawn_commit'] != '').sum())} withdrawals); "
        f"in one file only: {unmatched}; decisions or withdrawals differing: {int((~same_decision).sum())}; "
        f"probabilities bit-identical: {int(((p_old == p_new) | (none_old & none_new)).sum()):,} of {len(both):,}, "
        f"largest relative difference {rel.max() if len(rel) else 0.0:.3g}"
    )
    if unmatched or not same_decision.all() or (rel > 1e-12).any():
        raise SystemExit(1)


def _exact(p: float | None) -> str:
    """A probability as ``repr`` (every digit), empty for None (held back by the stream rule)."""
    return "" if p is None else repr(p)


def real_windows(out: Path, per_series: int = 60, seed: int = 0) -> None:
    """(h) ``max_kl_shift`` of windows of the real histories, written to ``out`` (exact, as ``repr``).

    ``per_series`` windows per history, of 12 to 400 commits at seeded random
    places (the batch features' Pre / After windows and the online Pre's 64),
    prepared as the catalogue does; the characteristic whose arithmetic the
    speed work changed. Run the same file on two versions, then ``--compare-windows``.
    """
    import csv

    import pandas as pd

    from triage.features import catalogue, fast

    frame = pd.read_csv(SHARED / "real" / "histories.csv.gz")
    rng = np.random.default_rng(seed)
    n = 0
    with open(out, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["series", "start", "length", "max_kl_shift"])
        for sid, x in frame.groupby("series_id", sort=False)["value"]:
            x = x.to_numpy(float)
            for _ in range(per_series):
                length = int(rng.choice([12, 20, 30, 45, 64, 100, 200, 400]))
                if length >= len(x):
                    continue
                start = int(rng.integers(0, len(x) - length))
                z = catalogue.prepare(x[start : start + length])
                if z is None:
                    continue
                w.writerow([sid, start, length, repr(fast.max_kl_shift(z, 10 if z.size > 10 else 2))])
                n += 1
    print(f"(h) max_kl_shift of {n:,} windows of the real histories written to {out}")


def compare_windows(old: Path, new: Path) -> None:
    """How many ``--real-windows`` values differ, by how much, and whether any differs as the float32 a model reads."""
    import pandas as pd

    a = pd.read_csv(old)
    b = pd.read_csv(new)
    if len(a) != len(b) or not a[["series", "start", "length"]].equals(b[["series", "start", "length"]]):
        raise SystemExit("the two files hold different windows")
    x, y = a["max_kl_shift"].to_numpy(float), b["max_kl_shift"].to_numpy(float)
    diff = x != y
    rel = np.abs(y - x)[diff] / np.abs(x)[diff]
    f32 = int((x.astype(np.float32) != y.astype(np.float32)).sum())
    print(
        f"(h) {len(x):,} windows: max_kl_shift differs in {int(diff.sum()):,} ({diff.mean():.1%}), "
        f"largest relative difference {rel.max() if rel.size else 0.0:.2g}; as float32 (what a model reads) "
        f"in {f32}"
    )
    if f32:
        raise SystemExit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model", type=Path, help="time this window-0 model directory instead of training two"
    )
    parser.add_argument("--series", type=int, default=1000, help="synthetic series replayed in (b)")
    parser.add_argument(
        "--repeats", type=int, default=5, help="passes over TigerBeetle in (a) and (d)"
    )
    parser.add_argument("--batch-series", type=int, default=4096)
    parser.add_argument("--commits-per-batch", type=int, default=16)
    parser.add_argument(
        "--watch-backlog", type=int, default=0,
        help="only (e): pipe this many JSON lines over 1,000 series into `triage watch --state` (needs --model)",
    )
    parser.add_argument(
        "--detect-preset", default=None,
        help="only (f): `triage detect --jobs 2` on this synthetic preset written as long CSV (needs --model)",
    )
    parser.add_argument(
        "--detect-data", type=Path, default=None,
        help="with --detect-preset: the preset's long CSV written before (skips writing it again)",
    )
    parser.add_argument(
        "--detect-workers", default="auto", choices=("auto", "threads", "processes"),
        help="with --detect-preset: `triage detect --workers` (default auto, as triage detect's)",
    )
    parser.add_argument(
        "--replay-only", action="store_true",
        help="only (b), in memory, after a 3-series warm-up: CPU per commit of a replay (needs --model)",
    )
    parser.add_argument(
        "--drop-states", action="store_true",
        help="with --replay-only: keep_states=False, as triage detect's workers replay",
    )
    parser.add_argument(
        "--real-decisions", type=Path, default=None,
        help="only (g): write every decision over the real histories (and their injected stretches) to this CSV",
    )
    parser.add_argument(
        "--compare-decisions", type=Path, nargs=2, metavar=("OLD", "NEW"), default=None,
        help="only (g): compare two --real-decisions files; exit 1 on any difference beyond 1e-12 relative",
    )
    parser.add_argument(
        "--positives-only", action="store_true",
        help="with --compare-decisions: only the alarms no re-check withdrew (what a replay returns)",
    )
    parser.add_argument(
        "--real-replay", type=Path, default=None,
        help="only (g): write the change points OnlineTriage.replay finds over --real-decisions' histories to this CSV",
    )
    parser.add_argument(
        "--no-screen", action="store_true",
        help="with --replay-only, --real-replay or --detect-preset: replay every commit's row in full (no screen)",
    )
    parser.add_argument(
        "--real-windows", type=Path, default=None,
        help="only (h): write max_kl_shift of seeded windows of the real histories to this CSV",
    )
    parser.add_argument(
        "--compare-windows", type=Path, nargs=2, metavar=("OLD", "NEW"), default=None,
        help="only (h): compare two --real-windows files; exit 1 if any float32 value differs",
    )
    parser.add_argument(
        "--breakdown", action="store_true",
        help="only (i): median µs of the feature row, Pre's characteristics, max_kl_shift and the model (needs --model)",
    )
    args = parser.parse_args()
    if args.breakdown:
        breakdown(args.model)
        return
    if args.compare_windows:
        compare_windows(*args.compare_windows)
        return
    if args.real_windows:
        real_windows(args.real_windows)
        return
    if args.compare_decisions:
        compare_decisions(*args.compare_decisions, positives_only=args.positives_only)
        return
    if args.real_replay:
        real_replay(args.model, args.real_replay, screen=not args.no_screen)
        return
    if args.real_decisions:
        real_decisions(args.model, args.real_decisions)
        return
    if args.replay_only:
        replay_only(args.model, args.series, screen=not args.no_screen, drop_states=args.drop_states)
        return
    if args.watch_backlog:
        watch_backlog(args.model, args.watch_backlog)
        return
    if args.detect_preset:
        detect_replay(args.model, args.detect_preset, args.detect_data, screen=not args.no_screen, workers=args.detect_workers)
        return

    from triage.synthetic import generate, preset_config

    work = Path(tempfile.mkdtemp(prefix="bench-online-"))
    if args.model is not None:
        models = {"given": args.model}
    else:
        from triage.features.incremental import PAPER_CHARACTERISTICS

        models = {
            "paper set (18 columns)": train_model(work / "paper", list(PAPER_CHARACTERISTICS)),
            "full catalogue (44 columns)": train_model(work / "full", None),
        }
    values = tigerbeetle()
    t0 = time.perf_counter()
    dataset = generate(preset_config("default", n_series=args.series), seed=1)
    print(
        f"generated {len(dataset)} series, {dataset.n_commits()} commits in {time.perf_counter() - t0:.1f} s"
    )
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f} at start"
    )
    for name, model in models.items():
        print(f"\n### {name}")
        a = latency(model, values, args.repeats)
        print(
            f"(a) TigerBeetle process_one, memory: median {a['median_us']:.1f} µs, p90 {a['p90_us']:.1f}, "
            f"p99 {a['p99_us']:.1f}; {a['positives']:.0f} positives per pass"
        )
        print(f"    explanation of one positive: median {explain_cost(model, values):.0f} µs")
        b = throughput(model, dataset, None, args.batch_series, args.commits_per_batch)
        print(
            f"(b) replay {b['series']} series / {b['commits']} commits, memory: {b['seconds']:.1f} s = "
            f"{b['per_s']:,.0f} commits/s wall; CPU {b['cpu_s']:.1f} s = {b['per_cpu_s']:,.0f} commits "
            f"per CPU-second (1 process); {b['found']} change points"
        )
        print(
            f"(c) state per series (JSON): median {b['state_median_B']:.0f} B, max {b['state_max_B']:.0f} B"
        )
        d = latency(model, values, args.repeats, store_dir=work)
        print(
            f"(d) TigerBeetle process_one, SQLite: median {d['median_us']:.1f} µs, p90 {d['p90_us']:.1f}, "
            f"p99 {d['p99_us']:.1f}; of which state serialisation (to_dict + JSON) "
            f"{serialisation_cost(model, values):.0f} µs median"
        )
        e = throughput(model, dataset, work, args.batch_series, args.commits_per_batch)
        print(
            f"(d) replay, SQLite (one transaction per {args.commits_per_batch} commits x {min(args.batch_series, args.series)} series): "
            f"{e['per_s']:,.0f} commits/s wall, {e['per_cpu_s']:,.0f} per CPU-second; stored state avg {e['sqlite_state_avg_B']:.0f} B, "
            f"max {e['sqlite_state_max_B']:.0f} B; file {e['db_bytes_per_commit']:.0f} B per commit"
        )
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
