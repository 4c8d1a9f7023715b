"""The online loop (Algorithm 1 of Bauer et al.): ``loop`` (OnlineTriage), ``series_state`` (per-series state), ``records`` (decisions, errors), ``state_store`` (SQLite persistence)."""
