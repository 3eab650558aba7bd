"""The TUI's screens: the help overlay and the end-of-run summary."""

from gpusched.tui.screens.help import HelpScreen
from gpusched.tui.screens.summary import SummaryScreen

__all__ = ["HelpScreen", "SummaryScreen"]
