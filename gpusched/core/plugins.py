"""Entry points of installed packages (third-party policies and job models), found cheaply.

``importlib.metadata`` costs about 20 ms to import and more to read every installed
distribution's metadata, in every run (the job models are looked up each time). Most
installations declare no gpusched entry point at all, which a glance at the
``entry_points.txt`` files on ``sys.path`` tells; only when one of them names the group
(or the path holds something that glance cannot read: an egg or zip file, a custom
distribution finder) is ``importlib.metadata`` asked, so the answer is always its own.
"""

from __future__ import annotations

import os
import sys
from typing import Any


def entry_points(group: str) -> list[Any]:
    """``importlib.metadata.entry_points(group=group)``, as a list."""
    if not _maybe_declared(group):
        return []
    from importlib.metadata import entry_points as find

    return list(find(group=group))


def _maybe_declared(group: str) -> bool:
    """False only when no distribution on ``sys.path`` can declare entry points of ``group``."""
    from importlib.machinery import PathFinder

    for finder in sys.meta_path:
        if hasattr(finder, "find_distributions") and finder is not PathFinder:
            return True  # another way to find distributions: let importlib.metadata look
    for entry in sys.path:
        folder = entry or "."
        try:
            names = os.listdir(folder)
        except NotADirectoryError:
            return True  # a zip file on the path
        except OSError:
            continue
        for name in names:
            if name.endswith((".dist-info", ".egg-info")):
                try:
                    with open(os.path.join(folder, name, "entry_points.txt"), "rb") as f:
                        if group.encode() in f.read():
                            return True
                except FileNotFoundError:
                    continue
                except OSError:
                    return True  # unreadable (egg-info as a file, permissions): ask
            elif name.endswith(".egg"):
                return True
    return False
