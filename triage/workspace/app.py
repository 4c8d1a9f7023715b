"""The workspace's web application (Starlette; served by uvicorn from ``triage serve``).

Pages: ``/`` the alert queue (filters in the query string), ``/series?id=``
a series with its plot (``/plot.png?id=``), ``/agreement`` the model against
the sheriffs by week. ``POST /decide`` and ``POST /undo`` change the labels
store and redirect back (303), so every decision is one click and works
without JavaScript; ``static/workspace.js`` only remembers the sheriff's name.

Safety:

* every POST carries the page's CSRF token (a random value per server run,
  in a hidden field): a page on another site cannot read it, so cannot forge
  a decision;
* Jinja2 autoescapes every value (series names and notes are user data), and
  the Content-Security-Policy allows scripts, styles and images from this
  server only (no inline script), so an injected ``<script>`` would not run
  even if it slipped through; no other site may load a response as its image
  or script (Cross-Origin-Resource-Policy), so none learns which series exist,
  and a request another site's page makes (``Sec-Fetch-Site``: an image, a
  script, a fetch or a form post, anything but a link followed) is refused
  before any work (403);
* with an access token (required off loopback, see :func:`check_host`) every
  request must present it: ``?token=`` once (then an HttpOnly, SameSite=Strict
  cookie named after the token, so two workspaces on one machine keep theirs; a
  token link followed from another site continues through a page of this one,
  or the browser would withhold the cookie), or ``Authorization: Bearer``;
* served on loopback without a token, only loopback host names are answered
  (421 otherwise): a page re-pointed at 127.0.0.1 by DNS rebinding cannot
  read the CSRF token;
* every form carries the decision its page showed (``seen``, ``decision_id``):
  a repeated click is recorded once, a decision or undo from a stale page
  (another tab decided meanwhile) is refused with 409 naming the current one
  (a client that sends neither, a script, decides regardless); a field given
  twice with different values is a 400;
* bad requests get a 4xx page with one clear sentence; a labels store moved,
  replaced or damaged under the server a 503 naming it; an unexpected error
  a 500 page without a traceback (logged on the server).
"""

from __future__ import annotations

import hashlib
import hmac
import html
import ipaddress
import logging
import re
import secrets
import sqlite3
import threading
import unicodedata
from dataclasses import dataclass, field
from datetime import date
from http import HTTPStatus
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlencode

import jinja2
import pandas as pd
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from triage.core import labels as L
from triage.core.history import Dataset, History
from triage.inference import NOT_SCORABLE
from triage.steps import with_directions
from triage.workspace.alerts import Alert, refresh_reasons, status_of
from triage.workspace.plot import series_png
from triage.workspace.store import (
    DECISIONS,
    MAX_NOTE,
    BadRow,
    Conflict,
    Decision,
    LabelsStore,
    StoreChanged,
    agreement_by_week,
)

HERE = Path(__file__).resolve().parent
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
STATUSES = ("untriaged", "true", "false", "unsure")
CALLS = {"true": L.TRUE_POSITIVE, "false": L.FALSE_POSITIVE}
DIRECTIONS = ("regression", "improvement", "change")
#: Largest POST body accepted, for a workspace of short ids (a decision is a few hundred bytes; a note of
#: MAX_NOTE characters of Chinese, sent percent-encoded, is 18,000; at 16 KiB such a note was refused).
MAX_BODY = 65_536
#: What a form holds besides the alert's ids at most: the note and the sheriff's name, 4-byte characters
#: percent-encoded (12 bytes each), the form token and field names, the queue's filters in ``next``.
FORM_ROOM = 12 * (MAX_NOTE + 200) + 4_096


def body_limit(alerts: list[Alert]) -> int:
    """The largest POST body a page of these alerts sends, at least :data:`MAX_BODY`.

    An alert's form sends its series id three times (as typed, percent-encoded in ``series_id_q``
    and in ``next``, each of those encoded again by the browser: up to 12 + 20 + 20 bytes a
    character) and its commit twice (12 + 20): a long id must not make its alert undecidable.
    """
    longest = max((52 * len(a.series_id) + 32 * len(a.commit) for a in alerts), default=0)
    return max(MAX_BODY, FORM_ROOM + longest)
