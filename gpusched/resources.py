"""Where the bundled ``policies/``, ``clusters/`` and ``traces/`` folders live.

In a source checkout (and an editable install) they sit beside the ``gpusched``
package; a wheel carries them inside it as ``gpusched/_bundled/<kind>``.
"""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


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
