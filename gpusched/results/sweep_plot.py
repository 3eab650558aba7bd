"""How a sweep's results table becomes a plot: panels, series, titles and notes.

:func:`read_table` reads results.csv (as written by :func:`gpusched.experiments.sweep.run_sweep`) into
the finished cells that have a value of one metric; :func:`arrange` turns them into a
:class:`SweepPlot`, which :mod:`gpusched.results.plot` draws in the terminal or with matplotlib.
Nothing here imports a plotting library.

The arrangement, for a metric ``m`` and an x column:

* ``x = "policy"`` (the default when several policies ran) is a **policy comparison**: one
  bar per policy and parameter combination ("variant"), coloured by policy.
* ``x = PARAM`` plots the cells of the policies that have that parameter (the others are
  named in a note): ``m`` against the parameter (lines if its values are numbers, bars if
  not), one series per combination of policy and its other parameters.
* ``x`` = ``trace``, ``cluster`` or ``seed``: bars per value, one series per variant.

Every trace and cluster that varies (and is not on the x axis) gets its own panel (small
multiples), since their scales differ. Cells are averaged over seeds (lo/hi: the min and
max). Columns with one value are named in the title; what varies, in the subtitle.
Limits: more than :data:`MAX_SERIES` series per panel are split into one panel per
policy when that stays within :data:`MAX_PANELS` panels, else each policy's variants are
drawn as their mean; a comparison of more than :data:`MAX_BARS` variants draws the
policies with most variants as one bar each (their mean). Each such step is a note.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gpusched.errors import GpuschedError, show_name
from gpusched.io.tables import check_unique_columns, is_parquet, parquet_rows
from gpusched.results.metrics import FIXED_COLUMNS, param_column

__all__ = [
    "MAX_BARS",
    "MAX_PANELS",
    "MAX_SERIES",
    "Group",
    "Panel",
    "SweepPlot",
    "SweepTable",
    "arrange",
    "csv_rows",
    "read_table",
]

#: columns that are not parameters but may go on the x axis
SPECIAL_X = ("policy", "cluster", "trace", "seed")
#: columns that split a plot into panels when they vary
FACETS = ("trace", "cluster")
#: most series in one panel (and legend entries) before splitting or averaging
MAX_SERIES = 10
#: most panels that splitting by policy may produce
MAX_PANELS = 16
#: most bars in one panel of a policy comparison before averaging variants
MAX_BARS = 24


@dataclass(frozen=True, slots=True)
class Cell:
    """One finished cell with a value of the metric."""

    trace: str
    cluster: str
    policy: str
    seed: str
    params: dict[str, str]  # parameter name -> value, only the parameters it has
    value: float

    def get(self, column: str) -> str:
        """The cell's value of a special column or parameter ('' if it has none)."""
        if column in SPECIAL_X:
            return str(getattr(self, column))
        return self.params.get(column, "")


@dataclass(slots=True)
class SweepTable:
    """The cells of a results table that can be plotted, and what was left out."""

    path: Path
    params: list[str]  # parameter names, in column order
    metrics: list[str]
    cells: list[Cell]
    notes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Group:
    """One series in one panel: ``y`` (mean), ``lo`` and ``hi`` at each x value ``xs``."""

    label: str
    xs: list[str]
    y: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


@dataclass(slots=True)
class Panel:
    """One small multiple: its title (``trace=... · cluster=...``, '' if the only one)."""

    title: str
    groups: list[Group]


@dataclass(slots=True)
class SweepPlot:
    """A sweep plot ready to draw.

    ``categories`` are the x values in order (category labels, or numbers as text with
    their ``positions``); ``series`` the labels of all series in legend order (colours
    follow it); ``comparison`` marks the policy comparison, whose bars are labelled by
    their category alone.
    """

    title: str
    subtitle: str
    notes: list[str]
    xlabel: str
    ylabel: str
    numeric: bool
    comparison: bool
    categories: list[str]
    positions: dict[str, float]
    series: list[str]
    legend_title: str
    panels: list[Panel]
    ncols: int


