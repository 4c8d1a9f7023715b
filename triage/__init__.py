"""changepoint-triage: learn the triage of performance change-point alerts.

The user-facing package: data model and loaders, synthetic histories, the CLI,
and (in later modules) the online loop, batch labelling and candidate scoring.
"""

__version__ = "0.1.0"
