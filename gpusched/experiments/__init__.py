"""Runs made of runs: one replay with its output folder (run), a grid on Dask (sweep),
policies over seeds with intervals (seeds)."""
