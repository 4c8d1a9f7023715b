"""Classifiers over the window characteristics, the evaluation protocol,
experiment tracking and model files."""

# The repository keeps ``training/`` at its top level (the design's layout) and
# ``triage/training`` links to it, so the installed import name is
# ``triage.training``: a user's own ``training/`` folder can neither shadow nor be
# shadowed by ours.  Importing the folder under its bare name would load every
# module a second time under another identity.
if __name__ != "triage.training":
    raise ImportError(f"import triage.training, not {__name__}")