#: Rows shown per queue page.
PAGE = 200
log = logging.getLogger("triage.workspace")


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (all of 127.0.0.0/8, ::1): nothing off this machine reaches it."""
    if host in LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name: only 'localhost' is known to stay on this machine
        return False


def check_host(host: str, token: str | None) -> None:
    """Refuse to serve off loopback without an access token (``ValueError`` says why)."""
    if not is_loopback(host) and not token:
        raise ValueError(f"--host {host} is reachable from other machines: give --token (a secret every request must carry)")
    if token is not None and len(token) < 12:
        raise ValueError("--token must be at least 12 characters")


def check_commit_url(template: str | None) -> None:
    """A commit URL template is http(s) and has ``{commit}`` (``ValueError`` otherwise)."""
    if template is None:
        return
    if not template.startswith(("http://", "https://")) or "{commit}" not in template:
        raise ValueError("--commit-url must be an http(s) URL containing {commit}, e.g. https://github.com/o/r/commit/{commit}")


@dataclass
class Workspace:
    """What the server holds: the data, the alerts, the store and the settings."""

    dataset: Dataset
    alerts: list[Alert]
    store: LabelsStore
    model_name: str | None = None
    commit_url: str | None = None
    sheriff: str = "sheriff"
    token: str | None = None
    #: Host names the requests may carry (None: any). ``serve`` on loopback without a token sets
    #: the loopback names: a page whose name an attacker re-points to 127.0.0.1 (DNS rebinding)
    #: would otherwise read the pages, their form token included, and decide.
    allowed_hosts: frozenset[str] | None = None
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    by_key: dict[tuple[str, str], Alert] = field(init=False)
    #: Each series' alerts, in the order of ``alerts``: a series page reads its own, not all of them.
    by_series: dict[str, list[Alert]] = field(init=False)
    #: Largest POST body accepted (:func:`body_limit` of the alerts).
    max_body: int = field(init=False)
    #: The series that say which way is better (their changes can be regressions or improvements).
    directed: frozenset[str] = field(init=False)
    _plot_lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    #: One re-wording of reasons at a time: each reads the store inside it, so the last one run
    #: words them as the store stands after every decision made so far (two requests had left a
    #: reason of a decision already undone).
    _reword_lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        check_commit_url(self.commit_url)
        self.max_body = body_limit(self.alerts)
        self.by_key = {a.key: a for a in self.alerts}
        # The data's direction, or the one the alerts were built with (a Perfherder export's
        # lower_is_better gave them their regression / improvement while the page said no series had
        # a direction, and the reasons worded again after a decision lost it).
        self.dataset = with_directions(self.dataset, pd.DataFrame(
            {"change_kind": [a.direction for a in self.alerts], "change_pct": [a.change_pct for a in self.alerts]}),
            [a.series_id for a in self.alerts])
        self.directed = frozenset(h.series_id for h in self.dataset if h.higher_is_better is not None)
        self.by_series = {}
        for a in self.alerts:
            self.by_series.setdefault(a.series_id, []).append(a)
        decided: dict[str, dict[str, str]] = {}
        for (sid, commit), d in self.store.current().items():
            if sid in self.by_series and sid in self.dataset:
                decided.setdefault(sid, {})[commit] = d.label
        for sid, labels in decided.items():
            refresh_reasons(self.by_series[sid], self.dataset[sid], labels)

    def commit_link(self, commit: str) -> str | None:
        if not self.commit_url:
            return None
        return self.commit_url.replace("{commit}", quote(commit, safe=""))


# ---------------------------------------------------------------------- helpers


class BadRequest(HTTPException):
    """A 4xx with one sentence; ``back``: a local link to where the sheriff was (for a refused POST)."""

    def __init__(self, detail: str, status: int = 400, back: str | None = None, back_words: str = "back to the page"):
        super().__init__(status_code=status, detail=detail)
        self.back = back
        self.back_words = back_words


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(HERE / "templates")),
        autoescape=True,  # every value is escaped: series names and notes are user data
        undefined=jinja2.StrictUndefined,
    )
    env.filters["pct"] = lambda v: "" if v is None or pd.isna(v) else f"{v:+.1f}%"
    # NaN (a week's recall with no alert the sheriffs confirmed): "n/a", as `triage labels agreement` prints it.
    env.filters["prob"] = lambda v: "" if v is None else "n/a" if pd.isna(v) else f"{v:.2f}"
    env.filters["date"] = lambda v: "" if v is None else v.strftime("%Y-%m-%d %H:%M")
    env.filters["q"] = lambda v: quote(str(v), safe="")
    return env


ENV = _env()


#: The cookie holding the sheriff's name set by the header's form (a browser without JavaScript).
SHERIFF_COOKIE = "triage_sheriff"


def _cookie_sheriff(request: Request | None) -> str:
    """The name the header's form stored in this browser ('' when none or unreadable)."""
    if request is None:
        return ""
    try:
        name = unquote(request.cookies.get(SHERIFF_COOKIE, ""), errors="strict").strip()[:200]
    except UnicodeDecodeError:
        return ""
    return "" if any(ord(c) < 32 or c == "\x7f" for c in name) else name


def _who(ws: Workspace, form: dict[str, str], request: Request) -> str:
    """Who decides: the page's field (filled by the script), else the name the header's form
    stored (no JavaScript), else ``--sheriff``."""
    return form.get("who", "").strip()[:200] or _cookie_sheriff(request) or ws.sheriff


