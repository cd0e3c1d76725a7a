"""The Numba options the compiled kernels share.

``prange_only()`` is the ``parallel=`` option of every parallel kernel: their ``prange`` loops
become parallel regions and nothing else does. Numba's default (``parallel=True``) also turns
each NumPy allocation in such a kernel (``np.zeros``) into a loop of its own run as a parallel
region, and looks for loops to fuse. The kernels allocate a few scratch arrays per call (the
broad phase's counts and flags) and no two of their loops can fuse (measured 2026-11-30 with
NUMBA_DEBUG_ARRAY_OPT_STATS: 72 parallel loops from the prange loops and 14 allocations before
fusion, 72 after), so both passes cost compile time for nothing: an allocation filled on the
calling thread holds the same zeros.

A function, not a constant: Numba pops the keys of the dict it is given.
"""


def prange_only():
    """A fresh ``parallel=`` option for a kernel's @njit: prange loops only."""
    return {"fusion": False, "numpy": False}
