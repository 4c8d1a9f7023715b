"""Readers of the formats benchmark tools write, one small module per format.

:func:`triage.loaders.load` dispatches to them after :mod:`triage.sniffing`
has told the layout; each returns a :class:`~triage.core.history.Dataset` and
reports bad input as :class:`~triage.core.errors.InputError` (file, row, problem).
"""