#: The cookie telling the page a decision or undo redirects to what was just done (a decision's id; ``u`` + id: undone).
DONE_COOKIE = "triage_done"


def _done_cookie(response: Response, what: str) -> Response:
    response.set_cookie(DONE_COOKIE, what, max_age=120, httponly=True, samesite="strict")
    return response


async def _done(request: Request, ws: Workspace) -> dict[str, str] | None:
    """What the decision or undo that led here did, in words (None when nothing was just done).

    After a decision the page came back with no word of it: the decided row moved down the
    queue, and a screen reader announced only the page's title and the next alert's note,
    so a reviewer who cannot see the table could not tell the decision was recorded.
    """
    value = request.cookies.get(DONE_COOKIE, "")
    undone = value.startswith("u")
    digits = value[1:] if undone else value
    if not digits.isascii() or not digits.isdigit() or len(digits) > 18:
        return None
    d = await run_in_threadpool(ws.store.get, int(digits))
    if d is None:
        return None
    alert = ws.by_key.get((d.series_id, d.commit))
    which = f"commit {d.commit[:12]} of {alert.name if alert else d.series_id}"
    if undone:
        # Say what the alert's decision is now: an undo brings back the one before it, which
        # training then uses ("Undone: the unsure decision" left "true by alice" unsaid).
        now = (await run_in_threadpool(ws.store.current, d.series_id)).get((d.series_id, d.commit))
        after = f" It is now {now.word}, by {now.who}." if now is not None else " It is now undecided."
        return {"short": "Undone", "text": f"Undone: the {d.word} decision on {which}.{after}"}
    return {"short": f"Recorded {d.word}", "text": f"Recorded: {d.word} on {which}, by {d.who}."}


def _page(ws: Workspace, template: str, status: int = 200, request: Request | None = None, **context) -> HTMLResponse:
    if "status_code" in context:  # an error page: its status in words, not only a number
        context["phrase"] = HTTPStatus(context["status_code"]).phrase
    context.setdefault("done", None)
    text = ENV.get_template(template).render(csrf=ws.csrf, model_name=ws.model_name, sheriff_name=_cookie_sheriff(request),
                                             default_sheriff=ws.sheriff, **context)
    response = HTMLResponse(text, status_code=status)
    if context["done"] is not None:  # said once: a reload or a later page does not say it again
        response.delete_cookie(DONE_COOKIE)
    return response


def _date_param(params, name: str) -> pd.Timestamp | None:
    """A day, YYYY-MM-DD only: pandas would also take 'nat' (the filter silently dropped),
    '-1' (year -1) or 12/11/2026 (month first), and a time would be widened to its day."""
    text = params.get(name, "").strip()
    if not text:
        return None
    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            raise ValueError(text)
        day = date.fromisoformat(text)
    except ValueError:
        raise BadRequest(f"{name}: {text[:40]!r} is not a date (use YYYY-MM-DD)") from None
    return pd.Timestamp(day, tz="UTC")


def _query(request: Request):
    """The query parameters, refused (400) when one holds a control character (it would be echoed into the page).

    A value may hold a tab, a line feed or a carriage return, as a form's may: series ids do (a
    quoted CSV cell), and the queue links to ``/series?id=<the id>``; the page escapes what it echoes.
    """
    params = request.query_params
    for name, value in params.multi_items():
        if any(ord(c) < 32 or c == "\x7f" for c in name) or any(
                (ord(c) < 32 and c not in "\t\n\r") or c == "\x7f" for c in value):
            raise BadRequest(f"{name[:40]!r} holds a control character")
    return params


def _choice(params, name: str, allowed) -> str:
    value = params.get(name, "").strip()
    if value and value not in allowed:
        raise BadRequest(f"{name} must be one of {', '.join(allowed)} (got {value[:40]!r})")
    return value


