"""Giving memory a process freed back to the system (so that its peak stays low)."""

from __future__ import annotations

import sys


def give_back_memory() -> None:
    """Return to the system the memory freed since: pyarrow's pool keeps what it freed,
    and the C library's allocator keeps freed small blocks (a timeline's chunks, a
    trace reader's strings) unless asked (:func:`trim_heap`). No value changes."""
    if "pyarrow" in sys.modules:
        sys.modules["pyarrow"].default_memory_pool().release_unused()
    trim_heap()


def trim_heap() -> None:
    """Return to the system the free memory the C library's allocator keeps
    (``malloc_trim``, where the C library has it). No value changes."""
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass
