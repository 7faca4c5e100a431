"""Regenerate every simulated sample: samples/scenarios/<name>.yaml -> samples/generated/<name>/.

    python samples/regenerate.py            # all scenarios
    python samples/regenerate.py S7 a-      # only names starting with these prefixes

Output is deterministic (same scenario and seed -> same bytes), so a diff after regenerating
shows real behaviour changes of the simulator.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCENARIOS = HERE / "scenarios"
GENERATED = HERE / "generated"


def main(prefixes: list[str]) -> int:
    from segtools.simulate import simulate

    total = 0
    for scenario in sorted(SCENARIOS.glob("*.yaml")):
        name = scenario.stem
        if prefixes and not any(name.startswith(p) for p in prefixes):
            continue
        out = GENERATED / name
        if out.exists():
            shutil.rmtree(out)
        result = simulate(scenario, out)
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        total += size
        lost = sum(len(p["lost"]) for p in result.truth.values())
        print(f"{name}: {len(result.acks)} records, {lost} lost, {size / 1024:.0f} KiB")
    print(f"total {total / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
