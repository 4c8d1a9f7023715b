"""Walkthrough s19: the triage workspace for every reviewer (keyboard, screen reader, zoom, phone, no JavaScript).

Defects found (what a user did, what went wrong, what happens now):

1. A reviewer with a screen reader tabbed through the queue: every decision
   button was announced "true, button", "false, button", ... thirty times
   over, the note field "note", the undo button "undo", with nothing saying
   which alert they decide. Now each control's accessible name carries the
   alert (the visible word first, then "for commit 8b1f6d37149e of
   linux-standalone.insert.t00005", in visually hidden text), and the commit
   link says it opens a new tab.
2. The same reviewer opened a series page: the plot's text alternative was
   "values of NAME with its candidates and the model's calls", nothing about
   where the candidates sit or how far the values moved. Now it says the
   series, its span (commits and dates), and for each alert (the first ten)
   the commit, its date, the shift in words (the alert's reason: "median
   fell 49.8% (20.8 noise sd) and stayed down ..."), its status and P(true),
   and how many further changes the data confirms.
3. A reviewer on a 1280x720 laptop at 200 % zoom (640 CSS px), and one on a
   phone (320 px): the queue was 914 px wide, the series page 844, even an
   error page 563 (the header did not wrap), and 980 when it named a
   long series id; the page scrolled sideways and
   the decision buttons were off screen (the autofocused note field scrolled
   the page sideways at load). Now below 60em (960 px) the alert table is laid out as
   one block per alert with "column: value" lines, the header wraps, and the
   agreement table scrolls inside its own focusable box, long ids in
   messages wrap: no page scrolls
   sideways at 320 px.
4. A keyboard-only reviewer tabbed onto the coloured decision buttons: the
   browser's 1 px focus ring was barely visible against their borders. Now
   every focusable control gets a 3 px outline, and a "skip to the content"
   link comes first.
5. A reviewer whose browser has JavaScript disabled by policy typed their name
   in the header's "sheriff" field and decided: the decision was recorded as
   the server's ``--sheriff`` (the field only worked through the script),
   without a word. Now the field is a form of its own: without JavaScript a
   "save name" button stores the name in a cookie, decisions and undos
   without a name from the page are recorded under it, and the field shows
   it on every page (with the script, the name is still kept as typed).
6. A reviewer with a screen reader decided an alert: the queue came back
   with no word of it (the decided row moved down; the reader announced the
   page's title and the next alert's note), so nothing said the decision was
   recorded. Now the page that follows a decision or undo says what was done
   ("Recorded: false on commit ... of ..., by ...", "Undone: ..."), in its
   title and in a status line at the top, once.
7. Looking for the filters or the alerts by landmark or table: the filter
   form is now a search landmark ("filter the queue") and each alert table
   has a caption.

Checked and found working: ``lang="en"``, header / nav / main landmarks and
one h1 per page, labelled filter controls, text contrast (WCAG AA: the lowest
is the placeholder, 4.6:1), status shown as words besides colour, Back after
a decision (the page shows the decision), a double click recorded once, and a
second reviewer deciding the same alert told with 409 (``test_workspace_browser``).
"""

from __future__ import annotations

import re
import shutil
import warnings
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import pytest

from triage.core import labels as L
from triage.loaders import load
from triage.workspace.alerts import build_alerts
from triage.workspace.app import Workspace, create_app
from triage.workspace.store import LabelsStore

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # Starlette suggests httpx2 for its test client
    from starlette.testclient import TestClient

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
needs_browser = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None,
    reason="headless browser test needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver)",
)
LONG = "suite-asv/bench.MultiValueDictBench.time_multi_value_dict_with_a_long_parameter_list/ubuntu-latest/conda-py3.10"


def _history_csv(path: Path) -> Path:
    """Two series with dated commits: ``LONG`` steps up 20 % at commit 30, ``s2`` down 30 % at 40."""
    rows = ["series_id,commit,timestamp,value"]
    for sid, at, factor in ((LONG, 30, 1.2), ("s2", 40, 0.7)):
        for i in range(80):
            value = 100.0 * (factor if i >= at else 1.0) + (i % 5) * 0.3
            rows.append(f"{sid},{sid[:2]}{i:03d}cafe,2026-03-{1 + i // 4:02d}T{(i % 4) * 6:02d}:00:00,{value}")
    path.write_text("\n".join(rows) + "\n")
    return path


