"""The wheel a user installs: built from the checkout, installed outside it, runs the demo and a tour.

The wheel is built offline (no build isolation, no index) from a copy of the
checkout, installed with ``--no-deps --no-index`` into a fresh virtualenv in
a temporary directory; that virtualenv sees the project's dependencies
through a ``.pth`` line naming this interpreter's site-packages (a ``.pth``
there is not processed in turn, so the checkout's editable install stays
invisible). Every command then runs from a directory outside the checkout;
the last ones as a CI job or a container runs them: a fresh HOME, TMPDIR
naming no folder, the C locale, ``python -I``. The installed copy starts with
the feature kernels the checkout compiled in its cache folder, as a user whose
cache already holds them (numba checks them against the sources' bytes), and
compiles the model kernels itself. (The sdist, the build's output and the
metadata: tests/test_walkthrough_s18_install.py.)
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Top-level folders the wheel does not need (and caches that may be large or busy).
SKIP_TOP = {".venv", ".git", "build", "dist", ".mypy_cache", ".ruff_cache", ".pytest_cache",
            ".hypothesis", "demo-out", "data", "benchmarks", "tests", "mlruns", "mlartifacts"}

pytestmark = pytest.mark.slow


def _copy_checkout(dst: Path) -> Path:
    def ignore(directory: str, names: list[str]) -> set[str]:
        skip = {n for n in names if n == "__pycache__" or n.endswith((".egg-info", ".db")) or n.startswith("mlruns")}
        if Path(directory) == ROOT:
            skip |= {n for n in names if n in SKIP_TOP}
        return skip

    shutil.copytree(ROOT, dst, symlinks=True, ignore=ignore)
    return dst


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 120,
         stdin: str | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, input=stdin)
    assert done.returncode == 0, f"{' '.join(map(str, args))} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


#: The checkout's folder of compiled feature kernels (numba's choice for a checkout: beside the sources).
CHECKOUT_KERNELS = ROOT / "features" / "__pycache__"


def _kernel_cache_folder(cache: Path, package_dir: Path) -> Path:
    """Where numba keeps the kernels of the modules in ``package_dir`` under ``NUMBA_CACHE_DIR=cache``."""
    from numba.core.caching import UserProvidedCacheLocator

    return cache / UserProvidedCacheLocator.get_suitable_cache_subpath(str(package_dir / "module.py"))


def _seed_kernel_cache(package: Path, cache: Path) -> None:
    """Give the installed copy the feature kernels the checkout compiled (``make kernels``), as a warm cache.

    numba stamps a cached kernel with a hash of its source file's bytes, which the
    wheel keeps, so the installed copy loads them instead of compiling them again
    (compiling every kernel cold, the demo-and-tour test took 129 s of a suite
    run; seeded, 49 s while another run shared the cores). Only
    ``training/compiled.py``'s kernels are left out: the installed copy compiles
    those itself, into the user's cache folder (checked after the demo). A
    checkout without compiled kernels seeds nothing; the demo then compiles all.
    """
    target = _kernel_cache_folder(cache, package / "features")
    target.mkdir(parents=True)
    for f in CHECKOUT_KERNELS.glob("*.nb[ic]") if CHECKOUT_KERNELS.is_dir() else ():
        shutil.copy2(f, target / f.name)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, dict[str, str], Path]:
    """(bin directory of the fresh virtualenv, its environment, a working directory outside the checkout)."""
    base = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "TRIAGE_MODEL")}
    env["PIP_NO_INPUT"] = "1"
    # An installed package compiles its kernels into the user's cache folder: a fresh one per run,
    # not 7.8 MB more in the developer's ~/.cache each time (the path is new each run, never reused).
    env["XDG_CACHE_HOME"] = str(base / "cache")
    src = _copy_checkout(base / "src")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
          "-w", str(base / "dist"), str(src)], cwd=base, env=env, timeout=300)
    wheel = next((base / "dist").glob("changepoint_triage-*.whl"))
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=base, env=env)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "project-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q", "--no-deps",
          "--no-index", str(wheel)], cwd=base, env=env, timeout=300)
    _seed_kernel_cache(site / "triage", base / "cache" / "changepoint-triage" / "numba")
    work = base / "work"
    work.mkdir()
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["MPLBACKEND"] = "Agg"
    return venv / "bin", env, work


def test_the_wheel_carries_the_models_and_only_triage(installed):
    bindir, env, work = installed
    wheel = next((work.parent / "dist").glob("*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {"triage"}
    for model in (p.name for p in (ROOT / "models").iterdir() if (p / "manifest.json").is_file()):
        assert f"triage/models/{model}/manifest.json" in names
    where = _run([str(bindir / "python"), "-c", "import triage, triage.model_lookup as m; "
                  "print(triage.__file__); print(m.bundled_models_dir())"], cwd=work, env=env).stdout.split()
    venv = bindir.parent
    assert all(Path(p).resolve().is_relative_to(venv.resolve()) for p in where), where


def test_demo_and_tour_run_from_the_installed_wheel(installed):
    bindir, env, work = installed
    triage = str(bindir / "triage")
    assert "changepoint-triage" in _run([triage, "--version"], cwd=work, env=env).stdout
    _run([triage, "demo", "--out", "demo"], cwd=work, env=env, timeout=300)
    assert (work / "demo" / "report" / "index.html").is_file()
    # The kernels it compiled went to the user's cache folder, next to the seeded ones; none to site-packages.
    package = next((bindir.parent / "lib").glob("python3*/site-packages")) / "triage"
    cache = Path(env["XDG_CACHE_HOME"]) / "changepoint-triage" / "numba"
    training = _kernel_cache_folder(cache, package / "training")
    assert set(cache.iterdir()) == {_kernel_cache_folder(cache, package / "features"), training}
    assert any(training.glob("compiled.*.nbi"))
    assert not list(package.rglob("*.nb[ic]"))
    # The tour, CI-sized: data from the demo, every model found by name, outputs through '-'.
    data = str(work / "demo" / "data")
    _run([triage, "summary", "--data", data], cwd=work, env=env)
    cands = _run([triage, "candidates", "--data", data, "--detector", "perfherder", "--out", "-"], cwd=work, env=env)
    (work / "cands.csv").write_text(cands.stdout)
    # The model by name from the environment (the demo already ran the online loop and labelling).
    scored = _run([triage, "score", "--data", data, "--candidates", "cands.csv", "--out", "-", "--format", "json"],
                  cwd=work, env={**env, "TRIAGE_MODEL": "default-adaptive"})
    assert scored.stdout.count("\n") == cands.stdout.count("\n") - 1  # one JSON line per candidate

    # What a CI job or a container gives: a fresh HOME, TMPDIR naming no folder, the C locale,
    # `python -I`: `score` and `watch` find their default models in the installation and write
    # nothing beside the data. The demo's kernel cache is named: a fresh HOME alone compiled every
    # kernel again (53 of this test's 136 s), which no other check here needs.
    here = work / "bare"
    (here / "home").mkdir(parents=True)
    bare = {"PATH": env["PATH"], "HOME": str(here / "home"), "TMPDIR": str(here / "no-such-folder"),
            "LC_ALL": "C", "LANG": "C", "MPLBACKEND": "Agg", "XDG_CACHE_HOME": env["XDG_CACHE_HOME"]}
    steps = {"db.insert": 30, "db.query": 25}  # one step of 20 noise sd each: the only true change
    rng = random.Random(18)
    rows = [(s, f"c{i:03d}", round(100 + rng.gauss(0, 1) + 20 * (i >= at), 3)) for s, at in steps.items() for i in range(60)]
    (here / "h.csv").write_text("series_id,commit,value\n" + "".join(f"{s},{c},{v}\n" for s, c, v in rows))
    py = [str(bindir / "python"), "-I", "-m", "triage.cli.app"]
    cands = _run([*py, "candidates", "--data", "h.csv", "--detector", "perfherder", "--out", "-"], cwd=here, env=bare)
    scored = _run([*py, "score", "--data", "h.csv", "--candidates", "-", "--out", "-", "--format", "json"],
                  cwd=here, env=bare, stdin=cands.stdout)
    calls = [(r["series_id"], r["commit"]) for r in map(json.loads, scored.stdout.splitlines())
             if r["classification"] == "true_positive"]
    assert sorted(calls) == [(s, f"c{at:03d}") for s, at in steps.items()]
    feed = "".join(json.dumps({"series_id": s, "commit": c, "value": v}) + "\n" for s, c, v in rows)
    watched = _run([triage, "watch"], cwd=here, env=bare, stdin=feed)
    found = [(r["series_id"], r["commit"]) for r in map(json.loads, watched.stdout.splitlines()) if r["decision"]]
    assert sorted(found) == [(s, f"c{at:03d}") for s, at in steps.items()]
    assert sorted(p.name for p in here.iterdir()) == ["h.csv", "home"]
