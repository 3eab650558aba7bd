"""``python -m gpusched``: the command line, as the ``gpusched`` script runs it."""

from gpusched.cli import app

app(prog_name="gpusched")