async def _form(request: Request) -> dict[str, str]:
    """The urlencoded body as a dict of single values (4xx for anything else)."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip()
    if ctype != "application/x-www-form-urlencoded":
        raise BadRequest("send the form as application/x-www-form-urlencoded", 415)
    limit = request.app.state.ws.max_body
    size = request.headers.get("content-length")
    if size is not None and (not size.isdigit() or int(size) > limit):
        raise BadRequest(f"request body larger than {limit} bytes", 413)
    # Read at most the limit + 1 bytes: a chunked body has no Content-Length to refuse up
    # front, and request.body() would hold all of it in memory before the check.
    parts: list[bytes] = []
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > limit:
            raise BadRequest(f"request body larger than {limit} bytes", 413)
        parts.append(chunk)
    body = b"".join(parts)
    try:
        # errors="strict": a percent-encoded byte that is not UTF-8 (%ff) is refused like a raw one,
        # not stored as U+FFFD.
        parsed = parse_qs(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False, errors="strict")
    except UnicodeDecodeError:
        raise BadRequest("the form is not UTF-8") from None
    twice = [k for k, v in parsed.items() if len(set(v)) > 1]
    if twice:
        # decision=true&decision=false was recorded as the last one: which was meant cannot be told.
        raise BadRequest(f"{twice[0][:40]!r} is given twice with different values")
    form = {k: v[-1] for k, v in parsed.items()}
    for name, value in form.items():
        if any(ord(c) < 32 and c not in "\t\n\r" for c in value) or "\x7f" in value:
            raise BadRequest(f"{name[:40]!r} holds a control character")
    return form


def _check_csrf(ws: Workspace, form: dict[str, str]) -> None:
    if not hmac.compare_digest(form.get("csrf", "").encode(), ws.csrf.encode()):
        # A link back, not "reload": reloading the answer to a POST sends the stale token again.
        raise BadRequest("missing or stale form token (the workspace was restarted since the page was loaded?): "
                         "go back to the page, it has a fresh token, and try again", 403, back=_local(form))


def _field(form: dict[str, str], name: str) -> str:
    """``name``'s value; the page's forms also send it percent-encoded (``<name>_q``), which is what counts.

    A browser sends a line feed or carriage return of a hidden field as CR LF, and the HTML
    parser reads a CR in an attribute as LF: a series id holding either came back changed
    ("no alert at commit ..."). The encoded copy is ASCII and comes back byte for byte.
    """
    encoded = form.get(f"{name}_q")
    if encoded is None:
        return form.get(name, "")  # scripts, older pages
    try:
        return unquote(encoded, errors="strict")
    except UnicodeDecodeError:
        raise BadRequest(f"{name}_q is not percent-encoded UTF-8") from None


def _alert_of(ws: Workspace, form: dict[str, str]) -> Alert:
    sid, commit = _field(form, "series_id"), _field(form, "commit")
    if not sid or not commit:
        raise BadRequest("series_id and commit are required")
    alert = ws.by_key.get((sid, commit))
    if alert is None:
        raise BadRequest(f"no alert at commit {commit[:60]!r} of series {sid[:120]!r}", 404)
    return alert


def _decision_id(form: dict[str, str], name: str) -> int | None:
    """The decision id the page showed (``seen``: 0 = none); None when the form has no such field."""
    text = form.get(name)
    if text is None:
        return None  # a client that sends no page state decides regardless (scripts, older pages)
    if not text.isascii() or not text.isdigit() or len(text) > 18:
        raise BadRequest(f"{name} must be a decision id, a whole number (got {text[:40]!r})", back=_local(form))
    return int(text)


def _conflict(exc: Conflict, form: dict[str, str], alert: Alert) -> BadRequest:
    """409 for a page that no longer shows the alert's decision: say what it is now, link back to it.

    A link, not "reload": reloading the page that answered a POST sends the stale form again.
    """
    now = exc.current
    if now is None:
        what = "the decision this page showed was undone meanwhile"
    else:
        what = f"this alert was decided meanwhile ({now.word} by {now.who}, {now.decided_at[:16].replace('T', ' ')} UTC)"
    return BadRequest(f"not recorded: {what}. Its page shows it now; decide again there if you still disagree.", 409,
                      back=f"{_local(form)}#{_anchor(alert)}", back_words="back to the alert")


#: A path on this server as the pages write it: "/" then printable ASCII, no space.
_LOCAL_PATH = re.compile(r"/[!-~]*")


def _local(form: dict[str, str]) -> str:
    """The form's ``next`` when it is a path on this server (no open redirect), else the queue."""
    target = form.get("next", "/")
    # Printable ASCII only (the pages send their own address percent-encoded): a browser drops a tab,
    # line feed or carriage return from a link, so "/<TAB>/evil.example" on a refusal's "back to the
    # page" link was "//evil.example", another site.
    if not _LOCAL_PATH.fullmatch(target) or target.startswith("//") or "\\" in target:
        return "/"
    return target.split("#")[0]


def _anchor(alert: Alert) -> str:
    """The alert's row id: its series and commit percent-encoded, ``-`` included (series ``a-b`` at
    commit ``c`` and series ``a`` at ``b-c`` were both ``a-a-b-c``: two rows of one id, and the
    page went back to the wrong one after a decision)."""
    def part(text: str) -> str:
        return quote(text, safe="").replace("-", "%2D")
    return f"a-{part(alert.series_id)}-{part(alert.commit)}"


def _next(form: dict[str, str], alert: Alert) -> str:
    """Where to go after a POST: a local path only (no open redirect).

    Back on a series page, to the decided row; back in the queue, to its top,
    where the next untriaged alert now is (the decided one moved down).
    """
    target = _local(form)
    if target.startswith("/series"):
        return f"{target}#{_anchor(alert)}"
    return target


