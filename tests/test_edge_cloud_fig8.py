"""examples/a-online/aggregate.py: Fig. 8's A_online-E trend by ablation variant.

Hand-made comparison folders (the layout run.sh's `fig8ab` part writes) give every rate,
ratio and seed count of the table by hand; a variant that runs SRTF only takes A_online-E
from the same seed's base comparison.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_DIR = Path(__file__).parent.parent / "examples" / "a-online"
sys.path.insert(0, str(_DIR))  # aggregate.py imports preemptions.py from its folder
_spec = importlib.util.spec_from_file_location("a_online_aggregate", _DIR / "aggregate.py")
assert _spec is not None and _spec.loader is not None
agg = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = agg
_spec.loader.exec_module(agg)

HEAD = "policy,total_jct_s,avg_wait_s,gpu_utilization,total_comm_s,total_transfer_s,makespan_s"


def comparison(out: Path, name: str, rows: dict[str, float]) -> None:
    d = out / name
    d.mkdir(parents=True)
    lines = [HEAD] + [f"{pol},{jct},{jct / 10},0.5,1,1,100" for pol, jct in rows.items()]
    (d / "comparison.csv").write_text("\n".join(lines) + "\n")


def table_row(text: str, variant: str) -> list[str]:
    for line in text.splitlines():
        if line.startswith(f"| {variant}:"):
            return [c.strip() for c in line.strip("|").split("|")]
    raise AssertionError(f"no row {variant} in:\n{text}")


@pytest.fixture
def out(tmp_path: Path) -> Path:
    # base (SRTF 100 throughout): A_online-E on seed 1 falls 0.8 -> 0.7 -> 0.6 (every step),
    # on seed 2 rises 0.9 -> 0.95 -> 1.0; A_online rises 0.1, 0.2, 0.3 on seed 1 and 0.1,
    # 0.05, 0.2 on seed 2 (not at every step); Tiresias-L falls 1.5, 1.4, 1.3 on seed 1 and
    # rises 1.5, 1.6, 1.7 on seed 2; BatchSche stays at 0.2
    base = {
        40: ((80, 10, 150), (90, 10, 150)),
        80: ((70, 20, 140), (95, 5, 160)),
        120: ((60, 30, 130), (100, 20, 170)),
    }
    for m, seeds in base.items():
        for seed, (e, a, t) in enumerate(seeds, 1):
            rows = {"a-online": a, "a-online-e": e, "srtf": 100, "tiresias-l": t, "batchsche": 20}
            comparison(tmp_path, f"abl-fig8-base-servers{m}-s{seed}", rows)
    # workers (SRTF only): seed 1 SRTF 100, 200, 400: A_online-E's rate 0.8, 0.35, 0.15;
    # seed 2 SRTF 100, 100, 50: 0.9, 0.95, 2.0
    for m, (s1, s2) in {40: (100, 100), 80: (200, 100), 120: (400, 50)}.items():
        comparison(tmp_path, f"abl-fig8-workers-servers{m}-s1", {"srtf:workers=trace": s1})
        comparison(tmp_path, f"abl-fig8-workers-servers{m}-s2", {"srtf:workers=trace": s2})
    # serial: one server count missing, so no row
    comparison(tmp_path, "abl-fig8-serial-servers40-s1", {"a-online-e": 1, "srtf": 1})
    return tmp_path


def test_fig8_ablation_by_hand(out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agg.fig8_ablation(agg.read(out))
    text = capsys.readouterr().out
    assert "| variant | 40 | 80 | 120 | 120/40 | falls 40->120 | falls every step |" in text
    assert table_row(text, "base") == [
        "base: the defaults",
        "0.850 [0.800, 0.900]",
        "0.825 [0.700, 0.950]",
        "0.800 [0.600, 1.000]",
        # 0.6 / 0.8 = 0.75 and 1.0 / 0.9 = 1.111
        "0.93 [0.75, 1.11]",
        "1/2",
        "1/2",
    ]
    assert table_row(text, "workers") == [
        "workers: SRTF's k = trace GPU count",
        "0.850 [0.800, 0.900]",
        "0.650 [0.350, 0.950]",
        "1.075 [0.150, 2.000]",
        # 0.15 / 0.8 = 0.1875 and 2.0 / 0.9 = 2.222
        "1.20 [0.19, 2.22]",
        "1/2",
        "1/2",
    ]
    assert "| serial:" not in text
    trend = "| a-online (rises) | a-online-e (falls) | tiresias-l (falls) | batchsche (rises) |"
    assert trend in text
    assert (
        "| base | 0.100 -> 0.250 (2/2, 1/2) | 0.850 -> 0.800 (1/2, 1/2) "
        "| 1.500 -> 1.500 (1/2, 1/2) | 0.200 -> 0.200 (0/2, 0/2) |"
    ) in text
    # waits: base at 40 servers, A_online-E (8 + 9) / 2 = 8.5 -> "8", SRTF 10; util 0.50
    assert "| base | 8 / 10, 0.50 / 0.50 |" in text
