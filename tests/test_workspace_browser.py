"""End to end: the workspace in a real headless browser (Debian's chromium through selenium).

Opens the queue, records a decision with one click, reloads and finds it,
opens the series page and checks its plot loaded, and checks the browser
console stayed free of errors (a CSP violation or a failed request would
show there). Skips, saying why, only when chromium or its driver is absent;
``.ci/run`` installs both.
"""

from __future__ import annotations

import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

from triage.core import labels as L

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
MODEL = Path(__file__).resolve().parents[1] / "models" / "default-adaptive"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
         "--window-size=1400,1000")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None,
    reason="headless browser test needs Debian's chromium and chromium-driver "
           "(apt-get install -y chromium chromium-driver; .ci/run installs them)",
)


class Server:
    """uvicorn serving an app on a free loopback port, in a thread."""

    def __init__(self, app):
        import uvicorn

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


def browser(profile: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in FLAGS:
        opts.add_argument(flag)
    opts.add_argument(f"--user-data-dir={profile}")  # a fresh profile: no state from earlier runs
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(DRIVER), options=opts)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    from triage.inference import load_classifier
    from triage.synthetic import generate
    from triage.workspace.alerts import build_alerts
    from triage.workspace.app import Workspace
    from triage.workspace.store import LabelsStore

    full = generate("small", seed=5)
    dataset = full.subset(full.series_ids[:8])
    alerts = build_alerts(dataset, None, load_classifier(MODEL))
    store = LabelsStore(tmp_path_factory.mktemp("ws") / "labels.sqlite")
    return Workspace(dataset=dataset, alerts=alerts, store=store, model_name="default-adaptive",
                     commit_url="https://example.org/commit/{commit}", sheriff="default")


