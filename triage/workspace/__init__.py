"""The triage workspace: a local web application where a sheriff reviews alerts.

``triage serve`` starts it (:mod:`triage.cli.workspace`). The model proposes
(P(true) from :mod:`triage.scoring`), the sheriff decides (true / false /
unsure, stored by :mod:`triage.workspace.store`), and the decisions become
training data (``triage train --labels``) and an agreement record by week.

* :mod:`~triage.workspace.alerts` - the alert queue: each candidate with its
  series name, date, % change, direction, P(true), detector and a plain reason;
* :mod:`~triage.workspace.store` - the SQLite labels store (WAL, one
  transaction per decision), its export in the long layout, the overlay onto a
  dataset and the agreement by week;
* :mod:`~triage.workspace.app` - the Starlette application (pages, CSRF,
  access token, escaping);
* ``templates/`` and ``static/`` - Jinja2 pages and the project's own small
  CSS / JS (nothing fetched from the internet, no third-party script).
"""
