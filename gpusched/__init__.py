"""gpusched: replay deep-learning training-job traces on a simulated GPU cluster."""

__version__ = "0.1.0"