def _rows(ws: Workspace, alerts: list[Alert], current: dict[tuple[str, str], Decision]) -> list[dict]:
    rows = []
    for a in alerts:
        d = current.get(a.key)
        rows.append({
            "a": a,
            "status": status_of(a, d.label if d else None),
            "decision": d,
            "link": ws.commit_link(a.commit),
            "anchor": _anchor(a),
            "call": {L.TRUE_POSITIVE: "true", L.FALSE_POSITIVE: "false", NOT_SCORABLE: "not scorable"}.get(
                a.model_call or "", ""),
        })
    return rows


def _order(a: Alert, status: str) -> tuple:
    """The queue's sort key of an alert and its status word.

    Untriaged first, then the most likely true (no model: the biggest change) first.
    """
    p = a.p_true if a.p_true is not None else -1.0
    size = abs(a.change_pct) if a.change_pct == a.change_pct else 0.0
    return (status != "untriaged", -p, -size, a.series_id, a.index)


# ---------------------------------------------------------------------- pages


async def queue(request: Request) -> Response:
    ws: Workspace = request.app.state.ws
    q = _query(request)
    series = q.get("series", "").strip()
    status = _choice(q, "status", (*STATUSES, "all"))
    call = _choice(q, "call", tuple(CALLS))
    direction = _choice(q, "direction", DIRECTIONS)
    since, until = _date_param(q, "since"), _date_param(q, "until")
    if since is not None and until is not None and since > until:
        raise BadRequest("since is after until")
    try:
        limit = int(q.get("limit", PAGE))
    except ValueError:
        raise BadRequest("limit must be a whole number") from None
    if not 1 <= limit <= 10_000:
        raise BadRequest("limit must be between 1 and 10000")
    current = await run_in_threadpool(ws.store.current)
    # Status words of every alert (the counts and the filter need them), but the rows of the page
    # (links, anchors, calls) only for the alerts it shows: building them for all 100,000 alerts
    # of a large workspace took most of a second per page load.
    statuses = [status_of(a, d.label if (d := current.get(a.key)) is not None else None) for a in ws.alerts]
    needle = _folded(series)
    kept: list[tuple[Alert, str]] = []
    # Of the alerts the other filters keep, those whose series does not say which way is better, and
    # the others: a regression / improvement filter can show none of the first ("No alert matches"
    # was all it said on data without a direction, beside big steps both ways).
    undirected = directed = 0
    for a, word in zip(ws.alerts, statuses, strict=True):
        if needle and needle not in _folded(a.series_id) and needle not in _folded(a.name):
            continue
        if status and status != "all" and word != status:
            continue
        if call and a.model_call != CALLS[call]:
            continue
        if since is not None and (a.date is None or _utc(a.date) < since):
            continue
        if until is not None and (a.date is None or _utc(a.date) >= until + pd.Timedelta(days=1)):  # to the end of that day
            continue
        if a.series_id in ws.directed:
            directed += 1
        else:
            undirected += 1
        if direction and a.direction != direction:
            continue
        kept.append((a, word))
    kept.sort(key=lambda pair: _order(*pair))
    filters = {"series": series, "status": status, "call": call, "direction": direction,
               "since": q.get("since", ""), "until": q.get("until", "")}
    here = "/?" + urlencode({k: v for k, v in filters.items() if v}) if any(filters.values()) else "/"
    counts = {s: 0 for s in STATUSES}
    for word in statuses:
        counts[word] += 1
    more = None
    if len(kept) > limit:
        more = "/?" + urlencode({**{k: v for k, v in filters.items() if v}, "limit": 10_000})
    shown = _rows(ws, [a for a, _ in kept[:limit]], current)
    undirected_note = None
    if direction in ("regression", "improvement") and undirected:
        undirected_note = {"alerts": undirected, "only": not directed,
                           "link": "/?" + urlencode({**{k: v for k, v in filters.items() if v}, "direction": "change"})}
    return _page(ws, "queue.html", request=request, done=await _done(request, ws), rows=shown, total=len(kept), all_total=len(ws.alerts), filters=filters, more=more,
                 here=here, counts=counts, statuses=STATUSES, has_model=any(a.p_true is not None for a in ws.alerts),
                 undirected=undirected_note, title="Alert queue")


#: Alerts the plot's text alternative describes one by one; the table below the plot has every one.
ALT_ALERTS = 10


