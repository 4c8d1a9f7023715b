"""Arrays as the compiled feature kernels take them: contiguous, float64, writable.

numba compiles a kernel once per argument type, and a read-only array is a
type of its own. pandas hands out read-only arrays (copy-on-write), so the
same window reached the row kernel, the pair kernels and the window
preparation both ways, and each compiled twice: in a cold `triage demo`, and
2.6 MB more machine code in a fresh checkout's test suite (BENCHMARKS.md,
"Test suite": with the literal constants of pre_state_kernels, a cold demo
went from 107.7 to 70.4 s of CPU). Windows are short (After is a
handful of commits, Pre's pair columns read at most 30), so a copy of a
read-only one costs less than the second compilation ever could.
"""

from __future__ import annotations

import numpy as np


def kernel_array(x: np.ndarray) -> np.ndarray:
    """``x`` as a C-contiguous, writable float64 array, shape unchanged (a copy only when needed)."""
    a = np.ascontiguousarray(x, dtype=np.float64)
    return a if a.flags.writeable else a.copy()
