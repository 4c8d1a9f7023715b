"""Running a command over many series on a dask.distributed cluster (``--scheduler``).

Every job of the product that works series by series (detecting, labelling,
scoring, extracting features) gives the same answer whether its series are
processed together or in parts, because no series reads another. So the
cluster work is one pattern, written once here:

* :func:`partition_of` puts each series in a fixed partition (CRC-32 of its
  id, modulo the number of partitions): the same series always lands in the
  same partition, on any machine and in any run;
* :func:`map_series` sends each partition (a :class:`~triage.core.history.Dataset`
  of its series) with the function to the cluster and returns the results in
  partition order; :func:`map_frames` concatenates DataFrame results back into
  the input's series order, so the output equals the single-process output;
* :func:`joblib_on` runs the joblib-parallel steps (feature extraction over
  chunks of series, the 100-split evaluation protocol) on the cluster through
  joblib's dask backend.

``scheduler``: ``None`` = in this process, no dask; ``"local"`` = a
``LocalCluster`` started for the call (processes, one thread each, as many
workers as cores, or ``TRIAGE_DASK_WORKERS``); anything else = the address of
a running scheduler (``tcp://host:8786``).

**A fleet of online watchers** (``triage watch``) is partitioned the same way,
but not through dask: the online state store allows one writer per store, so
each watcher owns one partition (``partition_of(series_id, k) == its number``),
keeps its own store file, and the feed is routed by that rule; adding
watchers means choosing a new ``k`` and replaying each new partition's series
into its new store (states are rebuilt by replay, never shared by two writers).
"""

from __future__ import annotations

import os
import signal
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pandas as pd

from triage.core.errors import InputError
from triage.core.history import Dataset

LOCAL = "local"
#: Seconds to wait for a remote scheduler before saying it cannot be reached
#: (dask's default, 30 s, looked like a hang and then ended as an internal error).
CONNECT_TIMEOUT = 10.0
#: Seconds to wait for a connected scheduler's first worker before saying it has none: long
#: enough for an autoscaled cluster's first worker to start, short of looking like a hang.
#: Also how long a local cluster's workers may take to start.
WORKER_TIMEOUT = 120.0


def partition_of(series_id: str, n_partitions: int) -> int:
    """The fixed partition of a series (CRC-32 of its id: stable across runs and machines)."""
    return zlib.crc32(str(series_id).encode("utf-8")) % n_partitions


def split(dataset: Dataset, n_partitions: int) -> list[Dataset]:
    """The non-empty partitions of ``dataset``, each keeping the input's series order."""
    groups: dict[int, list[str]] = {}
    for sid in dataset.series_ids:
        groups.setdefault(partition_of(sid, n_partitions), []).append(sid)
    return [dataset.subset(groups[k]) for k in sorted(groups)]


@contextmanager
def client(scheduler: str | None) -> Iterator[Any]:
    """A dask ``Client`` for ``scheduler`` (see module docstring); ``None`` yields ``None``."""
    if scheduler is None:
        yield None
        return
    with _stops_kept():
        with _client(scheduler) as c:
            yield c


