"""release_free_heap returns memory that was freed but kept by malloc."""
import ctypes
import ctypes.util
import os

import pytest

from vsf_sensor_ros.ros.main import release_free_heap


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_freed_small_blocks_are_given_back_to_the_kernel():
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    if not hasattr(libc, "malloc_trim") or not os.path.exists("/proc/self/statm"):
        pytest.skip("no glibc malloc_trim or /proc here")
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    release_free_heap()
    # 64 MB in 4 kB blocks (below the mmap threshold: they come from the heap), touched, then freed,
    # all but the last block so the heap top stays in use and a plain top-trim cannot shrink it.
    blocks = [libc.malloc(4096) for _ in range(16384)]
    for b in blocks:
        ctypes.memset(b, 1, 4096)
    keep = libc.malloc(4096)
    for b in blocks:
        libc.free(b)
    before = _rss_bytes()
    release_free_heap()
    freed = before - _rss_bytes()
    libc.free(keep)
    assert freed > 32 * 2**20