def plot_text(history: History, name: str, rows: list[dict]) -> str:
    """The plot in words, for a reader who cannot see it: the series, its span, and at each
    alert the commit, the shift (the alert's reason), the status and P(true).

    It said only "values of NAME with its candidates and the model's calls": a screen reader
    user learned nothing of where the candidates sit or how far the values moved.
    """
    n = len(history)
    span = f"{n} commit{'' if n == 1 else 's'}"
    ts = history.timestamps
    if ts is not None and n:
        days = pd.to_datetime(pd.Series(ts)).dropna()
        if len(days):
            span += f", {days.min():%Y-%m-%d} to {days.max():%Y-%m-%d}"
    text = f"Plot of the values of {name} over its {span}"
    parts = []
    for r in rows[:ALT_ALERTS]:
        a = r["a"]
        when = f" ({a.date:%Y-%m-%d})" if a.date is not None and not pd.isna(a.date) else ""
        p = f", P(true) {a.p_true:.2f}" if a.p_true is not None and not pd.isna(a.p_true) else ""
        parts.append(f"commit {a.commit[:12]}{when}: {a.reason}; status {r['status']}{p}")
    if not rows:
        text += "; no alert."
    else:
        more = len(rows) - ALT_ALERTS
        tail = f"; and {more} more in the table below" if more > 0 else ""
        text += f". {len(rows)} alert{'' if len(rows) == 1 else 's'} marked: " + "; ".join(parts) + tail + "."
    alerted = {r["a"].index for r in rows}
    others = sum(1 for i in history.confirmed() if int(i) not in alerted)
    if others:
        text += f" {others} further change{'' if others == 1 else 's'} the data confirms, drawn as dashed lines."
    return text


def _folded(text: str) -> str:
    """``text`` for the series filter: case-folded, in one Unicode form (NFC). "café" typed
    (one code point for é) found only the series written so, not one written "cafe" + a
    combining accent (NFD, as macOS file names are), which reads the same."""
    return unicodedata.normalize("NFC", text).casefold()


def _utc(ts: pd.Timestamp) -> pd.Timestamp:
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


async def _series_rows(request: Request) -> tuple[Workspace, str, list[dict]]:
    """The workspace, the requested series id (404 when unknown) and its alerts' rows."""
    ws: Workspace = request.app.state.ws
    sid = _query(request).get("id", "")
    if not sid:
        raise BadRequest("give the series: /series?id=<series id> (the queue links to each)")
    if sid not in ws.dataset:
        raise BadRequest(f"no series {sid[:120]!r} in the data", 404)
    current = await run_in_threadpool(ws.store.current, sid)
    return ws, sid, _rows(ws, ws.by_series.get(sid, []), current)


async def series_page(request: Request) -> Response:
    ws, sid, rows = await _series_rows(request)
    rows.sort(key=lambda r: r["a"].index)
    h = ws.dataset[sid]
    name = rows[0]["a"].name if rows else sid
    return _page(ws, "series.html", request=request, done=await _done(request, ws), rows=rows, sid=sid, name=name, n_commits=len(h),
                 here=f"/series?id={quote(sid, safe='')}", title=name, alt=plot_text(h, name, rows))


async def plot(request: Request) -> Response:
    ws, sid, rows = await _series_rows(request)
    points = [(r["a"].index, r["status"], r["a"].p_true, r["a"].model_call) for r in rows]
    h = ws.dataset[sid]
    title = rows[0]["a"].name if rows else sid
    # Changes the data already confirms, where no alert of this workspace sits.
    alerted = {p[0] for p in points}
    confirmed = [int(i) for i in h.confirmed() if int(i) not in alerted]

    def draw() -> bytes:
        with ws._plot_lock:  # matplotlib's font cache and Agg are not made for concurrent drawing
            return series_png(h, points, title=title, confirmed=confirmed)

    png = await run_in_threadpool(draw)
    return Response(png, media_type="image/png", headers={"Cache-Control": "no-store"})


async def agreement_page(request: Request) -> Response:
    ws: Workspace = request.app.state.ws
    table = await run_in_threadpool(agreement_by_week, ws.store)
    return _page(ws, "agreement.html", request=request, here="/agreement", weeks=table.to_dict("records"), title="Agreement by week",
                 n_decisions=len(ws.store))


async def decide(request: Request) -> Response:
    ws: Workspace = request.app.state.ws
    form = await _form(request)
    _check_csrf(ws, form)
    alert = _alert_of(ws, form)
    decision = form.get("decision", "")
    if decision not in DECISIONS:
        raise BadRequest(f"decision must be one of {', '.join(DECISIONS)} (got {decision[:40]!r})")
    note = form.get("note", "")
    if len(note) > MAX_NOTE:
        raise BadRequest(f"the note is longer than {MAX_NOTE} characters")
    who = _who(ws, form, request)
    seen = _decision_id(form, "seen")
    try:
        recorded = await run_in_threadpool(
            lambda: ws.store.record(alert.series_id, alert.commit, decision, who=who, note=note, p_true=alert.p_true,
                                    model_call=alert.model_call, model=ws.model_name, seen=seen)
        )
    except Conflict as exc:
        raise _conflict(exc, form, alert) from None
    await run_in_threadpool(_reword, ws, alert.series_id)
    return _done_cookie(RedirectResponse(_next(form, alert), status_code=303), str(recorded.id))


