"""The bottom layer: the data model every other package stands on.

Series and datasets (:mod:`~triage.core.history`), the label vocabulary
(:mod:`~triage.core.labels`), the one user-facing error
(:mod:`~triage.core.errors`), atomic writes (:mod:`~triage.core.atomic`) and
the metrics that score predictions against truth (:mod:`~triage.core.metrics`).
It imports nothing from the rest of the product.
"""