@contextmanager
def _client(scheduler: str) -> Iterator[Any]:
    from distributed import Client, LocalCluster

    if scheduler == LOCAL:
        _refuse_while_spawning()
        workers = _local_workers()
        failed: Exception | None = None
        with _stops_held() as held:
            try:
                cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                       # a port of its own: two runs at once warned "Port 8787 is already in use"
                                       dashboard_address="127.0.0.1:0",
                                       # dask waits for a starting worker for ever; a stop is held meanwhile
                                       death_timeout=WORKER_TIMEOUT,
                                       preload=[__name__])  # dask_setup below: the workers leave Ctrl-C to us
            except Exception as exc:  # noqa: BLE001 (dask says only "Nanny failed to start.")
                failed = exc
        if failed is not None:
            held.deliver()  # asked to stop meanwhile: that, not the failure, is what the user meant
            raise _local_cluster_failed(failed) from None
        with _quiet_when_interrupted(cluster) as interrupted, cluster:
            try:
                held.deliver()  # a stop asked for while the cluster started acts now that it can be closed
                with Client(cluster) as c:
                    yield c
            except KeyboardInterrupt:
                interrupted()
                raise
    else:
        try:
            # The handshake first, with a deadline: dask's own has none (a service that accepts
            # and never answers, the dashboard's HTTP port, hung for ever) and reads whatever a
            # service that talks first sends as a frame length (MemoryError: an internal error).
            _probe(scheduler, CONNECT_TIMEOUT)
            remote = Client(scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError, ValueError, _NotAScheduler) as exc:  # refused, timed out, not an address
            raise InputError("--scheduler", None, f"cannot reach a dask scheduler at {scheduler!r} "
                             f"({_first_line(exc)}); start one (`dask scheduler`) or give --scheduler local") from None
        with remote as c, _without_reconnect_note():
            try:
                # Tasks sent to a scheduler without workers wait for one for ever: the command
                # hung without a word (a scheduler started, its workers not yet, or gone).
                c.wait_for_workers(1, timeout=WORKER_TIMEOUT)
            except TimeoutError:
                raise InputError(
                    "--scheduler",
                    None,
                    f"the dask scheduler at {scheduler!r} has no workers (none joined within "
                    f"{WORKER_TIMEOUT:g} s); start some (`dask worker {scheduler}`) or give --scheduler local",
                ) from None
            except OSError as exc:
                raise _connection_lost(scheduler, exc) from None
            try:
                yield c
            except Exception as exc:
                # The scheduler gone mid-run (stopped, its machine down) ended as an internal
                # error: FutureCancelledError (scheduler-connection-lost) or dask's reconnect OSError.
                if not _lost(c, exc):
                    raise
                raise _connection_lost(scheduler, exc) from None


class _ReconnectNote:
    """A logging filter dropping dask's "Failed to reconnect to scheduler" line (our own error says it)."""

    def filter(self, record: Any) -> bool:
        return not str(record.getMessage()).startswith("Failed to reconnect to scheduler")


@contextmanager
def _without_reconnect_note() -> Iterator[None]:
    """While a remote scheduler is in use, dask's client does not log its lost connection.

    A scheduler killed mid-run printed "... distributed.client - ERROR - Failed
    to reconnect to scheduler after 10.00 seconds, closing client" before the
    command's own line saying the same (:func:`_connection_lost`).
    """
    import logging

    logger, note = logging.getLogger("distributed.client"), _ReconnectNote()
    logger.addFilter(note)
    try:
        yield
    finally:
        logger.removeFilter(note)


#: The signals that stop a command: Ctrl-C's, and systemd's / ``kill``'s.
STOPS = frozenset({signal.SIGINT, signal.SIGTERM})


#: Seconds after which a stop whose exception Python dropped is sent again.
REDELIVER = 0.05


class _KeptStop:
    """A stop signal's handler whose exception, if Python drops it, is raised again.

    Python runs a signal's handler in the main thread wherever that thread is,
    also inside a garbage-collector callback, a weakref callback or a
    ``__del__``; an exception raised there is printed ("Exception ignored in:
    ...", with a traceback) and dropped. dask's scheduler and workers register
    such callbacks in the process that runs them (``distributed.gc.GCDiagnosis``,
    weak sets), so a Ctrl-C during a ``--scheduler local`` run was now and then
    printed as ignored and lost: the command went on (CI: a test waited 30 s
    for it to end). :func:`_stops_kept` sees the drop (``sys.unraisablehook``),
    says nothing of it, and sends the signal to the main thread again
    :data:`REDELIVER` seconds later.
    """

    def __init__(self, handler: Callable[[int, Any], Any]) -> None:
        self.handler = handler
        self.raised: list[tuple[BaseException, int]] = []  # what the handler raised, and for which signal

    def __call__(self, signum: int, frame: Any) -> Any:
        try:
            return self.handler(signum, frame)
        except BaseException as exc:
            self.raised.append((exc, signum))
            raise

    def dropped(self, exc: BaseException | None) -> int | None:
        """The signal whose handler raised ``exc``, or None when it is not one of ours."""
        return next((signum for raised, signum in self.raised if raised is exc), None)


