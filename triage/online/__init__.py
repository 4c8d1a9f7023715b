"""The online loop (Algorithm 1 of Bauer et al.): per-series state, decisions, and the store that persists them."""
