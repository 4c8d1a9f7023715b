"""Statistical change-point detectors: they produce the candidates that triage learns to label.

One API for all (``ruptures`` style, see :mod:`triage.detectors.base`)::

    from triage.detectors import make
    cps = make("perfherder").detect(values)      # list of ChangePoint(index, score, fields)

``index`` is the first commit of the new level. Methods and registry names:

=====================  =====================================================
``perfherder``         Mozilla Perfherder's moving-window t-test
``hybrid_<test>``      Perfherder's windows with welch / mwu / ks / cvm / levene
                       (the Mozilla change-point study, Besbes et al.)
``edivisive``          E-Divisive means in Hunter / Apache Otava's form
                       (Matteson & James 2014; Daly et al. 2020; Fleming et al. 2023)
``cusum``              two-sided CUSUM, range-based drift, sliding-window threshold
``bocpd``              Bayesian online change-point detection (Adams & MacKay 2007)
``pelt``, ``binseg``   penalised segmentation with ruptures (Killick et al. 2012)
``ensemble``           vote of several detectors within a margin
``mozilla_or_ensemble`` the ensemble, plus every Perfherder alert
=====================  =====================================================
"""

from triage.detectors.base import ChangePoint, Detector
from triage.detectors.bocpd import Bocpd
from triage.detectors.cusum import Cusum
from triage.detectors.edivisive import EDivisive
from triage.detectors.ensemble import Ensemble
from triage.detectors.penalised import BinSeg, Pelt
from triage.detectors.registry import REGISTRY, defaults, make, names, parse_params
from triage.detectors.windowed import HybridTest, Perfherder

__all__ = [
    "REGISTRY",
    "BinSeg",
    "Bocpd",
    "ChangePoint",
    "Cusum",
    "Detector",
    "EDivisive",
    "Ensemble",
    "HybridTest",
    "Pelt",
    "Perfherder",
    "defaults",
    "make",
    "names",
    "parse_params",
]
