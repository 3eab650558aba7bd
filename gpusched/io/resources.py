"""Where the bundled ``policies/``, ``clusters/`` and ``traces/`` folders live.

In a source checkout (and an editable install) they sit beside the ``gpusched``
package; a wheel carries them inside it as ``gpusched/_bundled/<kind>``.
"""

from __future__ import annotations

from pathlib import Path

from gpusched.errors import GpuschedError, did_you_mean, empty_name, is_blank, show_name

#: the trace a run replays when none is named
DEFAULT_TRACE = "philly-2000"
_PKG = Path(__file__).resolve().parent.parent  # the gpusched package


def bundled_dir(kind: str) -> Path:
    """Return the folder of bundled ``kind`` files.

    Parameters
    ----------
    kind
        One of ``"policies"``, ``"clusters"`` or ``"traces"``.
    """
    if kind not in ("policies", "clusters", "traces"):
        raise ValueError(f"unknown bundled kind {kind!r}")
    inside = _PKG / "_bundled" / kind
    if inside.is_dir():
        return inside
    return _PKG.parent / kind


def resolve_trace(spec: str | None) -> Path:
    """A trace path, or the bundled trace of that name (``philly-2000`` -> traces/philly-2000.csv)."""
    if spec is None:
        spec = DEFAULT_TRACE
    elif is_blank(spec):
        # an unset shell variable ("$TRACE") must not run the bundled default instead
        names = sorted(p.name.split(".")[0] for p in bundled_dir("traces").glob("*.csv*"))
        expected = f"a trace file or a bundled name ({', '.join(names)})"
        raise GpuschedError(
            f"trace: {empty_name(spec, expected)}; leave TRACE out for the default, {DEFAULT_TRACE}"
        )
    path = Path(spec)
    if path.is_file():
        return path
    if path.is_dir():
        raise GpuschedError(f"trace {show_name(spec)} is a folder, expected a CSV file")
    if path.exists():  # a pipe (<(zcat ...)), a device: there, but not a file to read
        raise GpuschedError(
            f"trace {show_name(spec)} is not a regular file (a pipe or a device), expected a "
            "CSV file (.csv, .csv.gz) or Parquet file"
        )
    for suffix in ("", ".csv", ".csv.gz"):
        bundled = bundled_dir("traces") / f"{spec}{suffix}"
        if bundled.is_file():
            return bundled
    names = sorted(p.name.split(".")[0] for p in bundled_dir("traces").glob("*.csv*"))
    raise GpuschedError(
        f"trace not found: {show_name(spec)}{did_you_mean(spec, names)} "
        f"(bundled traces: {', '.join(names)})"
    )
