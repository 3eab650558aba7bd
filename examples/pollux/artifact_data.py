"""Build gpusched's bundled Pollux data from a checkout of the Pollux artifact.

Usage: python examples/pollux/artifact_data.py SIMULATOR_DIR [--refit]

``SIMULATOR_DIR`` is the ``simulator/`` folder of petuum/adaptdl, branch osdi21-artifact,
commit c793c7089bd307462686339d29707925c461f9a9 (Apache-2.0, (c) 2020 Petuum, Inc.); it is
not bundled. The script writes, into ``gpusched/data/``:

* ``pollux_gradstats.csv.gz``: every row of ``traces/<app>/validation-<B>.csv`` (the
  measured gradient statistics per application, validated batch size and epoch) with the
  columns ``app,batch_size,epoch,progress,iteration,grad_sqr,grad_var``; the values are the
  artifact's text, unchanged (the ``metric`` column is dropped: no application has a target
  metric, ``applications.py`` L231-238);
* ``pollux_profiles.csv.gz``: every row of ``traces/<app>/placements.csv`` and
  ``scalability.csv`` (the measured step and synchronisation times per placement and per-GPU
  batch), values unchanged: the ``-p throughput=table`` option of the goodput job model;
* ``pollux_workloads.csv.gz``: the 40 workload files ``workloads{,-realistic,-0.5,-1.5,-2.0}/
  workload-{1..8}.csv`` with ``set`` and ``workload`` prepended, values unchanged.

With ``--refit`` it also fits Pollux's throughput model (paper eq. 8-11, the same form as
the sharing model's eq. 7) to *all* rows of ``placements.csv`` and ``scalability.csv`` (4-GPU
nodes, 1 to 64 GPUs), minimising the paper's objective (the RMSLE of the step time plus the
RMSLE of the accumulation time, ``goodput.py`` L232-257, without its regularisers) from
several starts, and writes ``pollux_refit.toml``; it prints the mean and 95th-percentile
relative error of the step time under the refit and under ``sharing.toml``. That file is the
``-p throughput=refit`` option of the goodput job model, not its default (docs/pollux.md).
"""

from __future__ import annotations

import csv
import gzip
import io
import sys
import tomllib
from pathlib import Path

import numpy as np

from gpusched.jobmodels.sharing import THROUGHPUT_FIELDS

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/, for _inputs
from _inputs import args, guard, need_folder  # noqa: E402

APPS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
SETS = ("workloads", "workloads-realistic", "workloads-0.5", "workloads-1.5", "workloads-2.0")
DATA = Path(__file__).resolve().parents[2] / "gpusched" / "data"
SOURCE = (
    "# Source: petuum/adaptdl, branch osdi21-artifact, commit "
    "c793c7089bd307462686339d29707925c461f9a9, simulator/{what}.\n"
    "# Licence: Apache-2.0 (https://www.apache.org/licenses/LICENSE-2.0), (c) 2020 Petuum, Inc.\n"
    "# Paper: A. Qiao et al., Pollux: Co-adaptive Cluster Scheduling for Goodput-Optimized\n"
    "# Deep Learning, OSDI 2021.\n"
)


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _write_gz(path: Path, header: str, fields: list[str], rows: list[list[str]]) -> None:
    buf = io.StringIO()
    buf.write(header)
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(fields)
    w.writerows(rows)
    # mtime 0: the same input gives the same bytes
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(buf.getvalue().encode())


def gradstats(sim: Path) -> None:
    out: list[list[str]] = []
    for app in APPS:
        files = sorted(
            (sim / "traces" / app).glob("validation-*.csv"),
            key=lambda p: int(p.stem.split("-")[1]),
        )
        for path in files:
            batch = path.stem.split("-")[1]
            for epoch, r in enumerate(_rows(path)):
                out.append(
                    [
                        app,
                        batch,
                        str(epoch),
                        r["progress"],
                        r["iteration"],
                        r["grad_sqr"],
                        r["grad_var"],
                    ]
                )
    header = SOURCE.format(what="traces/<app>/validation-<batch_size>.csv") + (
        "# Changes: the metric column is dropped; app, batch_size (from the file name) and\n"
        "# epoch (the row, from 0) are prepended. Values are the artifact's text, unchanged.\n"
    )
    fields = ["app", "batch_size", "epoch", "progress", "iteration", "grad_sqr", "grad_var"]
    _write_gz(DATA / "pollux_gradstats.csv.gz", header, fields, out)
    print(f"pollux_gradstats.csv.gz: {len(out)} rows")


