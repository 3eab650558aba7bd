"""The TUI's widgets, one per module."""

from gpusched.tui.widgets.cluster_view import ClusterView
from gpusched.tui.widgets.event_feed import EventFeed
from gpusched.tui.widgets.legend import Legend
from gpusched.tui.widgets.metrics_panel import MetricsPanel
from gpusched.tui.widgets.queue_view import QueueView
from gpusched.tui.widgets.resource_view import ResourceView
from gpusched.tui.widgets.worker_view import WorkerView

__all__ = [
    "ClusterView",
    "EventFeed",
    "Legend",
    "MetricsPanel",
    "QueueView",
    "ResourceView",
    "WorkerView",
]
