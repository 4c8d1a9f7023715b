"""Workspace commands: ``triage serve``, ``triage labels export|agreement``.

``serve``     the triage workspace, a local web application
              (:mod:`triage.workspace.app`) where sheriffs decide alerts;
``labels``    the labels store those decisions go to
              (:mod:`triage.workspace.store`): export it in the long layout,
              print the model's precision and recall against it by week.

``triage train --labels FILE`` (:mod:`triage.cli.training`) trains on the data
with the store's decisions overlaid.
"""

from __future__ import annotations

import getpass
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from triage.cli.options import DATA_HELP, Aggregate, Branch, TrimWarmup
from triage.cli.validation import check_table_suffix, output_file

console = Console()
labels_app = typer.Typer(help="The workspace's labels store: export decisions, agreement by week.", no_args_is_help=True)

LABELS_HELP = "SQLite labels store the decisions go to (created when missing)."


def _default_sheriff() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers)
        return os.environ.get("USER", "sheriff")


def serve(
    data: Annotated[Path, typer.Option("--data", help=DATA_HELP)],
    labels: Annotated[Path, typer.Option("--labels", help=LABELS_HELP)],
    candidates: Annotated[Path | None, typer.Option("--candidates", help="Detector candidates (any layout `triage score` reads); default: the candidates labelled in --data.")] = None,
    model: Annotated[str | None, typer.Option("--model", envvar="TRIAGE_MODEL", help="Model for P(true) and the model's call on every alert: `default` (the bundled scoring model), a bundled name, a directory written by `triage train` or models:/name@alias from the registry; omitted or none: no model column.")] = None,
    host: Annotated[str, typer.Option("--host", help="Address to bind; anything but loopback needs --token.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on.")] = 8765,
    token: Annotated[str | None, typer.Option("--token", envvar="TRIAGE_TOKEN", help="Access token every request must carry (required off loopback; or $TRIAGE_TOKEN).")] = None,
    commit_url: Annotated[str | None, typer.Option("--commit-url", help="Commit link template, e.g. https://github.com/o/r/commit/{commit}.")] = None,
    sheriff: Annotated[str | None, typer.Option("--sheriff", help="Name recorded with decisions when the page gives none (default: your user name).")] = None,
    newest_model: Annotated[str | None, typer.Option("--newest-model", help="Model for the alerts fewer than 13 commits from their series' end, as `triage score --newest-model` (e.g. scoring-newest; none: --model scores them too). Default: the one --model's manifest names, if any.")] = None,
    aggregate: Aggregate = "mean",
    trim_warmup: TrimWarmup = "none",
    branch: Branch = None,
) -> None:
    """Serve the triage workspace: the alert queue, series plots, one-click decisions, agreement by week."""
    from triage.cli.validation import check_aggregation
    from triage.core.atomic import is_stdio
    from triage.workspace.app import (
        LOOPBACK_NAMES,
        check_commit_url,
        check_host,
        create_app,
        is_loopback,
    )

    check_aggregation(aggregate, trim_warmup)
    try:
        check_host(host, token)
        check_commit_url(commit_url)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    if candidates is not None and is_stdio(data) and is_stdio(candidates):
        # The data reads standard input to its end: the candidates would be an empty file, no alert.
        raise typer.BadParameter("--data and --candidates cannot both be - (one standard input)")
    # The port is taken before anything is built: a port in use fails at once, and
    # leaves no new labels store behind; --port 0 then knows the port it got.
    sock = _listening_socket(host, port)
    try:
        ws = build_workspace(data, labels, candidates, model, commit_url=commit_url,
                             sheriff=sheriff or _default_sheriff(), token=token, newest_model=newest_model,
                             reading={"aggregate": aggregate, "trim_warmup": trim_warmup, "branch": branch})
    except BaseException:
        sock.close()
        raise
    if token is None and is_loopback(host):
        # No token: the Host header is the only thing telling this machine's browser tabs
        # from a page re-pointed at 127.0.0.1 (DNS rebinding).
        ws.allowed_hosts = LOOPBACK_NAMES | {host.lower()}
    import uvicorn

    url = _address(host, sock.getsockname()[1], token)
    console.print(f"{len(ws.alerts):,} alerts from {len(ws.dataset):,} series; decisions go to [bold]{escape(str(labels))}[/]", soft_wrap=True)
    _note_foreign(ws, labels)
    console.print(f"open [bold]{escape(url)}[/] (Ctrl-C stops)", soft_wrap=True)
    uvicorn.Server(uvicorn.Config(create_app(ws), log_level="warning")).run(sockets=[sock])


