"""Giving memory a process freed back to the system (so that its peak stays low)."""

from __future__ import annotations

import sys

#: address ranges of a library's pages, per name given to :func:`release_library_pages`
_ranges: dict[str, list[tuple[int, int]]] = {}


def give_back_memory() -> None:
    """Return to the system the memory freed since: pyarrow's pool keeps what it freed,
    and the C library's allocator keeps freed small blocks (a timeline's chunks, a
    trace reader's strings) unless asked (``malloc_trim``, where the C library has it);
    and the pages of pyarrow's libraries that reading a trace touched (1M jobs: 25 MB;
    see :func:`release_library_pages`). No value changes."""
    if "pyarrow" in sys.modules:
        sys.modules["pyarrow"].default_memory_pool().release_unused()
        release_library_pages("/pyarrow/", again=True)
    trim_heap()


def trim_heap() -> None:
    """Return to the system the free memory the C library's allocator keeps
    (``malloc_trim``, where the C library has it). No value changes."""
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def release_library_pages(name: str, *, again: bool = False) -> None:
    """Let the system take back the pages of the shared libraries whose path contains
    ``name`` that this process touched but does not need now (Linux; elsewhere nothing
    is done).

    A large library's initialisation and first uses touch pages of its code and
    read-only data all over the file (LLVM's: about 37 MB, pyarrow's: about 30 MB), and
    those pages count in the process's resident memory until it ends. Only mappings
    that the process cannot write and that hold no page of its own (``Anonymous: 0`` in
    ``/proc/self/smaps``: never copied on write, so every page is the file's) are
    released, with ``madvise(MADV_DONTNEED)``: a page used again is read back from the
    page cache (a minor fault), so nothing changes but the count. The mappings are
    looked up once per ``name``, or at every call with ``again`` (for libraries that
    load more of themselves later).
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        if again or name not in _ranges:
            _ranges[name] = _file_only_ranges(name)
        if not _ranges[name]:
            return
        madvise = ctypes.CDLL(None).madvise
        madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        for start, end in _ranges[name]:
            madvise(start, end - start, 4)  # MADV_DONTNEED
    except (OSError, AttributeError, ValueError):  # no /proc, no madvise: keep the pages
        _ranges[name] = []


def _file_only_ranges(name: str) -> list[tuple[int, int]]:
    """Address ranges of the mappings of files whose path contains ``name`` that the
    process cannot write and that hold no anonymous (copied-on-write) page."""
    ranges: list[tuple[int, int]] = []
    current: list[str] | None = None
    with open("/proc/self/smaps", encoding="ascii", errors="replace") as fh:
        for line in fh:
            head = line.split(maxsplit=5)
            if not head[0].endswith(":"):  # a mapping: address range, perms, ..., path
                path = head[5].strip() if len(head) > 5 else ""
                current = [head[0], head[1]] if name in path else None
            elif current is not None and head[0] == "Anonymous:":
                if "w" not in current[1] and int(head[1]) == 0:
                    lo, hi = (int(x, 16) for x in current[0].split("-"))
                    ranges.append((lo, hi))
                current = None
    return ranges
