"""Pre/After windows around a candidate commit and the time-series characteristics
that describe them (Bauer et al., ICPE 2022)."""

# The repository keeps ``features/`` at its top level (the design's layout) and
# ``triage/features`` links to it, so the installed import name is
# ``triage.features``: a user's own ``features/`` folder can neither shadow nor be
# shadowed by ours.  Importing the folder under its bare name would load every
# module a second time under another identity.
if __name__ != "triage.features":
    raise ImportError(f"import triage.features, not {__name__}")

