"""Finding a model directory from what a user types after ``--model``.

Three spellings, tried in this order:

``models:/name@alias`` or ``models:/name/version``
    An MLflow registry URI, resolved by
    :func:`triage.training.tracking.resolve_registry_uri` to a local model
    directory.
a path
    An existing directory (anything with a ``/`` or that exists) is used as is.
a bundled name
    ``default`` or any sub-directory of the bundled models
    (``default-adaptive``, ``default-w0``, ... : whatever ``models/`` holds).
    They travel inside the installed package as ``triage.models`` package
    data, so a wheel installed anywhere finds them; in a checkout
    ``triage/models`` is a link to the top-level ``models/`` folder.

``default`` means the bundled model for the job: the adaptive-window model
for alerts (``label``), the candidate-bounded scoring model for ``score``
(``scoring``) and the online model with a confirmation delay of 4 commits
(``online-w4``, chosen on the real-data validation part) for the online loop
(``watch``, ``detect``). Commands take the ``TRIAGE_MODEL`` environment
variable when ``--model`` is not given.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from triage.core.errors import InputError
from triage.training.model_dirs import MANIFEST

#: The bundled model each kind of job uses when the user says ``default`` (or nothing).
DEFAULTS: dict[str, str] = {"alerts": "default-adaptive", "online": "online-w4", "scoring": "default-scoring"}
REGISTRY_PREFIX = "models:/"


def bundled_models_dir() -> Path:
    """The directory holding the bundled models, installed or in a checkout."""
    # `triage/models` is a data-only folder (no __init__.py): package data in
    # the wheel, a link to ../models in a checkout; both sit inside `triage`.
    return Path(str(resources.files("triage"))) / "models"


def bundled_names() -> list[str]:
    """Names of the bundled models (every sub-directory with a manifest), sorted."""
    root = bundled_models_dir()
    return sorted(p.name for p in root.iterdir() if (p / MANIFEST).is_file())


def bundled_model(name: str) -> Path:
    """The bundled model directory called ``name``; InputError listing the names when absent."""
    path = bundled_models_dir() / name
    if not (path / MANIFEST).is_file():
        known = ", ".join(bundled_names()) or "none"
        raise InputError(name, None, f"no bundled model of this name (bundled: {known}; or give a model directory)")
    return path


def resolve_model(spec: str | Path | None, job: str = "alerts") -> Path:
    """The model directory meant by ``spec`` (see the module docstring).

    ``spec`` None or empty means the bundled default for ``job`` (``alerts``
    or ``online``).
    """
    if job not in DEFAULTS:
        raise ValueError(f"unknown job {job!r} (use one of {', '.join(DEFAULTS)})")
    text = "" if spec is None else str(spec).strip()
    if text in ("", "default"):
        return bundled_model(DEFAULTS[job])
    if text.startswith(REGISTRY_PREFIX):
        return _from_registry(text)
    path = Path(text).expanduser()
    if path.exists() or os.sep in text or text.startswith("."):
        if not path.is_dir():
            raise InputError(path, None, "not a model directory (give a directory written by `triage train`)")
        return path
    return bundled_model(text)


#: The registry models this process has resolved: their local copy (real path) -> the ``models:/``
#: address given, so that an error about the copy names the address (it named a cache folder).
REGISTRY_COPIES: dict[str, str] = {}


def _from_registry(uri: str) -> Path:
    """Delegate ``models:/...`` to the tracking module (MLflow is imported only here)."""
    from triage.training.tracking import resolve_registry_uri

    path = Path(resolve_registry_uri(uri))
    REGISTRY_COPIES[os.path.realpath(path)] = uri
    return path


def registry_address(source: str | Path) -> str | None:
    """The ``models:/`` address whose local copy holds ``source`` (the copy or a file in it), else None."""
    real = os.path.realpath(source)
    for copy, uri in REGISTRY_COPIES.items():
        if real == copy or real.startswith(copy + os.sep):
            return uri
    return None