@pytest.mark.slow
def test_decision_in_a_real_browser(workspace, tmp_path):
    pytest.importorskip("selenium", reason="selenium is a dev dependency: pip install -e '.[dev]'")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    from triage.workspace.app import create_app

    with Server(create_app(workspace)) as server:
        base = f"http://127.0.0.1:{server.port}"
        driver = browser(tmp_path / "profile")
        try:
            wait = WebDriverWait(driver, 20)
            driver.get(base + "/")
            assert "Alert queue" in driver.title
            name = driver.find_element(By.ID, "sheriff")
            name.send_keys("e2e-sheriff")
            row = driver.find_element(By.CSS_SELECTOR, "table.alerts tbody tr")
            series, commit = row.get_attribute("data-series"), row.get_attribute("data-commit")
            assert row.find_element(By.CSS_SELECTOR, ".badge").text == "untriaged"
            row.find_element(By.CSS_SELECTOR, "input[name=note]").send_keys("seen in the e2e test")
            row.find_element(By.CSS_SELECTOR, "button.b-true").click()
            selector = f'tr[data-commit="{commit}"] .by'
            wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, selector)))
            driver.refresh()
            found = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f'tr[data-commit="{commit}"]')))
            assert found.find_element(By.CSS_SELECTOR, ".badge").text == "true"
            assert "true by e2e-sheriff" in found.find_element(By.CSS_SELECTOR, ".by").text
            (decision,) = workspace.store.current().values()
            assert (decision.series_id, decision.commit, decision.label, decision.who, decision.note) == (
                series, commit, L.TRUE_POSITIVE, "e2e-sheriff", "seen in the e2e test")
            # The series page: its plot is served and decoded.
            found.find_element(By.CSS_SELECTOR, "td.series a").click()
            img = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "img.plot")))
            wait.until(lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", img))
            logs = driver.get_log("browser")
        finally:
            driver.quit()
    errors = [e for e in logs if e.get("level") == "SEVERE"]
    assert not errors, errors


@pytest.fixture
def fresh_workspace(workspace, tmp_path):
    """The module's data and alerts with an empty labels store of its own."""
    from dataclasses import replace

    from triage.workspace.store import LabelsStore

    return replace(workspace, store=LabelsStore(tmp_path / "labels.sqlite"))


@pytest.mark.slow
def test_enter_in_the_note_field_records_no_decision(fresh_workspace, tmp_path):
    """Enter in a text field submits its form with the form's first button: it must not be 'true'."""
    pytest.importorskip("selenium", reason="selenium is a dev dependency: pip install -e '.[dev]'")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    from triage.workspace.app import create_app

    ws = fresh_workspace
    with Server(create_app(ws)) as server:
        driver = browser(tmp_path / "profile")
        try:
            driver.get(f"http://127.0.0.1:{server.port}/")
            row = driver.find_element(By.CSS_SELECTOR, "table.alerts tbody tr")
            commit = row.get_attribute("data-commit")
            note = row.find_element(By.CSS_SELECTOR, "input[name=note]")
            note.send_keys("only noise, I think" + Keys.ENTER)
            # Then the decision the sheriff meant, with the button: the note goes with it.
            row.find_element(By.CSS_SELECTOR, "button.b-false").click()
            WebDriverWait(driver, 20).until(
                EC.presence_of_element_located((By.CSS_SELECTOR, f'tr[data-commit="{commit}"] .by')))
        finally:
            driver.quit()
    assert [(d.commit, d.label, d.note) for d in ws.store.history()] == [
        (commit, L.FALSE_POSITIVE, "only noise, I think")]


@pytest.mark.slow
def test_long_series_names_keep_the_decision_buttons_on_screen(tmp_path):
    """Real series ids run to 130 characters without a space (asv: module.Class.method/machine/env)."""
    pytest.importorskip("selenium", reason="selenium is a dev dependency: pip install -e '.[dev]'")
    import numpy as np
    import pandas as pd
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    from triage.core.history import Dataset, History
    from triage.workspace.alerts import build_alerts
    from triage.workspace.app import Workspace, create_app
    from triage.workspace.store import LabelsStore

    name = ("suite-asv/data_struct_benchmarks.multi_value_dict.benchmark.MultiValueDictBench."
            "time_multi_value_dict_with_a_long_parameter_list/ubuntu-latest/conda-py3.10-numpy1.26")
    n = 60
    labels = np.full(n, L.NONE, dtype=object)
    labels[30] = L.NOT_TRIAGED
    h = History(name, [f"{i:040x}" for i in range(n)], np.r_[np.ones(30), np.full(30, 2.0)], labels,
                timestamps=pd.date_range("2026-01-01", periods=n).to_numpy())
    dataset = Dataset([h], source="<test>")
    ws = Workspace(dataset=dataset, alerts=build_alerts(dataset), store=LabelsStore(tmp_path / "l.sqlite"))
    with Server(create_app(ws)) as server:
        driver = browser(tmp_path / "profile")
        try:
            driver.get(f"http://127.0.0.1:{server.port}/")
            wide, shown = driver.execute_script(
                "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            button = driver.find_element(By.CSS_SELECTOR, "button.b-unsure")
            right = driver.execute_script("return arguments[0].getBoundingClientRect().right", button)
            driver.find_element(By.CSS_SELECTOR, "td.series a").click()
            WebDriverWait(driver, 20).until(EC.presence_of_element_located((By.CSS_SELECTOR, "img.plot")))
            page_wide = driver.execute_script("return document.documentElement.scrollWidth")
        finally:
            driver.quit()
    assert wide <= shown, "the queue scrolls sideways"
    assert right <= shown, "the decision buttons are off screen"
    assert page_wide <= shown, "the series page scrolls sideways"


@pytest.mark.slow
def test_two_tabs_deciding_one_alert_keep_the_first_decision(fresh_workspace, tmp_path):
    """The second tab still shows 'untriaged': its decision is refused, with a link back to the alert."""
    pytest.importorskip("selenium", reason="selenium is a dev dependency: pip install -e '.[dev]'")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    from triage.workspace.app import create_app

    ws = fresh_workspace
    with Server(create_app(ws)) as server:
        base = f"http://127.0.0.1:{server.port}/"
        driver = browser(tmp_path / "profile")
        try:
            wait = WebDriverWait(driver, 20)
            driver.get(base)
            first = driver.current_window_handle
            commit = driver.find_element(By.CSS_SELECTOR, "table.alerts tbody tr").get_attribute("data-commit")
            driver.switch_to.new_window("tab")
            driver.get(base)
            second = driver.current_window_handle
            driver.switch_to.window(first)
            driver.find_element(By.CSS_SELECTOR, f'tr[data-commit="{commit}"] button.b-true').click()
            wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f'tr[data-commit="{commit}"] .by')))
            driver.switch_to.window(second)
            driver.find_element(By.CSS_SELECTOR, f'tr[data-commit="{commit}"] button.b-false').click()
            wait.until(EC.title_contains("Error"))
            heading = driver.find_element(By.TAG_NAME, "h1").text
            message = driver.find_element(By.CSS_SELECTOR, "p.error").text
            driver.find_element(By.LINK_TEXT, "back to the alert").click()
            badge = wait.until(EC.presence_of_element_located(
                (By.CSS_SELECTOR, f'tr[data-commit="{commit}"] .badge'))).text
        finally:
            driver.quit()
    assert heading == "409 Conflict" and "decided meanwhile" in message
    assert badge == "true"
    assert [(d.commit, d.label) for d in ws.store.history()] == [(commit, L.TRUE_POSITIVE)]


@pytest.mark.slow
def test_after_a_decision_the_keyboard_is_at_the_next_alert(fresh_workspace, tmp_path):
    """A sheriff working from the keyboard: after each decision, focus is on the next untriaged alert's note."""
    pytest.importorskip("selenium", reason="selenium is a dev dependency: pip install -e '.[dev]'")
    from dataclasses import replace

    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    from triage.workspace.app import create_app

    # Every alert untriaged: there is a next one to go to.
    ws = replace(fresh_workspace, alerts=[replace(a, data_label=L.NOT_TRIAGED) for a in fresh_workspace.alerts])
    with Server(create_app(ws)) as server:
        driver = browser(tmp_path / "profile")
        try:
            wait = WebDriverWait(driver, 20)
            driver.get(f"http://127.0.0.1:{server.port}/")
            rows = driver.find_elements(By.CSS_SELECTOR, "table.alerts tbody tr")
            first, second = (r.get_attribute("data-commit") for r in rows[:2])
            focused = driver.switch_to.active_element
            assert focused.get_attribute("name") == "note"
            focused.send_keys("seen it", Keys.TAB, Keys.TAB, Keys.SPACE)  # note, then 'false' (true, false, unsure)
            wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f'tr[data-commit="{first}"] .by')))
            focused = driver.switch_to.active_element
            row = focused.find_element(By.XPATH, "ancestor::tr").get_attribute("data-commit")
            name = focused.get_attribute("name")
        finally:
            driver.quit()
    assert [(d.commit, d.label, d.note) for d in ws.store.history()] == [(first, L.FALSE_POSITIVE, "seen it")]
    assert (row, name) == (second, "note")
