"""Start-up time of the CLI, side by side with `python -c "import numpy"` (the floor: the plan runs on numpy).

Each command runs in a fresh interpreter, interleaved with the others round by round so
that a busy machine slows all of them alike; the figure is the median wall time per command.
The targets are ratios to the numpy import, not seconds:

* ``inference-ledger plan --json`` within 2.5x;
* ``inference-ledger --help`` within 2x.

    python bench/bench_startup.py [--rounds 15]

Exit status 1 when a target is missed (so a CI job may run it; the test suite does not time anything).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = [sys.executable]
RUNS = {
    'python -c "import numpy"': [*PY, "-c", "import numpy"],
    "inference-ledger plan --json": [*PY, "-m", "inference_ledger", "plan", "--json"],
    "inference-ledger --help": [*PY, "-m", "inference_ledger", "--help"],
}
TARGETS = {"inference-ledger plan --json": 2.5, "inference-ledger --help": 2.0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    times: dict[str, list[float]] = {k: [] for k in RUNS}
    for name, cmd in RUNS.items():  # warm the file cache once
        subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True)
    for _ in range(args.rounds):
        for name, cmd in RUNS.items():
            t0 = time.perf_counter()
            subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True)
            times[name].append(time.perf_counter() - t0)
    base = statistics.median(times['python -c "import numpy"'])
    ok = True
    print(f"{'command':<32} {'median':>9} {'ratio':>7} {'target':>7}")
    for name, ts in times.items():
        med = statistics.median(ts)
        target = TARGETS.get(name)
        ratio = med / base
        ok &= target is None or ratio <= target
        print(f"{name:<32} {med * 1e3:>7.0f} ms {ratio:>6.2f}x {'' if target is None else f'<= {target}x':>7}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
