"""Giving memory a process freed back to the system (so that its peak stays low)."""

from __future__ import annotations

import sys


def give_back_memory() -> None:
    """Return to the system the memory freed since: pyarrow's pool keeps what it freed,
    and the C library's allocator keeps freed small blocks (a timeline's chunks, a
    trace reader's strings) unless asked (``malloc_trim``, where the C library has it).
    No value changes."""
    if "pyarrow" in sys.modules:
        sys.modules["pyarrow"].default_memory_pool().release_unused()
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass
