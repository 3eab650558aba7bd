"""A mixin for Line-API widgets that cache their Rich styles between frames."""

from __future__ import annotations

from typing import Any

from rich.style import Style


class CachedStyles:
    """Caches ``rich_style`` (costly per line) and per-key styles; focus changes reset them.

    The widget calls ``self._init_styles()`` in ``__init__`` and builds its keyed styles
    into ``self._styles``; a widget with more caches extends :meth:`_reset_styles`.
    """

    rich_style: Style  # provided by the Textual widget

    def _init_styles(self) -> None:
        self._base: Style | None = None
        self._styles: dict[Any, Style] = {}

    @property
    def base_style(self) -> Style:
        """The widget's own style, cached."""
        if self._base is None:
            self._base = self.rich_style
        return self._base

    def _reset_styles(self) -> None:
        self._base = None
        self._styles.clear()

    def on_focus(self) -> None:
        self._reset_styles()

    def on_blur(self) -> None:
        self._reset_styles()
