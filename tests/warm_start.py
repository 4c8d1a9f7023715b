"""``triage`` in a real process without paying its imports each time: a fork server for the tests.

A fresh interpreter spends 2-5 s of CPU importing pandas, numba, scikit-learn
(through xgboost) and scipy.stats before a command reads its first line, and
the suite starts about a hundred of them for what only a real process shows:
pipes closed under a command, signals, standard input in a real pipe's
batches. Here one server per test process imports all of that once and
forks a child per command; the child takes the caller's standard streams,
directory, umask and command line and runs :func:`triage.cli.app.main`, as
``python -c "from triage.cli.app import main; main()"`` does.

:func:`warm_triage` gives the command prefix. What the test starts is a small
stub (``python -I -S`` with the standard library only), so ``subprocess`` is
used as before: the stub hands its streams (file descriptors 0-2) to the
server, forwards the signals it receives to the child, and exits with the
child's status (a child killed by signal N kills the stub with N). A stub
killed by SIGKILL takes its child with it (the child sees the stub's socket
close).

Only what the forked child would do exactly as a fresh interpreter does is
forked. The stub runs the fresh interpreter itself (``exec``) when:

* an environment variable differs from the server's (imports read them once:
  the locale, ``PYTHON*``, numba's, rich's ``COLUMNS``, ...), except the ones
  in :data:`READ_AT_RUN_TIME`, which the commands read when they run;
* a resource limit differs (a limit set for the test applies from the start),
  except the file-size limit, which the child sets before the command runs:
  the imports write no file, and what the command writes (and the processes
  it starts) is held to it as in a fresh interpreter;
* one of the standard streams is closed, or the stub leads its own process
  group or session (a signal to the group must reach the command's own
  workers too);
* the server cannot be reached.

The child ends as the ``triage`` command does (:func:`triage.cli.app.finish`:
threads joined, atexit functions, stdout and stderr flushed, the imported
modules not torn down, which would write to every page it shares with the
server).

Tests of start-up itself, of signals (a forwarded signal arrives a moment
after the stub's: a test that signals and then closes the command's input
races with it), of a kill -9 (the child outlives a killed stub by the moment
it takes to see the socket close), of resource limits and of the installed
wheel keep starting fresh interpreters directly.
"""

from __future__ import annotations

import atexit
import ctypes
import json
import os
import resource
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

STUB = str(Path(__file__).resolve())
#: What the stub runs when it does not fork: the command the forked child stands for.
FRESH = [sys.executable, "-c", "from triage.cli.app import main; main()"]
#: Variables the commands read when they run (typer's ``envvar=``, the tracking URI, the error
#: log, the dask worker count), and pytest's per-test marker: these may differ from the server's.
READ_AT_RUN_TIME = frozenset({"TRIAGE_MODEL", "TRIAGE_TOKEN", "TRIAGE_ERROR_LOG", "TRIAGE_DASK_WORKERS",
                              "MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI", "PYTEST_CURRENT_TEST", "PWD", "OLDPWD"})
LIMITS = ("RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_DATA", "RLIMIT_CPU", "RLIMIT_STACK",
          "RLIMIT_NPROC", "RLIMIT_CORE")
#: Signals a stub passes on to its child (SIGKILL and SIGSTOP cannot be caught: see the module notes).
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
             signal.SIGALRM)

#: One server per environment that commands are started with, by that environment.
_servers: dict[frozenset, tuple[subprocess.Popen, str]] = {}
#: Servers kept at once per test process: each holds its imports (about 300 MB); the oldest is stopped.
MAX_SERVERS = 2
_retired: list[tuple[subprocess.Popen, str]] = []


def warm_triage(argv0: str = "-c") -> list[str]:
    """The command prefix for ``triage ARGS`` in a forked, already-imported child: ``[*prefix, *ARGS]``.

    ``argv0`` is the child's ``sys.argv[0]``: ``-c`` as in ``python -c "...main()"``, or the console
    script's path. A server starts with the first call for the environment a command started now
    would get, and stops when this process exits.
    """
    env = _inherited_environment()
    key = frozenset((k, v) for k, v in env.items() if k not in READ_AT_RUN_TIME)
    if key in _servers:
        _servers[key] = _servers.pop(key)  # the most recently used last
    else:
        if not _servers:
            atexit.register(_stop)
        while len(_servers) >= MAX_SERVERS:
            # Told to stop, not waited for: it ends once the commands it started have (one may be
            # a test's watcher still running); this process waits for it at exit.
            server, old = _servers.pop(next(iter(_servers)))
            _retired.append((server, old))
            assert server.stdin is not None
            server.stdin.close()
        folder = tempfile.mkdtemp(prefix="triage-warm-")
        address = os.path.join(folder, "server.sock")
        log = open(os.path.join(folder, "server.log"), "wb")  # noqa: SIM115 (the server's whole life)
        start_env = {k: v for k, v in env.items() if k not in READ_AT_RUN_TIME}
        server = subprocess.Popen([sys.executable, STUB, "serve", address], env=start_env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=log, cwd=folder)
        _servers[key] = (server, address)
        assert server.stdout is not None
        if server.stdout.readline() != b"ready\n":
            raise RuntimeError(f"the warm triage server did not start: {Path(folder, 'server.log').read_text()}")
    return [sys.executable, "-I", "-S", STUB, "run", _servers[key][1], argv0]


