"""The cluster view's legend: one line, shortened to fit its width."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widget import Widget

from gpusched.tui.widgets.cluster_view import ClusterView
from gpusched.tui.widgets.resource_view import ResourceView
from gpusched.tui.widgets.worker_view import WorkerView


class Legend(Widget):
    """Explains the glyphs of the level the cluster view shows (redrawn on resize).

    The app calls :meth:`refresh` when the view's level changes.
    """

    DEFAULT_CSS = """
    Legend { height: 1; }
    """

    def __init__(self, view: ClusterView | ResourceView | WorkerView, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.view = view
        self.level = view.shown_level

    def render(self) -> Text:
        self.level = self.view.shown_level
        return self.view.legend(self.size.width)
