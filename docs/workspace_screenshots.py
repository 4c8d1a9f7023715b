"""Screenshots of a running triage workspace for the README (headless chromium through selenium).

Usage, on the demo's data (``make demo`` prints the serve command)::

    triage serve --data demo-out/data/history.parquet --candidates demo-out/candidates.csv \\
        --model models/default-adaptive --labels demo-out/labels.sqlite --port 8765 \\
        --commit-url 'https://github.com/example/repo/commit/{commit}'
    python docs/workspace_screenshots.py --url http://127.0.0.1:8765 --decide 2

``--decide N`` clicks *true* on the first N alerts first, so the picture shows
decided rows. Writes ``docs/workspace-queue.png`` and
``docs/workspace-series.png``, reduced to a 64-colour palette to stay small.
"""

from __future__ import annotations

import argparse
import io
import shutil
import tempfile
from pathlib import Path

from PIL import Image
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1500,900")


def save(png: bytes, path: Path) -> None:
    Image.open(io.BytesIO(png)).convert("RGB").quantize(64).save(path, optimize=True)
    print(f"{path}: {path.stat().st_size / 1024:.0f} KiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8765")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    parser.add_argument("--decide", type=int, default=0)
    args = parser.parse_args()
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in FLAGS:
        opts.add_argument(flag)
    with tempfile.TemporaryDirectory() as profile:
        opts.add_argument(f"--user-data-dir={profile}")
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
        try:
            driver.get(args.url + "/")
            driver.find_element(By.ID, "sheriff").send_keys("ann")
            for k in range(args.decide):
                driver.get(args.url + "/")
                rows = driver.find_elements(By.CSS_SELECTOR, "table.alerts tbody tr.st-untriaged")
                rows[0].find_element(By.CSS_SELECTOR, "button.b-true" if k % 2 == 0 else "button.b-false").click()
            driver.get(args.url + "/")
            save(driver.get_screenshot_as_png(), args.out / "workspace-queue.png")
            driver.find_element(By.CSS_SELECTOR, "table.alerts tbody td.series a").click()
            save(driver.get_screenshot_as_png(), args.out / "workspace-series.png")
        finally:
            driver.quit()


if __name__ == "__main__":
    main()