def _inherited_environment() -> dict[str, str]:
    """The environment a process started now inherits: the C library's, not only ``os.environ``.

    They differ once a library calls setenv() itself: ``import readline`` sets COLUMNS and LINES,
    which rich reads when the CLI's consoles are made.
    """
    libc = ctypes.CDLL(None)
    entries = ctypes.POINTER(ctypes.c_char_p).in_dll(libc, "environ")
    env: dict[str, str] = {}
    i = 0
    while entries[i] is not None:
        key, _, value = os.fsdecode(entries[i]).partition("=")
        env[key] = value
        i += 1
    return env


def _stop() -> None:
    """Stop every server (each ends once the commands it started have ended, or after 10 s) and remove its folder."""
    servers = [*_servers.values(), *_retired]
    for server, _ in servers:
        if server.stdin is not None and not server.stdin.closed:
            server.stdin.close()  # the server's signal to end: EOF on its standard input
    for server, address in servers:
        try:
            # Not longer: a command a test left running (a --follow watcher) must not hold up the run's end.
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(os.path.dirname(address), ignore_errors=True)


def _limits() -> dict[str, list[int]]:
    return {name: list(resource.getrlimit(getattr(resource, name))) for name in LIMITS if hasattr(resource, name)}


def _differences(env: dict[str, str], limits: dict[str, list[int]]) -> list[str]:
    """Why a request cannot be forked (empty when it can): what differs from this server's start."""
    keys = (set(env) | set(_START_ENV)) - READ_AT_RUN_TIME
    # A variable the imports set (sklearn's KMP_*) may come already set to that value: the test
    # process made the same imports before it started the command.
    why = [f"environment {k}={env.get(k)!r} (server {_START_ENV.get(k)!r})" for k in sorted(keys)
           if env.get(k) != _START_ENV.get(k) and not (k not in _START_ENV and env.get(k) == _IMPORT_SET.get(k))]
    return why + [f"limit {k}" for k, v in limits.items() if v != _START_LIMITS.get(k) and k != "RLIMIT_FSIZE"]


# ---- the server ---------------------------------------------------------------------------------------

_START_ENV: dict[str, str] = {}
#: What the server's imports added to or changed in its environment.
_IMPORT_SET: dict[str, str] = {}
_START_LIMITS: dict[str, list[int]] = {}


def serve(address: str) -> None:
    """Import what the commands use, then fork a child per request until standard input closes."""
    # As `python -c` has it: the working directory first (this file's folder is not the command's).
    sys.path[0] = ""
    # Before the imports: `import triage` sets NUMBA_CACHE_DIR and MPLCONFIGDIR, as it does in a fresh one.
    _START_ENV.update(os.environ)
    _START_LIMITS.update(_limits())
    import pandas  # noqa: F401
    import scipy.stats  # noqa: F401
    import xgboost  # noqa: F401

    import triage.cli.app  # noqa: F401
    import triage.online.loop  # noqa: F401
    import triage.training.compiled  # noqa: F401
    import triage.training.model_files  # noqa: F401

    _IMPORT_SET.update({k: v for k, v in os.environ.items() if _START_ENV.get(k) != v})
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(address)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, "accept")
    sel.register(0, selectors.EVENT_READ, "parent")
    sel.register(wake_r, selectors.EVENT_READ, "child")
    children: dict[int, socket.socket] = {}
    os.write(1, b"ready\n")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    closing = False
    while not (closing and not children):
        for key, _ in sel.select():
            if key.data == "parent":
                if not os.read(0, 4096):
                    # No new commands; the running ones still get their exit status to their stubs.
                    closing = True
                    sel.unregister(0)
                    sel.unregister(listener)
                    listener.close()
            elif key.data == "child":
                while True:
                    try:
                        if not os.read(wake_r, 4096):
                            break
                    except BlockingIOError:
                        break
                _reap(children)
            elif not closing:
                conn, _ = listener.accept()
                _start(conn, children, (listener, sel, wake_r, wake_w))


