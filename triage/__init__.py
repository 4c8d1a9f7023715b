"""changepoint-triage: learn the triage of performance change-point alerts (Bauer et al., ICPE 2022).

Layers (``triage.core``; ``triage.detectors`` and ``triage.features``;
``triage.training``; the product modules; ``triage.cli``), each importing only
from the layers before it: ARCHITECTURE.md draws them and lists every module.
"""

import os as _os
from pathlib import Path as _Path

from triage.core.compile_cache import cache_dir as _cache_dir
from triage.core.compile_cache import matplotlib_dir as _matplotlib_dir
from triage.core.versions import VERSION as __version__  # noqa: F401 (the package's version, one home)

# before numba is first imported: it reads NUMBA_CACHE_DIR once, at import
if (_folder := _cache_dir(_Path(__file__).resolve().parent)) is not None:
    _os.environ["NUMBA_CACHE_DIR"] = _folder
# likewise MPLCONFIGDIR for matplotlib (a read-only home: no warning on every plot)
if (_folder := _matplotlib_dir()) is not None:
    _os.environ["MPLCONFIGDIR"] = _folder