def _candidates_csv(path: Path) -> Path:
    path.write_text(f"series_id,commit\n{LONG},su030cafe\ns2,s2040cafe\ns2,s2060cafe\n")
    return path


@pytest.fixture
def ws(tmp_path) -> Workspace:
    dataset = load(_history_csv(tmp_path / "history.csv"))
    alerts = build_alerts(dataset, _candidates_csv(tmp_path / "cands.csv"))
    return Workspace(dataset=dataset, alerts=alerts, store=LabelsStore(tmp_path / "labels.sqlite"),
                     commit_url="https://example.org/c/{commit}", sheriff="server-default")


class _Controls(HTMLParser):
    """Each button's text (hidden spans included: what a screen reader reads) and each note's aria-label."""

    def __init__(self) -> None:
        super().__init__()
        self.buttons: list[str] = []
        self.notes: list[str] = []
        self.alts: list[str] = []
        self._in_button = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "button" and "hidden" not in a:
            self._in_button = True
            self.buttons.append("")
        elif tag == "input" and a.get("name") == "note":
            self.notes.append(a.get("aria-label") or "")
        elif tag == "img":
            self.alts.append(a.get("alt") or "")

    def handle_endtag(self, tag):
        if tag == "button":
            self._in_button = False

    def handle_data(self, data):
        if self._in_button:
            self.buttons[-1] += data


def _controls(page: str) -> _Controls:
    parser = _Controls()
    parser.feed(page)
    return parser


def test_decision_controls_name_the_alert_they_decide(ws):
    client = TestClient(create_app(ws))
    first = ws.alerts[0]
    client.post("/decide", data={"csrf": ws.csrf, "series_id": first.series_id, "commit": first.commit,
                                 "decision": "true", "seen": "0"})
    c = _controls(client.get("/").text)
    decide = [b for b in c.buttons if b.split()[0] in ("true", "false", "unsure", "undo")]
    assert len(decide) == 3 * len(ws.alerts) + 1  # one undo: the decided alert
    for alert in ws.alerts:
        which = f"commit {alert.commit[:12]} of {alert.name}"
        for word in ("true", "false", "unsure"):
            assert f"{word} for {which}" in decide, (word, which, decide)
        assert f"note on {which}" in c.notes
    assert f"undo the decision on commit {first.commit[:12]} of {first.name}" in decide


def test_plot_text_names_the_candidates_and_their_shift(ws):
    client = TestClient(create_app(ws))
    (alt,) = _controls(client.get("/series", params={"id": "s2"}).text).alts
    assert alt.startswith("Plot of the values of s2 over its 80 commits, 2026-03-01 to 2026-03-20. 2 alerts marked: ")
    assert "commit s2040cafe (2026-03-11): median fell 29.8% (70.7 noise sd)" in alt
    assert "status untriaged" in alt and "commit s2060cafe" in alt
    (alt,) = _controls(client.get("/series", params={"id": LONG}).text).alts
    assert f"of {LONG}" in alt and "commit su030cafe (2026-03-08): median rose 19.9%" in alt


def test_plot_text_counts_the_confirmed_changes_it_draws(tmp_path):
    data = _history_csv(tmp_path / "history.csv")
    text = data.read_text().splitlines()
    # The data labels s2's change at commit 40 as confirmed; the workspace's only alert is at 60.
    out = [text[0] + ",label"] + [line + (",true_positive" if line.startswith("s2,s2040cafe") else ",")
                                  for line in text[1:]]
    data.write_text("\n".join(out) + "\n")
    dataset = load(data)
    cands = tmp_path / "c.csv"
    cands.write_text("series_id,commit\ns2,s2060cafe\n")
    ws = Workspace(dataset=dataset, alerts=build_alerts(dataset, cands), store=LabelsStore(tmp_path / "l.sqlite"))
    (alt,) = _controls(TestClient(create_app(ws)).get("/series", params={"id": "s2"}).text).alts
    assert "1 alert marked: commit s2060cafe" in alt
    assert alt.endswith(" 1 further change the data confirms, drawn as dashed lines.")