@contextmanager
def _stops_kept() -> Iterator[None]:
    """Within the block, Ctrl-C and SIGTERM are never lost where Python drops exceptions (:class:`_KeptStop`).

    Only the main thread sets handlers, and only a handler that is a Python
    callable is wrapped; the handlers and ``sys.unraisablehook`` are put back
    when the block ends. Other dropped exceptions go to the hook as before.
    """
    import sys

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    main = threading.get_ident()
    kept: dict[int, _KeptStop] = {}
    previous: dict[int, Any] = {}
    for signum in STOPS:
        handler = signal.getsignal(signum)
        if callable(handler) and not isinstance(handler, _KeptStop):
            kept[signum] = _KeptStop(handler)
            previous[signum] = signal.signal(signum, kept[signum])
    hook = sys.unraisablehook

    def unraisable(info: Any) -> None:
        for stop in kept.values():
            if (signum := stop.dropped(info.exc_value)) is not None:
                threading.Timer(REDELIVER, signal.pthread_kill, (main, signum)).start()
                return
        hook(info)

    sys.unraisablehook = unraisable
    try:
        yield
    finally:
        sys.unraisablehook = hook
        for stop, before in previous.items():
            signal.signal(stop, before)


class _HeldStops:
    """The stop signals that arrived while held, to deliver once it is safe."""

    def __init__(self) -> None:
        self.pending: list[int] = []
        self.previous: dict[int, Any] = {}  # the handlers replaced (and signals blocked) while held

    def hold(self, signum: int, frame: Any) -> None:
        if signum not in self.pending:
            self.pending.append(signum)

    def release(self) -> None:
        if not self.previous:
            return
        # Taken from the kernel's pending set, not unblocked into the old handlers: they would
        # raise KeyboardInterrupt here, before the caller is where the cluster can be closed.
        while (info := signal.sigtimedwait(STOPS, 0)) is not None:
            self.hold(info.si_signo, None)
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        self.previous.clear()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)

    def deliver(self) -> None:
        """Raise the held signals through their own handlers (Ctrl-C's KeyboardInterrupt, ...)."""
        pending, self.pending = self.pending, []
        for signum in pending:
            signal.raise_signal(signum)


@contextmanager
def _stops_held() -> Iterator[_HeldStops]:
    """Hold Ctrl-C and SIGTERM while a ``LocalCluster`` starts; the caller delivers them after.

    Interrupted while a worker was still starting, the cluster was never
    assigned, so nothing here closed it: dask's exit hook did, and printed an
    ``AssertionError: Status.init`` traceback (a worker not yet running cannot
    be closed as a running one). The signals are blocked, not only handled:
    the threads and worker processes started meanwhile inherit the mask, so a
    terminal's Ctrl-C (sent to the whole process group) does not end a worker
    in the middle of its imports with a traceback of its own; :func:`dask_setup`
    unblocks them in each worker once it can take them quietly (as Python's
    multiprocessing does for its resource tracker). Only the main thread sets
    handlers: elsewhere nothing is held.
    """
    held = _HeldStops()
    if threading.current_thread() is threading.main_thread():
        from multiprocessing import resource_tracker

        # Started by the cluster's first queue, the tracker would unblock both signals in the
        # thread that started it (the cluster's event loop), and from there in the workers.
        resource_tracker.ensure_running()
        for signum in STOPS:
            held.previous[signum] = signal.signal(signum, held.hold)  # a thread started earlier may take one
        signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    try:
        yield held
    finally:
        held.release()