def _reword(ws: Workspace, sid: str) -> None:
    """The series' reasons with its sheriffs' true decisions as they stand now (:func:`refresh_reasons`)."""
    if sid in ws.by_series and sid in ws.dataset:
        with ws._reword_lock:
            decided = {c: d.label for (_, c), d in ws.store.current(sid).items()}
            refresh_reasons(ws.by_series[sid], ws.dataset[sid], decided)


async def undo(request: Request) -> Response:
    ws: Workspace = request.app.state.ws
    form = await _form(request)
    _check_csrf(ws, form)
    alert = _alert_of(ws, form)
    who = _who(ws, form, request)
    shown = _decision_id(form, "decision_id")
    try:
        done = await run_in_threadpool(lambda: ws.store.undo(alert.series_id, alert.commit, who=who,
                                                             decision_id=shown))
    except Conflict as exc:
        raise _conflict(exc, form, alert) from None
    except ValueError as exc:
        raise BadRequest(f"decision_id: {exc}") from None
    if done is None:
        raise BadRequest("this alert has no decision to undo", 409)
    await run_in_threadpool(_reword, ws, alert.series_id)
    return _done_cookie(RedirectResponse(_next(form, alert), status_code=303), f"u{done.id}")


async def sheriff(request: Request) -> Response:
    """Store the sheriff's name typed in the header (a cookie) and go back to the page.

    The script sends the name with every decision; without JavaScript (a browser policy) the
    name typed there went nowhere and the decisions were recorded as ``--sheriff``'s.
    """
    ws: Workspace = request.app.state.ws
    form = await _form(request)
    _check_csrf(ws, form)
    name = form.get("who", "").strip()[:200]
    response = RedirectResponse(_local(form), status_code=303)
    if name:
        response.set_cookie(SHERIFF_COOKIE, quote(name, safe=""), max_age=400 * 86400, httponly=True, samesite="strict")
    else:
        response.delete_cookie(SHERIFF_COOKIE)
    return response


async def favicon(request: Request) -> Response:
    return Response((HERE / "static" / "favicon.svg").read_bytes(), media_type="image/svg+xml")


# ---------------------------------------------------------------------- errors and middleware


async def http_error(request: Request, exc: Exception) -> Response:
    status = getattr(exc, "status_code", 400)
    detail = getattr(exc, "detail", "") or "bad request"
    if not isinstance(exc, BadRequest):  # Starlette's routing: its detail is only the status phrase
        path = request.url.path[:200]
        if status == 404:
            detail = (f"no page at {path}: the workspace has the alert queue (/), a page per series "
                      "(/series?id=...) and the agreement by week (/agreement)")
        elif status == 405:
            detail = f"{request.method} is not allowed on {path}"
            if path in ("/decide", "/undo"):
                detail += " (decisions are sent by the buttons of the queue and the series pages)"
            elif path == "/sheriff":
                detail += " (the name is saved by the sheriff field at the top of every page)"
    ws: Workspace = request.app.state.ws
    return _page(ws, "error.html", status=status, request=request, status_code=status, message=str(detail), title="Error",
                 back=getattr(exc, "back", None), back_words=getattr(exc, "back_words", ""))


async def server_error(request: Request, exc: Exception) -> Response:
    log.exception("unexpected error on %s", request.url.path)
    ws: Workspace = request.app.state.ws
    return _page(ws, "error.html", status=500, request=request, status_code=500,
                 message="the workspace could not handle this request (the server log has the details)", title="Error",
                 back=None)


async def store_error(request: Request, exc: Exception) -> Response:
    """503 naming the labels store and its problem (changed on disk, damaged, full, locked)."""
    ws: Workspace = request.app.state.ws
    log.error("labels store: %s", exc)
    if isinstance(exc, (StoreChanged, BadRow)):
        problem = str(exc)
    else:
        problem = f"{ws.store.path}: the labels store cannot be used (SQLite says: {exc})"
    # A POST that failed here changed nothing: say so, the sheriff must decide again.
    message = f"not recorded: {problem}" if request.method == "POST" else problem
    return _page(ws, "error.html", status=503, request=request, status_code=503, message=message, title="Error", back=None)


CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


def _host_name(host: str) -> str:
    """The name in a Host header, without its port: 'localhost:8765' -> 'localhost', '[::1]:80' -> '::1'."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


#: The names a loopback-only workspace answers to.
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def cookie_name(token: str) -> str:
    """The access cookie's name, one per token: a browser keeps one cookie of a name per host, whatever
    the port, so a second workspace on the same machine (another port, its own token) replaced the
    first one's cookie and that one answered 401 "Token required" from then on."""
    return f"triage_token_{hashlib.sha256(token.encode()).hexdigest()[:16]}"