def profiles(sim: Path) -> None:
    out: list[list[str]] = []
    for app in APPS:
        for r in _rows(sim / "traces" / app / "placements.csv"):
            digits = r["placement"]
            nodes, gpus = str(len(digits)), str(sum(map(int, digits)))
            row = [nodes, gpus, r["local_bsz"], r["step_time"], r["sync_time"]]
            out.append([app, "placements", digits, *row])
        for r in _rows(sim / "traces" / app / "scalability.csv"):
            row = [
                r["num_nodes"],
                r["num_replicas"],
                r["local_bsz"],
                r["step_time"],
                r["sync_time"],
            ]
            out.append([app, "scalability", "", *row])
    header = SOURCE.format(what="traces/<app>/{placements,scalability}.csv") + (
        "# Changes: app and table (from the folder and file names) prepended; placements rows\n"
        "# get num_nodes and num_replicas (the digits' count and sum, as applications.py\n"
        "# L37-40), scalability rows an empty placement. Values are the artifact's text, unchanged.\n"
    )
    fields = ["app", "table", "placement", "num_nodes", "num_replicas", "local_bsz"]
    _write_gz(DATA / "pollux_profiles.csv.gz", header, fields + ["step_time", "sync_time"], out)
    print(f"pollux_profiles.csv.gz: {len(out)} rows")


def workloads(sim: Path) -> None:
    out: list[list[str]] = []
    for name in SETS:
        for k in range(1, 9):
            for r in _rows(sim / name / f"workload-{k}.csv"):
                out.append(
                    [
                        name,
                        str(k),
                        r["name"],
                        r["time"],
                        r["application"],
                        r["num_replicas"],
                        r["batch_size"],
                    ]
                )
    header = SOURCE.format(what="workloads{,-realistic,-0.5,-1.5,-2.0}/workload-{1..8}.csv") + (
        "# The arrival times are sampled from the Microsoft Philly traces (Jeon et al., ATC'19),\n"
        "# CC BY 4.0. Changes: set and workload (from the folder and file names) prepended.\n"
    )
    fields = ["set", "workload", "name", "time", "application", "num_replicas", "batch_size"]
    _write_gz(DATA / "pollux_workloads.csv.gz", header, fields, out)
    print(f"pollux_workloads.csv.gz: {len(out)} rows")


# --------------------------------------------------------------------------- the refit


def profile_rows(sim: Path, app: str) -> np.ndarray:
    """(nodes, GPUs, per-GPU batch, step s, sync s) of every profiled configuration."""
    rows = []
    for r in _rows(sim / "traces" / app / "placements.csv"):
        digits = r["placement"]
        rows.append(
            [
                len(digits),
                sum(map(int, digits)),
                float(r["local_bsz"]),
                float(r["step_time"]),
                float(r["sync_time"]),
            ]
        )
    for r in _rows(sim / "traces" / app / "scalability.csv"):
        rows.append(
            [
                float(r["num_nodes"]),
                float(r["num_replicas"]),
                float(r["local_bsz"]),
                float(r["step_time"]),
                float(r["sync_time"]),
            ]
        )
    return np.asarray(rows, dtype=np.float64)