def test_a_name_saved_without_javascript_goes_with_the_decisions(ws):
    client = TestClient(create_app(ws))
    page = client.get("/?series=s2").text
    assert re.search(r'<form method="post" action="/sheriff"', page)
    saved = client.post("/sheriff", data={"csrf": ws.csrf, "who": "  Zoë Ng ", "next": "/?series=s2"},
                        follow_redirects=False)
    assert saved.status_code == 303 and saved.headers["location"] == "/?series=s2"
    assert 'id="sheriff" name="who" maxlength="200" value="Zoë Ng"' in client.get("/").text
    # The decision form as a browser without the script sends it: its 'who' empty.
    a = next(a for a in ws.alerts if a.series_id == "s2")
    form = {"csrf": ws.csrf, "series_id": a.series_id, "commit": a.commit, "seen": "0", "who": "", "next": "/"}
    assert client.post("/decide", data={**form, "decision": "false"}, follow_redirects=False).status_code == 303
    (d,) = ws.store.history()
    assert (d.label, d.who) == (L.FALSE_POSITIVE, "Zoë Ng")
    client.post("/undo", data={**form, "decision_id": str(d.id)}, follow_redirects=False)
    assert ws.store.get(d.id).undone_by == "Zoë Ng"
    # The script's name, when the page sends one, still wins; a stale form token is refused.
    client.post("/decide", data={**form, "seen": "0", "who": "from-the-script", "decision": "true"})
    assert ws.store.history()[-1].who == "from-the-script"
    assert client.post("/sheriff", data={"csrf": "stale", "who": "x"}).status_code == 403
    opened = client.get("/sheriff")  # the address typed, or a bookmark of it
    assert opened.status_code == 405 and "the name is saved by the sheriff field at the top of every page" in opened.text
    # Clearing the field forgets the name: the server's default again.
    client.post("/sheriff", data={"csrf": ws.csrf, "who": ""})
    assert 'value=""' in client.get("/").text.split('id="sheriff"')[1][:60]


def _title(page: str) -> str:
    return re.search(r"<title>(.*?)</title>", page, re.S).group(1)


def test_the_page_after_a_decision_says_what_was_recorded(ws):
    client = TestClient(create_app(ws))
    a = next(a for a in ws.alerts if a.series_id == LONG)
    form = {"csrf": ws.csrf, "series_id": a.series_id, "commit": a.commit, "seen": "0", "who": "ann"}
    page = client.post("/decide", data={**form, "decision": "false", "next": "/?status=untriaged"})
    assert page.url.path == "/" and _title(page.text) == "Recorded false - Alert queue - triage workspace"
    said = f"Recorded: false on commit {a.commit[:12]} of {LONG}, by ann."
    assert f'<p class="done" role="status">{said}</p>' in page.text
    again = client.get("/?status=untriaged").text  # said once
    assert 'class="done"' not in again and _title(again) == "Alert queue - triage workspace"
    (d,) = ws.store.history()
    page = client.post("/undo", data={**form, "decision_id": str(d.id), "next": f"/series?id={quote(LONG)}"})
    assert page.url.path == "/series" and _title(page.text).startswith("Undone - ")
    assert f"Undone: the false decision on commit {a.commit[:12]} of {LONG}. It is now undecided." in page.text
    # An undo that brings back an earlier decision names it (thirty-first session's sheriff walkthrough).
    first = client.post("/decide", data={**form, "decision": "true", "next": "/"})
    assert first.status_code == 200
    (_, d_true) = ws.store.history()
    client.post("/decide", data={**form, "seen": str(d_true.id), "decision": "unsure", "next": "/"})
    d_unsure = ws.store.history()[-1]
    page = client.post("/undo", data={**form, "decision_id": str(d_unsure.id), "next": "/"})
    assert f"Undone: the unsure decision on commit {a.commit[:12]} of {LONG}. It is now true, by ann." in page.text
    # A cookie naming no decision says nothing.
    client.cookies.set("triage_done", "999")
    assert 'class="done"' not in client.get("/").text


def test_filters_and_tables_are_found_by_landmark_and_caption(ws):
    client = TestClient(create_app(ws))
    page = client.get("/").text
    assert '<form method="get" action="/" class="filters" role="search" aria-label="filter the queue">' in page
    assert re.search(r'<table class="alerts[^"]*">\s*<caption[^>]*>Alerts, untriaged first', page)
    series = client.get("/series", params={"id": "s2"}).text
    assert re.search(r'<table class="alerts[^"]*">\s*<caption[^>]*>Alerts of this series', series)


