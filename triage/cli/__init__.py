"""The ``triage`` command line: :mod:`triage.cli.app` assembles one module per group of commands."""
