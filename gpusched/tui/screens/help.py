"""The help overlay (``?``): every key of the app."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS: tuple[tuple[str, str], ...] = (
    ("space", "pause / resume"),
    ("n", "step to the next decision point (pauses; the bottom line says what it did)"),
    ("+ / -", "faster / slower (simulated seconds per wall second)"),
    ("m", "max speed on / off"),
    ("z", "cluster detail: auto, per GPU, per server, per group"),
    ("", "(jobs placed by roles: per machine, packed, compact, per group)"),
    ("", "(jobs made of chunks: workers per server by type, packed, per worker type)"),
    ("arrows", "move the server (machine) cursor (cluster view focused)"),
    ("click", "select a server (machine)"),
    ("tab", "focus the next panel (scroll lists with arrows, PgUp/PgDn)"),
    ("s", "show the summary (once the run has ended)"),
    ("?", "this help"),
    ("q", "quit (mid-run: stop there and show the summary, q again quits)"),
)


class HelpScreen(ModalScreen[None]):
    """Lists the keys; any of escape, ? or q closes it."""

    BINDINGS = [
        Binding("escape,question_mark,q", "dismiss", "close"),
    ]

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=False, padding=(0, 2))
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column()
        for key, what in KEYS:
            table.add_row(key, what)
        with Vertical(id="help-box"):
            yield Static("gpusched keys", id="help-title")
            yield Static(table)
            yield Static("escape or ? to close", classes="hint")

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