# --- reading ----------------------------------------------------------------------------


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _param_columns(header: Sequence[str], rows: Sequence[dict[str, str]]) -> dict[str, str]:
    """Parameter name -> its column (``name``, or ``param_name`` on a clash)."""
    cols: dict[str, str] = {}
    for r in rows:
        for token in (r.get("params") or "").split(" "):
            key, sep, _ = token.partition("=")
            if not sep or key in cols:
                continue
            # the sweep's own naming: param_<key> where the name clashed with a metric (the
            # table's own metrics included, so the one in the header wins)
            col = f"param_{key}" if f"param_{key}" in header else param_column(key)
            if col in header:
                cols[key] = col
    return cols


def csv_rows(
    path: Path,
    what: str,
    required: Sequence[str],
    no_column: Callable[[list[str]], str],
    if_empty: str = "",
    nan: str = "",
) -> Iterator[tuple[int, list[str]]]:
    """The rows of a CSV file with their line numbers: first ``(1, header)``, then each
    non-blank row, checked to have as many fields as the header. A Parquet table
    (``.parquet``) is read as its CSV twin would be, row ``i`` as line ``i + 2``.

    Parameters
    ----------
    path
        The file.
    what
        What the file should be, for messages (``the per-job table of a run``).
    required
        Columns the header must hold.
    no_column
        The message (after ``path:``) for the ``required`` columns the header lacks.
    if_empty
        Words added after ``what`` in the message for an empty file.
    nan
        How a Parquet float NaN that is not null reads (:func:`parquet_rows`).

    Raises
    ------
    GpuschedError
        One line naming the file (and line): empty, a required column missing, a row of
        the wrong length, not UTF-8, or not valid CSV. Raised as the rows are read, so an
        error the caller raises for an earlier row comes first.
    """
    where = show_name(path)
    if is_parquet(path):
        yield from _checked_rows(
            path, enumerate(parquet_rows(path, nan), start=1), what, required, no_column, if_empty
        )
        return
    line = 1
    try:
        # utf-8-sig: a byte-order mark (a spreadsheet's save) is not part of the first column
        with path.open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh)
            numbered = ((reader.line_num, row) for row in reader)
            for line, row in _checked_rows(path, numbered, what, required, no_column, if_empty):
                yield line, row
    except UnicodeDecodeError:
        raise GpuschedError(f"{where}: not a UTF-8 text file (expected {what})") from None
    except csv.Error as exc:
        raise GpuschedError(f"{where}:{line}: not valid CSV ({exc})") from None


def _checked_rows(
    path: Path,
    numbered: Iterator[tuple[int, list[str]]],
    what: str,
    required: Sequence[str],
    no_column: Callable[[list[str]], str],
    if_empty: str,
) -> Iterator[tuple[int, list[str]]]:
    """:func:`csv_rows`'s checks on ``(line, row)`` pairs, the header first."""
    where = show_name(path)
    _, header = next(numbered, (1, []))
    if not header:
        raise GpuschedError(f"{where}: empty (expected {what}{if_empty})")
    missing = [c for c in required if c not in header]
    if missing:
        raise GpuschedError(f"{where}: {no_column(missing)}")
    check_unique_columns(path, header)
    yield 1, header
    for line, row in numbered:
        if not row:
            continue
        if len(row) != len(header):
            raise GpuschedError(
                f"{where}:{line}: {len(row)} fields, expected {len(header)} as in "
                "the header (a truncated or edited file?)"
            )
        yield line, row


