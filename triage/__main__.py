"""``python -m triage``: the ``triage`` command (as the console script runs it)."""

from triage.cli.app import main

if __name__ == "__main__":
    main()
