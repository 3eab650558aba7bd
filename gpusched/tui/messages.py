"""Messages from the simulation worker to the app (dataclasses, as toolong writes them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message

from gpusched.tui.session import Frame


@dataclass
class FrameReady(Message):
    """A new frame to draw. A later frame supersedes an undelivered one (``can_replace``)."""

    frame: Frame

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, FrameReady)


@dataclass
class SimFinished(Message):
    """The run ended: the last frame, plus the summary (same numbers as summary.json)."""

    frame: Frame
    summary: dict[str, Any]


@dataclass
class SimFailed(Message):
    """The simulation raised (e.g. a PolicyError); the app shows it and exits."""

    error: BaseException


@dataclass
class ServerSelected(Message):
    """The cluster view's cursor moved to a server (or a group, at group level)."""

    server: int
    level: str
