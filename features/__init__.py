"""Pre/After windows around a candidate commit and the time-series characteristics
that describe them (Bauer et al., ICPE 2022)."""