def _reap(children: dict[int, socket.socket]) -> None:
    while children:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is None:
            continue
        print(f"child {pid}: {usage.ru_utime + usage.ru_stime:.2f} s of CPU", file=sys.stderr, flush=True)
        if os.WIFSIGNALED(status):
            message = f"signal {os.WTERMSIG(status)}"
        else:
            message = f"exit {os.waitstatus_to_exitcode(status)}"
        _tell(conn, message.encode())
        conn.close()


def _tell(conn: socket.socket, message: bytes) -> None:
    """Send ``message`` to a stub; one that is gone (killed) has nobody to tell, and the server goes on."""
    try:
        conn.send(message)
    except OSError:
        pass


def _start(conn: socket.socket, children: dict[int, socket.socket], server_fds: tuple) -> None:
    try:
        data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 3)
        request = json.loads(data)
    except (OSError, ValueError):
        conn.close()
        return
    why = _differences(request["env"], request["limits"]) if len(fds) == 3 else ["streams"]
    if why:
        print(f"exec {request['args'][:1]}: {', '.join(why)}", file=sys.stderr, flush=True)
        for fd in fds:
            os.close(fd)
        _tell(conn, b"exec")
        conn.close()
        return
    pid = os.fork()
    if pid == 0:
        _child(conn, fds, request, children, server_fds)  # never returns: the command's exit ends the process
    for fd in fds:
        os.close(fd)
    children[pid] = conn
    _tell(conn, b"forked")  # a stub gone meanwhile: its child sees the socket close and ends


def _child(conn, fds, request, children, server_fds) -> None:
    listener, sel, wake_r, wake_w = server_fds
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    sel.close()
    listener.close()
    os.close(wake_r)
    os.close(wake_w)
    for other in children.values():
        other.close()  # a sibling's stub must see its child alone hold that socket
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.umask(request["umask"])
    resource.setrlimit(resource.RLIMIT_FSIZE, tuple(request["limits"]["RLIMIT_FSIZE"]))
    for key in READ_AT_RUN_TIME:
        if key in request["env"]:
            os.environ[key] = request["env"][key]
        else:
            os.environ.pop(key, None)
    sys.argv = [request["argv0"], *request["args"]]
    threading.Thread(target=_relay, args=(conn,), daemon=True).start()
    from triage.cli.app import finish, main

    try:
        main()  # ends with finish() itself, as a fresh interpreter's `triage` does
        code = 0
    except SystemExit as exc:
        if exc.code is not None and not isinstance(exc.code, int):
            raise
        code = exc.code or 0
    # The child ends as the CLI does, without tearing down what the server imported: that teardown
    # writes to every page the fork shares with the server (0.6-0.8 s of CPU for a command whose
    # own work took 0.06 s).
    finish(code)


def _relay(conn: socket.socket) -> None:
    """In the child: the stub's signals, raised here; the stub gone (killed) ends the child the same way."""
    # Not this thread's to take: a signal taken here would leave the main thread blocked in a read
    # instead of interrupted, as a fresh interpreter's one thread is.
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    while True:
        try:
            data = conn.recv(64)
        except OSError:
            data = b""
        if not data:
            os.kill(os.getpid(), signal.SIGKILL)
        os.kill(os.getpid(), int(data.split()[1]))


# ---- the stub (standard library only: it runs under python -I -S) -------------------------------------

def run(address: str, argv0: str, args: list[str]) -> None:
    """Hand this process's streams to the server's child and end as it ends; else exec a fresh one."""
    fresh = [*FRESH, *args]
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)
        if os.getpgrp() == os.getpid() or os.getsid(0) == os.getpid():
            raise OSError("leads its own process group")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sock.connect(address)
        request = {"argv0": argv0, "args": args, "env": dict(os.environ), "cwd": os.getcwd(),
                   "umask": _umask(), "limits": _limits()}
        socket.send_fds(sock, [json.dumps(request).encode()], [0, 1, 2])
        reply = sock.recv(64)
    except OSError:
        reply = b"exec"
    if reply != b"forked":
        os.execv(fresh[0], fresh)
    for sig in FORWARDED:
        signal.signal(sig, lambda n, _frame: sock.send(f"signal {n}".encode()))
    while True:
        data = sock.recv(64)
        if not data:
            os._exit(1)  # the server went away before the child ended
        kind, number = data.split()
        if kind == b"exit":
            os._exit(int(number))
        signal.signal(int(number), signal.SIG_DFL)
        os.kill(os.getpid(), int(number))
        os._exit(128 + int(number))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        run(sys.argv[2], sys.argv[3], sys.argv[4:])