def dask_setup(worker: Any) -> None:
    """Set up a worker of the local cluster (a dask preload): SIGINT only silences its logging.

    Ctrl-C in a terminal reaches the whole process group: each worker of
    ``--scheduler local`` printed a KeyboardInterrupt traceback of its own
    (50-120 lines in all) while this process stopped the cluster anyway. The
    process that owns the cluster stops it; a worker that receives SIGINT (from
    the terminal, or from :func:`_quiet_when_interrupted`) only stops logging,
    because what dask says while that cluster is taken down under a running
    task (a cancelled instruction, a heartbeat to a scheduler already gone,
    with its traceback) is noise to the user who asked it to stop.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _silence_logging)
    # started while the command held them (see _stops_held): a stop that came meanwhile arrives now
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)


def _silence_logging(signum: int, frame: Any) -> None:
    import logging

    logging.disable(logging.CRITICAL)


@contextmanager
def _quiet_when_interrupted(cluster: Any) -> Iterator[Callable[[], None]]:
    """Yield the call that makes ``cluster``'s stop after an interruption quiet.

    The call sends SIGINT to each worker process (see :func:`dask_setup`; it
    reaches them when only this process was signalled, as by SIGTERM) and
    silences dask's logging here until the block ends: the nannies said
    "Worker process still alive after 4.0 seconds, killing" of a worker busy
    in a task. It then closes the nannies with :data:`STOP_GRACE` for their
    workers rather than dask's 4 s. Logging is as before once the block has ended.
    """
    import logging

    before = logging.root.manager.disable
    silenced = False

    def interrupted() -> None:
        nonlocal silenced
        for nanny in list(getattr(cluster, "workers", {}).values()):
            pid = getattr(nanny, "pid", None)
            if pid:
                try:
                    os.kill(pid, signal.SIGINT)
                except OSError:  # gone already
                    pass
        logging.disable(logging.CRITICAL)
        silenced = True
        # The run is abandoned: a worker busy in a task need not be waited for. dask's close gives
        # it 4 s before killing it, which was most of the wait after Ctrl-C.
        nannies = list(getattr(cluster, "workers", {}).values())
        try:
            cluster.sync(_close_nannies, nannies, STOP_GRACE)
        except Exception:  # noqa: BLE001 - the cluster's own close still follows
            pass

    try:
        yield interrupted
    finally:
        if silenced:
            logging.disable(before)


#: Seconds an interrupted run's busy workers get before their nannies kill them.
STOP_GRACE = 0.5


async def _close_nannies(nannies: list[Any], grace: float) -> None:
    import asyncio

    await asyncio.gather(*(n.close(timeout=grace, reason="interrupted") for n in nannies), return_exceptions=True)


def _refuse_while_spawning() -> None:
    """Refuse a local cluster asked for by a worker process of a local cluster as it starts.

    The local cluster's workers are spawned processes, which first run the
    calling script again as ``__mp_main__``: a script that calls triage
    without an ``if __name__ == "__main__":`` guard asked, in each worker, for
    a cluster of its own, and every run ended in "internal error:
    RuntimeError: Nanny failed to start." with multiprocessing's
    bootstrapping traceback once per worker.
    """
    import multiprocessing

    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise InputError("--scheduler", None, "local: asked for again while a worker process of the local dask cluster "
                         "was starting, which runs the calling script again; put the code that calls triage under "
                         "`if __name__ == \"__main__\":`")


def _local_cluster_failed(exc: BaseException) -> InputError:
    """The error for a ``LocalCluster`` that did not start, with what to do about it."""
    import multiprocessing

    chain: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in chain:
        chain.append(link)
        link = link.__cause__ or link.__context__
    if any(isinstance(e, TimeoutError) for e in chain):
        # dask then says only "Status.starting" (an assertion in its clean-up)
        return InputError("--scheduler", None, f"local: the local dask cluster's workers did not start within "
                          f"{WORKER_TIMEOUT:g} s (a machine this busy, or a worker stuck in its imports); try again, "
                          "or give the address of a running dask scheduler, or no --scheduler")
    try:
        multiprocessing.get_context("spawn").Lock()
    except OSError as lock:  # a sandbox without a writable /dev/shm: no process can be started
        cause = (f"this machine lets no process lock be made ({_first_line(lock)}; Python's multiprocessing needs "
                 "a writable /dev/shm)")
    else:
        cause = ("from a Python script, put the code that calls triage under `if __name__ == \"__main__\":` "
                 "(the workers are spawned processes, which run the script again)")
    return InputError("--scheduler", None, f"local: the local dask cluster did not start ({_first_line(exc)}); "
                      f"{cause}; or give the address of a running dask scheduler, or no --scheduler")


def _lost(c: Any, exc: BaseException) -> bool:
    """Whether ``exc`` ended the work because the client lost its scheduler."""
    from distributed.client import FutureCancelledError

    if isinstance(exc, FutureCancelledError) and "connection-lost" in str(getattr(exc, "reason", "")):
        return True
    return getattr(c, "status", "running") in ("closing", "closed")


def _connection_lost(scheduler: str, exc: BaseException) -> InputError:
    return InputError(
        "--scheduler",
        None,
        f"the connection to the dask scheduler at {scheduler!r} was lost during the run "
        f"({_first_line(exc)}); run again once it is back, or give --scheduler local",
    )


class _NotAScheduler(Exception):
    """Something answered at the address, but not as a dask scheduler does."""


def _resolve(address: str) -> None:
    """Raise OSError at once when the address's host name does not resolve, or its port refuses.

    dask's ``connect`` retried such a name for its whole timeout (13 s) and the
    error then asked whether the port was the dashboard's.
    """
    import socket

    from distributed.comm.addressing import parse_address, parse_host_port

    scheme, location = parse_address(address)
    if scheme not in ("tcp", "tls"):
        return
    host, port = parse_host_port(location)
    try:
        socket.getaddrinfo(host, port)
    except socket.gaierror as exc:
        raise OSError(f"the host name {host!r} does not resolve: {exc.strerror or exc}") from None
    # A refused connection is known at once, but dask's connect retries it for its whole
    # timeout, and the error then asked whether the port was the dashboard's.
    try:
        # (a short wait: a host dropping the attempt silently is left to dask's connect,
        # within the handshake's deadline, not made to wait twice)
        socket.create_connection((host, port), timeout=min(2.0, CONNECT_TIMEOUT)).close()
    except ConnectionRefusedError:
        raise OSError(f"nothing listens at {host}:{port}: connection refused") from None
    except OSError:
        pass  # unreachable or slow: dask's own connect says so, within its deadline


def _probe(address: str, timeout: float) -> None:
    """Connect to ``address`` and exchange dask's handshake, all within ``timeout`` seconds.

    Raises OSError / ValueError as dask's ``connect`` does (refused, no such
    host, not an address), TimeoutError when the whole exchange takes longer,
    and :class:`_NotAScheduler` when the peer's answer is no dask handshake.
    """
    import asyncio

    from distributed.comm import connect
    from distributed.security import Security

    _resolve(address)
    # The connection arguments the Client will use (TLS certificates from dask's configuration).
    args = Security().get_connection_args("client")

    async def exchange() -> None:
        comm = await connect(address, timeout=timeout, **args)
        await comm.close()

    def run() -> None:
        try:
            asyncio.run(asyncio.wait_for(exchange(), timeout))
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 (handed to the caller's thread)
            outcome.append(exc)

    # In a thread of its own, with its own event loop: the caller may be running one (a notebook
    # calling map_series), where asyncio.run refuses to start.
    outcome: list[BaseException | None] = []
    thread = threading.Thread(target=run, name="dask-handshake-probe", daemon=True)
    thread.start()
    thread.join(timeout + 5.0)
    try:
        if not outcome:
            raise TimeoutError
        if outcome[0] is not None:
            raise outcome[0]
    except TimeoutError:
        raise TimeoutError(
            f"no dask handshake from {address} within {timeout:g} s: is it a dask scheduler's address "
            "(its port, 8786 by default, not the dashboard's)?"
        ) from None
    except (OSError, ValueError):
        raise
    except MemoryError:
        # dask read the first bytes of the reply as a frame length (exabytes): no dask message.
        raise _NotAScheduler("something answers there, but its reply is no dask message") from None
    except Exception as exc:  # noqa: BLE001 (a TLS configuration, a protocol not installed, a bad reply)
        raise _NotAScheduler(f"the dask handshake failed: {_first_line(exc)}") from None


def _local_workers() -> int:
    """The local cluster's worker count: ``TRIAGE_DASK_WORKERS``, else the machine's cores.

    Checked here: ``int()``'s own message did not name the variable, and a
    cluster of 0 (or fewer) workers waited for its first worker for ever.
    """
    text = os.environ.get("TRIAGE_DASK_WORKERS", "").strip()
    if not text:
        return os.cpu_count() or 1
    try:
        workers = int(text)
    except ValueError:
        workers = 0
    if workers < 1:
        raise InputError("TRIAGE_DASK_WORKERS", None, f"must be a whole number of workers >= 1 "
                         f"(for --scheduler local), got {text!r}")
    return workers


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def map_series(
    fn: Callable[..., Any], dataset: Dataset, scheduler: str | None, *args: Any,
    n_partitions: int | None = None, **kwargs: Any,
) -> list[Any]:
    """``fn(partition, *args, **kwargs)`` for each partition of ``dataset``, on ``scheduler``.

    Without a scheduler the whole dataset is one partition, run here.
    ``n_partitions`` defaults to four per worker (small enough parts to
    balance uneven series, few enough to keep the overhead low).
    """
    if scheduler is None:
        return [fn(dataset, *args, **kwargs)]
    with client(scheduler) as c:
        k = n_partitions or 4 * max(1, len(c.scheduler_info().get("workers", {})))
        parts = split(dataset, min(k, max(1, len(dataset))))
        futures = [c.submit(fn, part, *args, pure=False, **kwargs) for part in parts]
        _wait_for(c, futures, scheduler)
        return c.gather(futures)


#: Seconds between two looks at the futures of :func:`map_series` (and at the cluster's workers).
POLL = 0.1


def _wait_for(c: Any, futures: list[Any], scheduler: str) -> None:
    """Return when every future is done (result or error); refuse a cluster left without workers.

    Tasks whose workers all died (killed, their machines gone) wait for a new
    worker for ever: the command hung without a word. It now ends with an
    error once the cluster has had no worker for :data:`WORKER_TIMEOUT`
    seconds. Waiting by looking (not in ``gather``) also lets Ctrl-C end the
    command without asyncio's "Task exception was never retrieved ...
    AllExit" tracebacks, one per part left.
    """
    import time

    workerless = _Workerless()
    last_look = time.monotonic()
    while not all(f.done() for f in futures):
        time.sleep(POLL)
        now = time.monotonic()
        if now - last_look < 1.0:
            continue
        last_look = now
        if workerless.too_long(c, now):
            c.cancel(futures)
            raise _every_worker_lost(scheduler)


class _Workerless:
    """How long a cluster has been without any worker, from one look at it per call."""

    def __init__(self) -> None:
        self.since: float | None = None

    def too_long(self, c: Any, now: float) -> bool:
        """Whether the cluster has had no worker for :data:`WORKER_TIMEOUT` seconds at ``now``."""
        if c.nthreads():
            self.since = None
            return False
        if self.since is None:
            self.since = now
        return now - self.since >= WORKER_TIMEOUT


def _every_worker_lost(scheduler: str) -> InputError:
    return InputError(
        "--scheduler",
        None,
        f"the dask scheduler at {scheduler!r} lost every worker during the run (none for "
        f"{WORKER_TIMEOUT:g} s); start some (`dask worker ADDRESS`) and run again, or give --scheduler local",
    )


def map_frames(
    fn: Callable[..., pd.DataFrame], dataset: Dataset, scheduler: str | None, *args: Any,
    n_partitions: int | None = None, **kwargs: Any,
) -> pd.DataFrame:
    """:func:`map_series` for functions returning one row block per series (a ``series_id`` column).

    The blocks are put back in the input's series order (rows of one series
    keep their order), so the result equals ``fn(dataset)``.
    """
    frames = map_series(fn, dataset, scheduler, *args, n_partitions=n_partitions, **kwargs)
    # A partition without rows returns an empty frame whose columns have no
    # dtype to speak of (object): left in, it would change the dtypes of the whole.
    full = [f for f in frames if len(f)]
    if len(full) <= 1:
        return full[0].reset_index(drop=True) if full else frames[0]
    frame = pd.concat(full, ignore_index=True)
    rank = {sid: i for i, sid in enumerate(dataset.series_ids)}
    order = frame["series_id"].map(rank).to_numpy()
    return frame.iloc[pd.Series(order).sort_values(kind="stable").index].reset_index(drop=True)


@contextmanager
def joblib_on(scheduler: str | None, n_jobs: int) -> Iterator[int]:
    """Run joblib-parallel steps inside the block on ``scheduler``; yields the ``n_jobs`` to pass.

    Without a scheduler nothing changes (yields ``n_jobs``). With one, joblib's
    dask backend sends each task to the cluster and ``n_jobs`` becomes -1
    (every worker).
    """
    if scheduler is None:
        yield n_jobs
        return
    import joblib

    with client(scheduler) as c, joblib.parallel_config(backend="dask"), _workers_watched(c, scheduler):
        yield -1


@contextmanager
def _workers_watched(c: Any, scheduler: str) -> Iterator[None]:
    """End the block with :func:`_wait_for`'s error once the cluster has had no worker for
    :data:`WORKER_TIMEOUT` seconds.

    joblib's dask backend waits for its tasks inside joblib, where no loop of
    ours can look at the workers: when every worker died, ``train`` and
    ``evaluate`` with ``--scheduler`` waited for ever. A thread looks instead
    and interrupts the main thread (a real SIGINT: a simulated one waits until
    joblib's wait returns), whose KeyboardInterrupt becomes the error. A
    process started with Ctrl-C ignored (``nohup triage train ... &`` from a
    script) keeps ignoring it: only the watch's own interrupt is taken then.
    """
    import signal
    import threading
    import time

    handler = signal.getsignal(signal.SIGINT)
    if isinstance(handler, _KeptStop):
        handler = handler.handler
    if threading.current_thread() is not threading.main_thread() or \
            handler not in (signal.default_int_handler, signal.SIG_IGN):
        yield  # the signal would land elsewhere (another thread, a handler of the caller's)
        return
    main = threading.get_ident()
    done = threading.Event()
    lost = threading.Event()
    ending = threading.Event()  # the block's own error is being raised: no interrupt from here on
    lock = threading.Lock()  # the block's end and the interrupt never cross
    ignored = handler is signal.SIG_IGN

    def only_when_lost(signum: int, frame: Any) -> None:
        # started with Ctrl-C ignored (`nohup cmd &` in a script): it stays ignored; only the watch interrupts
        if lost.is_set() and not ending.is_set():
            raise KeyboardInterrupt

    def look() -> None:
        workerless = _Workerless()
        while not done.wait(1.0):
            try:
                lost_them = workerless.too_long(c, time.monotonic())
            except Exception:  # noqa: BLE001 (the scheduler gone: the block's own error says so)
                return
            if lost_them:
                # Python's own handler is protected from being dropped by _stops_kept; the one
                # put in for an ignored Ctrl-C is not, so it is sent again each second until the end.
                while True:
                    with lock:
                        if done.is_set():
                            return
                        lost.set()
                        signal.pthread_kill(main, signal.SIGINT)
                    if not ignored or done.wait(1.0):
                        return

    before = signal.signal(signal.SIGINT, only_when_lost) if ignored else None
    watcher = threading.Thread(target=look, name="triage-workers-watch", daemon=True)
    watcher.start()
    try:
        yield
    except KeyboardInterrupt:
        ending.set()
        if not lost.is_set():
            raise
        raise _every_worker_lost(scheduler) from None
    finally:
        ending.set()
        with lock:
            done.set()
        watcher.join()
        if ignored:
            signal.signal(signal.SIGINT, before)
