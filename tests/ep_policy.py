"""A policy shipped by a (pretend) third-party package through the entry-point group."""

from gpusched.core.policy import Decision


class ThirdPartyFIFO:
    """Submission order with backfill, from outside gpusched."""

    name = "third-party"
    knows_duration = False
    needs_predictor = False
    work_conserving = True

    def __init__(self, *, rng=None) -> None:
        pass

    def decide(self, view, now: float) -> Decision:
        return Decision(order=view.queued)