def _note_foreign(ws, labels: Path) -> None:
    """Say so when the store holds decisions on series this data does not have (a store from another data set?).

    They are kept, untouched, but no alert of this queue shows them, so a sheriff
    starting on the wrong store would otherwise see an empty record and not know why.
    """
    current = ws.store.current()
    foreign = sorted({sid for sid, _commit in current if sid not in ws.dataset})
    if not foreign:
        return
    n = sum(1 for sid, _commit in current if sid not in ws.dataset)
    console.print(f"note: {n:,} of the {len(current):,} decided alerts in {escape(str(labels))} are on "
                  f"{len(foreign):,} series not in this data (e.g. {escape(repr(foreign[0][:120]))}): "
                  "a labels store from another data set? They are kept, but no alert here shows them.",
                  soft_wrap=True)


def _address(host: str, port: int, token: str | None) -> str:
    """The URL to open: an IPv6 literal in brackets, the token encoded (a '#' or '&' in it would cut it short)."""
    from urllib.parse import quote

    shown = "localhost" if host in ("127.0.0.1", "::1") else f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/" + (f"?token={quote(token, safe='')}" if token else "")


def _listening_socket(host: str, port: int):
    """A socket bound to ``host:port``; a port in use (or a host not on this machine) is a clear error."""
    import socket

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise typer.BadParameter(f"cannot listen on {host}: {exc.strerror or exc}", param_hint="--host") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise typer.BadParameter(f"cannot listen on {host}:{port}: {exc.strerror or exc}", param_hint="--port") from None
    return sock


def build_workspace(data: Path, labels: Path, candidates: Path | None, model: str | Path | None, *,
                    commit_url: str | None, sheriff: str, token: str | None, newest_model: str | None = None,
                    reading: dict[str, object] | None = None):
    """Load the data, score the alerts, open the store: everything ``serve`` needs before listening.

    ``reading``: how the data becomes one value per commit (``aggregate``, ``trim_warmup``,
    ``branch`` of :func:`triage.loaders.load`), as the candidates were found on it.
    """
    from triage.inference import load_classifier
    from triage.loaders import load
    from triage.model_lookup import resolve_model
    from triage.workspace.alerts import build_alerts
    from triage.workspace.app import Workspace
    from triage.workspace.store import LabelsStore, check_path

    # The store is created only once the data and the model have loaded: a
    # typo in --data leaves no empty store behind.
    check_path(labels)
    clf = None
    route: object = "manifest"
    if model is not None and str(model).strip().lower() == "none":
        model = None  # as the help says (was looked up as a bundled model called "none")
    if newest_model is not None and model is None:
        raise typer.BadParameter("--newest-model goes with --model (the model scoring the other alerts)")
    if model is not None:
        from triage.cli.alerts import _check_scoring_features

        # The alerts are a detector's candidates, scored as `triage score` scores them:
        # `default` is its model (default-scoring), and an online model is refused by name.
        clf = load_classifier(resolve_model(model, "scoring"))
        _check_scoring_features(clf)
        if newest_model is not None:
            from triage.scoring import newest_route

            route = newest_route(clf, newest_model)
    dataset = load(data, **(reading or {}))  # type: ignore[arg-type]
    # The store's decided alerts stay in the queue when this candidates file lacks them (read
    # from an existing store only: a new one is created below, once the alerts are built).
    decided: list[tuple[str, str]] = []
    if labels.exists():
        earlier = LabelsStore(labels, create=False)
        decided = list(earlier.current())
        earlier.close()
    with console.status(f"building the alerts of {len(dataset):,} series"):
        alerts = build_alerts(dataset, candidates, clf, newest=route, decided=decided)
    store = LabelsStore(labels)
    return Workspace(dataset=dataset, alerts=alerts, store=store,
                         model_name=str(model) if model is not None else None,
                         commit_url=commit_url, sheriff=sheriff, token=token)


