"""The state store's errors for a path it cannot use name the actual cause."""

from __future__ import annotations

import pytest

from triage.online.state_store import StateStore, StateStoreError


def test_a_state_file_in_a_missing_folder_says_the_folder_is_missing(tmp_path):
    # It said "cannot open the state file: unable to open database file" (SQLite's words).
    path = tmp_path / "no" / "such" / "state.db"
    with pytest.raises(StateStoreError) as err:
        StateStore(path)
    assert "no such folder" in str(err.value) and str(tmp_path / "no" / "such") in str(err.value)
    assert not (tmp_path / "no").exists()  # not created behind the user's back either