def test_skip_link_leads_to_the_main_content(ws):
    page = TestClient(create_app(ws)).get("/").text
    body = page.split("<body>", 1)[1]
    assert re.match(r'\s*<a class="skip" href="#main">', body)
    assert '<main id="main">' in page and '<html lang="en">' in page


# --------------------------------------------------------------------------- in a real browser


def _driver(profile: Path, *, javascript: bool = True):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--window-size=1400,900", f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    if not javascript:
        opts.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    return webdriver.Chrome(service=Service(DRIVER), options=opts)


@needs_browser
@pytest.mark.slow
def test_narrow_windows_do_not_scroll_sideways_and_focus_is_visible(ws, tmp_path):
    pytest.importorskip("selenium", reason="selenium is a dev dependency: pip install -e '.[dev]'")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait
    from test_workspace_browser import Server

    a = ws.alerts[0]
    ws.store.record(a.series_id, a.commit, "true", who="ann")  # an agreement row and an undo button
    # The last: a 404 page naming a long series id, the kind a stale bookmark gives.
    pages = ["/", "/series?id=s2", f"/series?id={LONG}", "/agreement", f"/series?id={LONG}.removed"]
    widths: dict[tuple[int, str], tuple[int, int, float]] = {}
    with Server(create_app(ws)) as server:
        driver = _driver(tmp_path / "profile")
        try:
            base = f"http://127.0.0.1:{server.port}"
            # A phone, a 1280 px laptop at 200 % zoom, and a window just narrower than the table.
            for width, paths in ((320, pages), (640, pages[:3]), (930, pages[:1])):
                driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                       {"width": width, "height": 700, "deviceScaleFactor": 1, "mobile": False})
                for path in paths:
                    driver.get(base + path)
                    WebDriverWait(driver, 20).until(
                        lambda d: d.execute_script("return Array.from(document.images).every(i => i.complete)"))
                    wide, shown = driver.execute_script(
                        "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
                    buttons = driver.find_elements(By.CSS_SELECTOR, "form.decide button:not([hidden])")
                    right = max((b.rect["x"] + b.rect["width"] for b in buttons), default=0.0)
                    widths[(width, path)] = (wide, shown, right)
            driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
            driver.get(base + "/")
            driver.switch_to.active_element.send_keys(Keys.TAB)  # from the autofocused note to 'true'
            focused = driver.switch_to.active_element
            outline = driver.execute_script(
                "var s = getComputedStyle(arguments[0]); return [s.outlineStyle, parseFloat(s.outlineWidth)]", focused)
            word = focused.get_attribute("value")
        finally:
            driver.quit()
    for (width, path), (wide, shown, right) in widths.items():
        assert wide <= shown, f"{path} at {width} px: {wide} px wide in a {shown} px window"
        assert right <= shown, f"{path} at {width} px: decision buttons end at {right} px"
    assert word == "true" and outline[0] == "solid" and outline[1] >= 2, outline


@needs_browser
@pytest.mark.slow
def test_without_javascript_the_saved_name_decides(ws, tmp_path):
    pytest.importorskip("selenium", reason="selenium is a dev dependency: pip install -e '.[dev]'")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait
    from test_workspace_browser import Server

    with Server(create_app(ws)) as server:
        driver = _driver(tmp_path / "profile", javascript=False)
        try:
            wait = WebDriverWait(driver, 20)
            driver.get(f"http://127.0.0.1:{server.port}/?series=s2")
            driver.find_element(By.ID, "sheriff").send_keys("policy-bound reviewer")
            driver.find_element(By.CSS_SELECTOR, "form.sheriff button").click()
            wait.until(lambda d: d.find_element(By.ID, "sheriff").get_attribute("value") == "policy-bound reviewer")
            row = driver.find_element(By.CSS_SELECTOR, "table.alerts tbody tr")
            commit = row.get_attribute("data-commit")
            row.find_element(By.CSS_SELECTOR, "button.b-false").click()
            by = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f'tr[data-commit="{commit}"] .by'))).text
        finally:
            driver.quit()
    assert by.startswith("false by policy-bound reviewer")
    assert [(d.commit, d.who) for d in ws.store.history()] == [(commit, "policy-bound reviewer")]