@labels_app.command("export")
def labels_export(
    labels: Annotated[Path, typer.Option("--labels", help="SQLite labels store written by `triage serve`.")],
    out: Annotated[Path, typer.Option("--out", parser=output_file, help="CSV (.csv, .csv.gz, .csv.zst; - = stdout) or .parquet to write (atomically).")],
    data: Annotated[Path | None, typer.Option("--data", help="With the data: the whole dataset in the long layout with the decisions as its labels (what `triage train --data` reads; re-runs of a commit merged as --aggregate and --trim-warmup say, as `serve` read them). Without: one row per decided alert.")] = None,
    aggregate: Aggregate = "mean",
    trim_warmup: TrimWarmup = "none",
    branch: Branch = None,
) -> None:
    """Export the sheriffs' current decisions in the long layout."""
    from triage.cli.tables import console_for, output_name
    from triage.cli.validation import check_aggregation, check_output_not_input
    from triage.core.atomic import write_table_atomic
    from triage.workspace.store import LabelsStore, export_long

    check_output_not_input(out, labels, data)
    check_aggregation(aggregate, trim_warmup)
    check_table_suffix(out, "labels export writes CSV")
    # --out - writes the CSV to stdout: the summary line goes to stderr, not into the CSV.
    say = console_for(out)
    where = output_name(out)
    with LabelsStore(labels, create=False) as store:  # opened (and checked) before the data are read
        if data is not None:
            from triage.loaders import load, write_long
            from triage.workspace.store import overlay

            merged, n = overlay(load(data, aggregate=aggregate, trim_warmup=trim_warmup, branch=branch), store)
        else:
            frame = export_long(store)
    if data is not None:
        write_long(merged, out)
        say.print(f"{len(merged):,} series with {n:,} decisions as labels written to [bold]{where}[/]", soft_wrap=True)
        return
    write_table_atomic(frame, out)  # Parquet for a .parquet name (any case), else CSV
    say.print(f"{len(frame):,} decision{'' if len(frame) == 1 else 's'} written to [bold]{where}[/]", soft_wrap=True)


@labels_app.command("agreement")
def labels_agreement(
    labels: Annotated[Path, typer.Option("--labels", help="SQLite labels store written by `triage serve`.")],
) -> None:
    """The model's precision and recall against the sheriffs' decisions, by week."""
    from triage.workspace.store import LabelsStore, agreement_by_week

    with LabelsStore(labels, create=False) as store:
        frame = agreement_by_week(store)
        n_recorded = len(store)
    if frame.empty:
        console.print(f"no true/false decision with a model call in {labels} ({n_recorded:,} decisions recorded)",
                      markup=False, highlight=False)
        return
    fmt = lambda v: "n/a" if v != v else f"{v:.3f}"  # noqa: E731  (NaN: nothing to divide by)
    # One table per model, named in its title, with two-line headers and no outer edge: ten
    # columns of one-line headers needed 101 columns, and on an 80-column terminal rich cut the
    # week, the model and the figures themselves ("2026…", "0.0…").
    for model, rows in frame.groupby("model", sort=True):
        table = Table(title=Text(f"{model or '-'} against the sheriffs, by week ({labels})"), show_edge=False)
        for col in ("week", "deci-\nsions", "both\ntrue", "model\nonly", "sheriff\nonly", "both\nfalse",
                    "preci-\nsion", "recall", "agree-\nment"):
            table.add_column(col, justify="left" if col == "week" else "right", no_wrap=True)
        for r in rows.to_dict("records"):
            table.add_row(r["week"], str(r["decisions"]), str(r["tp"]), str(r["fp"]), str(r["fn"]), str(r["tn"]),
                          fmt(r["precision"]), fmt(r["recall"]), fmt(r["agreement"]))
        console.print(table)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
    app.add_typer(labels_app, name="labels")

