"""Give the C heap's free pages back to the kernel once start-up is over.

Building the node allocates large temporaries (the dense force sensor's
closest-triangle tables, mesh processing, numba's code loading): ~90 MB on
the Kinova/Punyo configuration.  glibc keeps freed small-block memory in its
arenas, so the idle node still holds it; ``malloc_trim(0)`` returns the free
pages (measured: idle RSS 552 -> 471 MB).  It costs ~10 ms once and changes
nothing the program can observe besides RSS.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import Optional


def _rss_bytes() -> Optional[int]:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def release_free_heap() -> Optional[int]:
    """Return free C-heap pages to the kernel (glibc ``malloc_trim(0)``).

    Returns:
        Bytes by which the resident set shrank (``/proc/self/statm``; may be
        0 or slightly negative when nothing was free), or None where there is
        no glibc ``malloc_trim`` (macOS, musl) or no ``/proc``: then nothing
        is done.
    """
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        trim = None
    if trim is None:
        return None
    before = _rss_bytes()
    trim.argtypes = [ctypes.c_size_t]
    trim(0)
    after = _rss_bytes()
    return None if before is None or after is None else before - after