def predict(
    th: np.ndarray, n: np.ndarray, k: np.ndarray, m: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Step and accumulation (compute) time of eq. 8-11: our own code, the sharing form."""
    ac, bc, ar, br, an, bn, g = th
    tg = ac + bc * m
    extra = np.maximum(k - 2, 0)
    ts = np.where(k <= 1, 0.0, np.where(n <= 1, ar + br * extra, an + bn * extra))
    return (tg**g + ts**g) ** (1 / g), tg


def fit(data: np.ndarray) -> np.ndarray:
    from scipy.optimize import minimize

    n, k, m, y = data[:, 0], data[:, 1], data[:, 2], data[:, 3]
    yc = data[:, 3] - data[:, 4]
    ok = yc > 0

    def objective(x: np.ndarray) -> float:
        th = np.append(np.exp(x[:6]), 1 + 9 / (1 + np.exp(-x[6])))  # >0, gamma in (1, 10)
        t, tg = predict(th, n, k, m)
        return float(
            np.sqrt(np.mean(np.log(t / y) ** 2)) + np.sqrt(np.mean(np.log(tg[ok] / yc[ok]) ** 2))
        )

    best = None
    for g0 in (1.05, 1.5, 2.5, 5.0):
        x0 = np.log([np.median(yc) / 2, np.median(yc / m) / 2, 0.05, 0.01, 0.2, 0.01])
        x0 = np.append(x0, np.log((g0 - 1) / (10 - g0)))
        for method in ("L-BFGS-B", "Nelder-Mead"):
            opts = {"maxiter": 20000, "maxfev": 20000} if method == "Nelder-Mead" else {}
            r = minimize(objective, x0, method=method, options=opts)
            if best is None or r.fun < best.fun:
                best = r
    x = best.x
    return np.append(np.exp(x[:6]), 1 + 9 / (1 + np.exp(-x[6])))


def errors(th: np.ndarray, data: np.ndarray) -> tuple[float, float]:
    t, _ = predict(th, data[:, 0], data[:, 1], data[:, 2])
    rel = np.abs(t / data[:, 3] - 1)
    return float(rel.mean()), float(np.percentile(rel, 95))


KEYS = THROUGHPUT_FIELDS  # eq. 7's seven parameters, as the sharing model names them


def refit(sim: Path) -> None:
    shared = tomllib.loads((DATA / "sharing.toml").read_text())["models"]
    text = [
        "# Pollux's throughput model (paper eq. 8-11; the sharing model's eq. 7, same form and\n"
        "# keys as gpusched/data/sharing.toml) refitted by examples/pollux/artifact_data.py to\n"
        "# ALL rows of the artifact's profiles, placements.csv and scalability.csv (4-GPU nodes,\n"
        "# 1-64 GPUs).\n"
        + SOURCE.format(what="traces/<app>/{placements,scalability}.csv")
        + "# Changes: these parameters are our fit; the tables are not bundled.\n"
        "# The option -p throughput=refit of the goodput job model (docs/pollux.md); the default\n"
        "# reads sharing.toml. err = mean |relative error| of the step time (p95 in brackets).\n"
    ]
    for app in APPS:
        data = profile_rows(sim, app)
        th = fit(data)
        sh = np.array([shared[app][key] for key in KEYS])
        e_fit, e_sh = errors(th, data), errors(sh, data)
        print(
            f"{app:12s} rows {len(data):5d}  refit {e_fit[0]:.1%} (p95 {e_fit[1]:.0%})"
            f"  sharing.toml {e_sh[0]:.1%} (p95 {e_sh[1]:.0%})"
        )
        text.append(
            f"\n[models.{app}]\n# {len(data)} rows; err refit {e_fit[0]:.1%} (p95 {e_fit[1]:.0%}), "
            f"sharing.toml {e_sh[0]:.1%} (p95 {e_sh[1]:.0%})\n"
        )
        text += [f"{key} = {v:.4g}\n" for key, v in zip(KEYS, th, strict=True)]
    (DATA / "pollux_refit.toml").write_text("".join(text))


@guard
def main(argv: list[str]) -> None:
    expected = "the Pollux artifact's simulator folder (adaptdl's simulator/, holding traces/)"
    sim = need_folder(argv[0], expected)
    need_folder(sim / "traces", expected)
    gradstats(sim)
    profiles(sim)
    workloads(sim)
    if "--refit" in argv[1:]:
        refit(sim)


if __name__ == "__main__":
    main(args(1, "python examples/pollux/artifact_data.py SIMULATOR_DIR [--refit]"))
