"""changepoint-triage: learn the triage of performance change-point alerts (Bauer et al., ICPE 2022).

Layers, each importing only from the layers before it:

1. ``triage.core`` -- the data model every package stands on: series and
   datasets (``history``), the label vocabulary (``labels``), the one
   user-facing error (``errors``), atomic writes (``atomic``), metrics
   (``metrics``), the timestamp rule (``timestamps``), the ``key=value``
   parameter grammar (``params``) and where numba's compiled kernels are
   cached on a read-only installation (``compile_cache``).
2. ``triage.detectors`` (statistical change-point detectors, one registry of
   names) and ``triage.features`` (Pre/After windows and their
   characteristics, the feature matrix).
3. ``triage.training`` -- classifiers, evaluation, tracking and model files.
4. The product: ``loaders`` and ``sniffing`` (reading users' files),
   ``synthetic`` (generated histories), ``inference`` (applying a model to
   feature rows), ``batch_label``, ``candidate_files`` and ``scoring``
   (detector candidates), ``explain``, ``online`` (the streaming loop and its
   state store), ``report`` and ``plotting``.
5. ``triage.cli`` -- the ``triage`` command, one module per group of commands.
"""

__version__ = "0.1.0"

import os as _os
from pathlib import Path as _Path

from triage.core.compile_cache import cache_dir as _cache_dir
from triage.core.compile_cache import matplotlib_dir as _matplotlib_dir

# before numba is first imported: it reads NUMBA_CACHE_DIR once, at import
if (_folder := _cache_dir(_Path(__file__).resolve().parent)) is not None:
    _os.environ["NUMBA_CACHE_DIR"] = _folder
# likewise MPLCONFIGDIR for matplotlib (a read-only home: no warning on every plot)
if (_folder := _matplotlib_dir()) is not None:
    _os.environ["MPLCONFIGDIR"] = _folder