def _read_rows(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """Header and (line number, row) of a results table; one-line errors if malformed."""
    expected = "a sweep's results table, with columns " + ", ".join(FIXED_COLUMNS)
    rows = csv_rows(
        path,
        expected,
        FIXED_COLUMNS,
        lambda missing: (
            f"not a sweep results table: no column {', '.join(missing)} (expected {expected} ...)"
        ),
    )
    _, header = next(rows)
    return header, [(line, dict(zip(header, row, strict=True))) for line, row in rows]


def read_table(path: str | Path, metric: str) -> SweepTable:
    """The finished cells of a sweep's results.csv that have a value of ``metric``.

    Cells left out (failed or not run, or without a value of the metric) are counted in
    the table's notes.

    Raises
    ------
    GpuschedError
        The file is not a results table, ``metric`` is not one of its metrics, a value
        of it is not a number, or no finished cell has a value.
    """
    path = Path(path)
    where = show_name(path)
    header, rows = _read_rows(path)
    params = _param_columns(header, [r for _, r in rows])
    # columns: cell, status, trace, cluster, policy, params, seed, <params>, <metrics>, error
    last_fixed = max([header.index("seed")] + [header.index(c) for c in params.values()])
    metrics = [c for c in header[last_fixed + 1 :] if c != "error"]
    if metric not in metrics:
        raise GpuschedError(
            f"{where}: no metric '{metric}' (expected one of: {', '.join(metrics) or 'none'})"
        )
    cells: list[Cell] = []
    skipped: dict[str, int] = {}
    no_value: dict[str, int] = {}
    for line, r in rows:
        status = r["status"]
        if status != "ok":
            skipped[status] = skipped.get(status, 0) + 1
            continue
        text = r[metric]
        try:
            value = float(text) if text else math.nan
        except ValueError:
            value = math.inf
        if math.isinf(value):
            raise GpuschedError(f"{where}:{line}: column '{metric}' expects a number, got {text!r}")
        if math.isnan(value):
            no_value[r["policy"]] = no_value.get(r["policy"], 0) + 1
            continue
        cells.append(
            Cell(
                trace=r["trace"],
                cluster=r["cluster"],
                policy=r["policy"],
                seed=r["seed"],
                params={k: r[c] for k, c in params.items() if r[c] != ""},
                value=value,
            )
        )
    notes = []
    if skipped:
        parts = [_plural(n, f"{status} cell") for status, n in skipped.items()]
        notes.append(f"left out {', '.join(parts)}")
    if no_value:
        who = ", ".join(f"{p} ({n})" for p, n in no_value.items())
        notes.append(f"left out cells with no value of {metric}: {who}")
    if not cells:
        raise GpuschedError(
            f"{where}: no finished cell has a value of {metric} ({'; '.join(notes) or 'no rows'})"
        )
    return SweepTable(path, list(params), metrics, cells, notes)


# --- arranging --------------------------------------------------------------------------


def _distinct(cells: Sequence[Cell], column: str) -> list[str]:
    """The values of ``column`` in order of first appearance (no '')."""
    return [v for v in dict.fromkeys(c.get(column) for c in cells) if v != ""]


def _as_float(text: str) -> float | None:
    if text.strip().lower() in ("true", "false", "nan", "inf", "-inf", ""):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _resolve_x(table: SweepTable, x: str | None) -> str:
    cells = table.cells
    if x is None:
        if len(_distinct(cells, "policy")) > 1:
            return "policy"
        varying = [p for p in table.params if len(_distinct(cells, p)) > 1]
        varying += [c for c in ("cluster", "trace") if len(_distinct(cells, c)) > 1]
        return varying[0] if varying else "policy"
    if x in SPECIAL_X or x in table.params:
        return x
    if x.startswith("param_") and x[6:] in table.params:
        return x[6:]
    raise GpuschedError(
        f"{table.path}: no column '{x}' for --x (expected a parameter: "
        f"{', '.join(table.params) or 'none in this sweep'}; or policy, cluster, trace, seed)"
    )


def _fixed_params(cells: Sequence[Cell], x: str) -> dict[str, str]:
    """Parameters every cell has, with one value (named in the title, not in labels)."""
    out: dict[str, str] = {}
    for key in dict.fromkeys(k for c in cells for k in c.params):
        if key != x and all(key in c.params for c in cells):
            values = _distinct(cells, key)
            if len(values) == 1:
                out[key] = values[0]
    return out


def _variant(cell: Cell, drop: set[str], with_policy: bool = True) -> str:
    """``policy key=value ...``: the cell's policy and parameters, without ``drop``."""
    parts = [cell.policy] if with_policy else []
    parts += [f"{k}={v}" for k, v in cell.params.items() if k not in drop]
    return " ".join(parts)


def _seed_text(cells: Sequence[Cell], x: str, numeric: bool) -> str:
    seeds = _distinct(cells, "seed")
    if x == "seed" or len(seeds) < 2:
        return ""
    which = ", ".join(seeds) if len(seeds) <= 4 else str(len(seeds))
    spread = "band" if numeric else "whiskers"
    return f"mean over seeds {which}; {spread}: min-max"


@dataclass(slots=True)
class _Layout:
    """How each cell is placed (its panel, series, x value and variant), the x values in
    order, and what the series are."""

    facets: list[str]
    series: Callable[[Cell], str]
    x: Callable[[Cell], str]
    variant: Callable[[Cell], str]
    xs: list[str]
    numeric: bool
    legend_title: str

    def panel(self, cell: Cell) -> tuple[str, ...]:
        return tuple(cell.get(f) for f in self.facets)


def _groups(cells: Sequence[Cell], layout: _Layout) -> dict[str, Group]:
    """Series of one panel: mean over each variant's seeds, then over its variants."""
    by: dict[tuple[str, str], dict[str, list[float]]] = {}
    for c in cells:
        points = by.setdefault((layout.series(c), layout.x(c)), {})
        points.setdefault(layout.variant(c), []).append(c.value)
    out: dict[str, Group] = {}
    for label in dict.fromkeys(s for s, _ in by):
        present = [v for v in layout.xs if (label, v) in by]
        at = [by[label, v] for v in present]  # at each x: variant -> values over seeds
        out[label] = Group(
            label,
            present,
            np.array([np.mean([np.mean(vals) for vals in a.values()]) for a in at]),
            np.array([min(min(vals) for vals in a.values()) for a in at]),
            np.array([max(max(vals) for vals in a.values()) for a in at]),
        )
    return out


def _cells_with(table: SweepTable, x: str) -> tuple[list[Cell], list[str]]:
    """The cells that have ``x`` (all, unless ``x`` is a parameter) and the notes,
    naming the policies left out for not having it."""
    notes = list(table.notes)
    if x not in table.params:
        return table.cells, notes
    cells = [c for c in table.cells if x in c.params]
    if not cells:
        raise GpuschedError(f"{table.path}: no finished cell has the parameter '{x}'")
    names = _distinct([c for c in table.cells if x not in c.params], "policy")
    if names:
        verb = "it has" if len(names) == 1 else "they have"
        notes.insert(0, f"left out {', '.join(names)}: {verb} no parameter '{x}'")
    return cells, notes


def arrange(table: SweepTable, metric: str, x: str | None = None) -> SweepPlot:
    """Arrange the cells of ``table`` into panels and series of ``metric`` against ``x``.

    Parameters
    ----------
    table
        From :func:`read_table`.
    metric
        The metric read into the table's cells (y axis).
    x
        ``policy``, ``cluster``, ``trace``, ``seed`` or a parameter name; None picks
        ``policy`` when several policies ran, else the first parameter that varies.

    Raises
    ------
    GpuschedError
        ``x`` is not a column of the table, or no cell has the parameter ``x``.
    """
    x = _resolve_x(table, x)
    cells, notes = _cells_with(table, x)
    facets = [f for f in FACETS if f != x and len(_distinct(cells, f)) > 1]
    fixed = _fixed_params(cells, x)
    if x == "policy":
        layout = _comparison(cells, facets, {x, *fixed}, notes)
    else:
        layout = _against(cells, x, facets, fixed, notes)
    panels, series = _panels(cells, layout)
    if x == "policy":
        what, spread = f"{metric} by policy", "bars: one per policy and parameters"
    else:
        what = f"{metric} {'vs' if layout.numeric else 'by'} {x}"
        what_varies = "lines" if layout.numeric else "colours"
        spread = f"{what_varies}: {layout.legend_title}" if len(series) > 1 else ""
    fixed_text = _fixed_text(cells, x, fixed, layout.facets)
    subtitle = [
        "panels: " + " × ".join(layout.facets) if layout.facets else "",
        spread,
        _seed_text(cells, x, layout.numeric),
    ]
    xs = layout.xs
    return SweepPlot(
        title=what + (f" — {fixed_text}" if fixed_text else ""),
        subtitle="; ".join(s for s in subtitle if s),
        notes=notes,
        xlabel="policy and parameters" if x == "policy" else x,
        ylabel=metric,
        numeric=layout.numeric,
        comparison=x == "policy",
        categories=xs,
        positions={
            v: (_as_float(v) or 0.0) if layout.numeric else float(i) for i, v in enumerate(xs)
        },
        series=series,
        legend_title=layout.legend_title if len(series) > 1 else "",
        panels=panels,
        ncols=_ncols(cells, layout.facets, 2 if not layout.numeric and len(xs) > 6 else 3),
    )


def _comparison(
    cells: Sequence[Cell], facets: list[str], drop: set[str], notes: list[str]
) -> _Layout:
    """A policy comparison: a bar per variant, coloured by policy."""
    xs, bar_of, merged = _comparison_bars(cells, drop)
    notes += merged
    return _Layout(
        facets=facets,
        series=lambda c: c.policy,
        x=bar_of,
        variant=lambda c: _variant(c, drop),
        xs=xs,
        numeric=False,
        legend_title="policy",
    )


def _against(
    cells: Sequence[Cell], x: str, facets: list[str], fixed: dict[str, str], notes: list[str]
) -> _Layout:
    """``x`` on the x axis, a series per variant (without ``x``): split into one panel
    per policy, or each policy's variants averaged, when there are too many series."""
    values = _distinct(cells, x)
    numeric = x not in SPECIAL_X and all(_as_float(v) is not None for v in values)
    drop = {x, *fixed}
    policies = _distinct(cells, "policy")
    with_policy = len(policies) > 1
    series_of: Callable[[Cell], str] = lambda c: _variant(c, drop, len(policies) > 1)  # noqa: E731
    n_series = len({series_of(c) for c in cells})
    if n_series > MAX_SERIES and len(policies) > 1:
        n_panels = len({tuple(c.get(f) for f in facets) for c in cells})
        per_policy = max(len({series_of(c) for c in cells if c.policy == p}) for p in policies)
        if n_panels * len(policies) <= MAX_PANELS and per_policy <= MAX_SERIES:
            facets = [*facets, "policy"]
            with_policy = False
            series_of = lambda c: _variant(c, drop, with_policy=False)  # noqa: E731
            notes.append(f"one panel per policy: {n_series} series would not fit one legend")
        else:
            series_of = _policy_means(cells, series_of, notes, n_series)
    return _Layout(
        facets=facets,
        series=series_of,
        x=lambda c: c.get(x),
        variant=lambda c: _variant(c, {x}),
        xs=sorted(values, key=lambda v: _as_float(v) or 0.0) if numeric else values,
        numeric=numeric,
        legend_title=_series_title(cells, x, fixed, with_policy),
    )


def _comparison_bars(
    cells: Sequence[Cell], drop: set[str]
) -> tuple[list[str], Callable[[Cell], str], list[str]]:
    """The bars of a policy comparison (one per variant) and the bar of each cell; when
    there are more than :data:`MAX_BARS`, the policies with most variants get one bar."""
    variants = {p: _distinct_variants(cells, p, drop) for p in _distinct(cells, "policy")}
    merged: set[str] = set()
    n_bars = sum(len(v) for v in variants.values())
    for policy in sorted(variants, key=lambda p: -len(variants[p])):
        if n_bars <= MAX_BARS or len(variants[policy]) < 2:
            break
        merged.add(policy)
        n_bars -= len(variants[policy]) - 1
    notes = [
        f"{p}: its {len(variants[p])} parameter combinations are one bar (their mean; "
        "whiskers: min-max); --x PARAM shows them one by one"
        for p in variants
        if p in merged
    ]

    def bar(c: Cell) -> str:
        if c.policy in merged:
            return f"{c.policy} (mean of {len(variants[c.policy])})"
        return _variant(c, drop)

    return list(dict.fromkeys(bar(c) for c in cells)), bar, notes


def _distinct_variants(cells: Sequence[Cell], policy: str, drop: set[str]) -> list[str]:
    return list(dict.fromkeys(_variant(c, drop) for c in cells if c.policy == policy))


def _policy_means(
    cells: Sequence[Cell], label_of: Callable[[Cell], str], notes: list[str], n_series: int
) -> Callable[[Cell], str]:
    """Series labels that draw each policy's variants as their mean (too many series)."""
    counts = {
        p: len({label_of(c) for c in cells if c.policy == p}) for p in _distinct(cells, "policy")
    }
    notes.append(
        f"{n_series} series are too many for one panel: each policy's parameter "
        "combinations are drawn as their mean (band or whiskers: min-max)"
    )
    return lambda c: (
        c.policy if counts[c.policy] == 1 else f"{c.policy} (mean of {counts[c.policy]})"
    )


def _series_title(cells: Sequence[Cell], x: str, fixed: dict[str, str], with_policy: bool) -> str:
    """What tells the series apart: ``policy, thresholds``."""
    parts = ["policy"] if with_policy else []
    parts += [
        k
        for k in dict.fromkeys(k for c in cells for k in c.params)
        if k != x and k not in fixed and len(_distinct(cells, k)) > 1
    ]
    return ", ".join(parts) or "policy"


def _fixed_text(cells: Sequence[Cell], x: str, fixed: dict[str, str], facets: Sequence[str]) -> str:
    """The settings shared by every plotted cell: ``trace philly-2000, seed 0, starve=2.0``."""
    parts = []
    for col in ("trace", "cluster", "policy", "seed"):
        values = _distinct(cells, col)
        if col != x and col not in facets and len(values) == 1:
            parts.append(f"{col} {values[0]}")
    return ", ".join(parts + [f"{k}={v}" for k, v in fixed.items()])


def _panels(cells: Sequence[Cell], layout: _Layout) -> tuple[list[Panel], list[str]]:
    """The panels in facet order (each facet's values in order of appearance) and the
    labels of all series."""
    facets = layout.facets
    order = {f: {v: i for i, v in enumerate(_distinct(cells, f))} for f in facets}
    by_panel: dict[tuple[str, ...], list[Cell]] = {}
    for c in cells:
        by_panel.setdefault(layout.panel(c), []).append(c)
    panel_keys = sorted(
        by_panel, key=lambda k: tuple(order[f][v] for f, v in zip(facets, k, strict=True))
    )
    series = list(dict.fromkeys(layout.series(c) for c in cells))
    panels = []
    for key in panel_keys:
        groups = _groups(by_panel[key], layout)
        title = " · ".join(f"{f}={v}" for f, v in zip(facets, key, strict=True))
        panels.append(Panel(title, [groups[s] for s in series if s in groups]))
    return panels, series


def _ncols(cells: Sequence[Cell], facets: Sequence[str], most: int) -> int:
    """Grid columns: the values of the last facet when they fit (a trace x cluster grid)."""
    if not facets:
        return 1
    n_panels = len({tuple(c.get(f) for f in facets) for c in cells})
    n_last = len(_distinct(cells, facets[-1]))
    if len(facets) > 1 and n_last <= most:
        return n_last
    return min(n_panels, most)
