"""Shared fixtures. ``shared_data`` points at ../shared/data and skips cleanly without it."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
import typer.main
import typer.testing
from hypothesis import settings

# `make test` draws the same examples in every run: a random draw that meets a rare edge case failed
# one run in many (CI's verdict by chance). HYPOTHESIS_PROFILE=explore draws new examples each run,
# to look for such cases on purpose; what it finds becomes an explicit test.
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def _built_once(get_command):
    """``get_command`` remembering the click command it built for each Typer app.

    typer builds the whole click command tree from the functions' signatures at
    every ``CliRunner().invoke(app, ...)`` (0.07-0.08 s for ``triage``'s 22
    commands, about 1,400 times a suite run); a ``triage`` process builds it once.
    The tree holds no state of a run: a context is made per invocation.
    """
    built: dict[int, tuple[object, object]] = {}

    def cached(typer_instance):
        app, command = built.get(id(typer_instance), (None, None))
        if app is not typer_instance:
            command = get_command(typer_instance)
            built[id(typer_instance)] = (typer_instance, command)
        return command

    return cached


typer.main.get_command = _built_once(typer.main.get_command)
if hasattr(typer.testing, "_get_command"):  # the name CliRunner.invoke calls (typer 0.12-0.x)
    typer.testing._get_command = typer.main.get_command


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data folder {SHARED_DATA} is absent (../shared beside the checkout)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def small_dataset():
    """The small synthetic preset, generated once per test session."""
    from triage.synthetic import generate

    return generate("small", seed=0)


def _real_histories(**options) -> pd.DataFrame:
    path = SHARED_DATA / "real" / "histories.csv.gz"
    if not path.is_file():
        pytest.skip(f"real histories {path} are absent (../shared beside the checkout)")
    return pd.read_csv(path, **options)


@pytest.fixture(scope="module")
def real_frame() -> pd.DataFrame:
    """The 372 real histories of ../shared/data/real as pandas reads them (read again per module: tests may edit it)."""
    return _real_histories()


@pytest.fixture(scope="module")
def real_frame_text() -> pd.DataFrame:
    """The real histories with the values as written (text), for writing them back out exactly."""
    return _real_histories(dtype={"value": str})


#: Test files holding the suite's longest tests (the installed wheel's demo and tour, 2-6 min; kill -9
#: at each step of train, about 1 min). Collected first: with ``pytest -n 2`` one worker starts on them
#: while the other works through the rest, instead of one running alone at the end of the run.
LONGEST_FIRST: tuple[str, ...] = ("test_wheel.py", "test_train_crash.py")


def pytest_collection_modifyitems(config, items) -> None:
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order
