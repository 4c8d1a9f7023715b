"""Classifiers over the window characteristics, the evaluation protocol,
experiment tracking and model files."""
