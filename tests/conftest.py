"""Shared fixtures. ``shared_data`` points at ../shared/data and skips cleanly without it."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


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