def _from_another_site(request: Request) -> bool:
    """A request a page of another site (or another port) made as its image, script, fetch or form post.

    Browsers say so (``Sec-Fetch-Site``): the workspace answers another site only a link followed
    (a GET navigation). A page the sheriff visited could otherwise make the workspace draw plot after
    plot (``<img src=".../plot.png?id=...">`` by the thousand) on a shared machine's two cores;
    Cross-Origin-Resource-Policy hides the answers, but only after they were drawn.
    """
    if request.headers.get("sec-fetch-site") not in ("cross-site", "same-site"):
        return False  # this workspace's own pages, an address typed or a bookmark, or a client that does not say
    return request.headers.get("sec-fetch-mode") != "navigate" or request.method not in ("GET", "HEAD")


class Guard(BaseHTTPMiddleware):
    """The access token (when set) and the security headers on every response."""

    async def dispatch(self, request: Request, call_next) -> Response:
        ws: Workspace = request.app.state.ws
        if ws.allowed_hosts is not None:
            name = _host_name(request.headers.get("host", ""))
            if name not in ws.allowed_hosts:
                return self._harden(HTMLResponse(
                    "<!doctype html><title>Wrong address</title><p>This workspace answers only to "
                    f"{html.escape(', '.join(sorted(ws.allowed_hosts)))}, not to {html.escape(name[:100])!s}: "
                    "open the address <code>triage serve</code> printed (http://localhost:...).</p>",
                    status_code=421))
        if _from_another_site(request):
            return self._harden(HTMLResponse(
                "<!doctype html><title>Refused</title><p>A page of another site asked for this workspace's "
                f"{html.escape(request.url.path[:100])}: only a link to it opens it; open the workspace's own "
                "address.</p>", status_code=403))
        if ws.token:
            given = request.query_params.get("token")
            if given is not None and hmac.compare_digest(given.encode(), ws.token.encode()):
                # Trade the URL's token for a cookie, and drop it from the address bar.
                rest = {k: v for k, v in request.query_params.items() if k != "token"}
                # One leading slash: the path of /%2Fevil.example decodes to //evil.example, which as
                # a redirect's Location is another site.
                path = "/" + quote(request.url.path.lstrip("/\\"), safe="/")
                target = path + (f"?{urlencode(rest)}" if rest else "")
                response: Response = RedirectResponse(target, status_code=303)
                if request.headers.get("sec-fetch-site") in ("cross-site", "same-site"):
                    # A link on another site (a chat, a wiki): the browser withholds a SameSite=Strict
                    # cookie from every navigation that site started, the redirect and reloads
                    # included ("Token required" for good). Continue from a page of this workspace.
                    response = HTMLResponse(
                        f'<!doctype html><meta http-equiv="refresh" content="0; url={html.escape(target)}">'
                        f'<title>Opening the workspace</title><p><a href="{html.escape(target)}">Open the '
                        "workspace</a></p>")
                response.set_cookie(cookie_name(ws.token), ws.token, httponly=True, samesite="strict")
                return self._harden(response)
            # The scheme in any case ("bearer", as some clients write it: RFC 9110 says it is case-insensitive).
            scheme, _, credentials = request.headers.get("authorization", "").strip().partition(" ")
            bearer = credentials.strip() if scheme.lower() == "bearer" else ""
            presented = request.cookies.get(cookie_name(ws.token)) or bearer
            if not hmac.compare_digest(presented.encode(), ws.token.encode()):
                return self._harden(HTMLResponse(
                    "<!doctype html><title>Token required</title><p>This workspace needs its access token: "
                    "open the address <code>triage serve</code> printed (it ends in <code>?token=...</code>).</p>",
                    status_code=401))
        return self._harden(await call_next(request))

    @staticmethod
    def _harden(response: Response) -> Response:
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Referrer-Policy"] = "no-referrer"
        # No page of another site may load a response as its image, script or style: an
        # <img src="http://localhost:8765/plot.png?id=..."> loaded or failed as the series existed,
        # telling any site the sheriff visited which series the workspace holds.
        response.headers["Cross-Origin-Resource-Policy"] = "same-origin"
        return response


def create_app(ws: Workspace) -> Starlette:
    """The ASGI application serving ``ws``."""
    routes = [
        Route("/", queue),
        Route("/series", series_page),
        Route("/plot.png", plot),
        Route("/agreement", agreement_page),
        Route("/decide", decide, methods=["POST"]),
        Route("/undo", undo, methods=["POST"]),
        Route("/sheriff", sheriff, methods=["POST"]),
        Route("/favicon.ico", favicon),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(Guard)],
        exception_handlers={HTTPException: http_error, StoreChanged: store_error, BadRow: store_error,
                            sqlite3.Error: store_error,
                            Exception: server_error},
    )
    app.state.ws = ws
    return app
