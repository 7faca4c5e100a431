"""By hand (not part of the CI suite): tests/quorum/test_voters_realkafka.py and
test_failover_realkafka.py on other Kafka releases than the CI's 4.3.1 (remove/add-controller
against kafka-metadata-quorum, replay of every snapshot, the image at the log end against the
same release's kafka-metadata-shell; the active controller killed mid-append):

    .venv/bin/python tests/quorum/voters_matrix.py --no-shell      # 4.4.0
    .venv/bin/python tests/quorum/voters_matrix.py 4.2.0 4.3.1

``--no-shell`` leaves out the kafka-metadata-shell comparison: Maven Central serves no
kafka-shell 4.4.0 artifact (measured 2026-11-28), so on 4.4.0 that test can only fail.

One pytest run per release (SEGTOOLS_QUORUM_RELEASE); prints each release's result line and
exits 1 when any failed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: the real-Kafka quorum modules; each reads its release from SEGTOOLS_QUORUM_RELEASE
MODULES = ("test_voters_realkafka.py", "test_failover_realkafka.py")


def main(releases: list[str], shell: bool) -> int:
    failed = []
    for release in releases:
        env = dict(os.environ, SEGTOOLS_QUORUM_RELEASE=release)
        res = subprocess.run(
            [sys.executable, "-m", "pytest", "-n", "0", "-q", "-s", "-p", "no:cacheprovider",
             "--durations=0"] + [str(REPO / "tests" / "quorum" / m) for m in MODULES]
            + ([] if shell else ["-k", "not metadata_shell"]),
            cwd=REPO, env=env, capture_output=True, text=True, check=False)
        lines = [ln for ln in res.stdout.splitlines()
                 if ln.startswith((release, "node ", "leader ", "FAILED", "ERROR")) or " passed" in ln
                 or " failed" in ln]
        print(f"== Kafka {release}: exit {res.returncode}")
        print("\n".join(lines))
        if res.returncode != 0:
            failed.append(release)
            print(res.stdout[-4000:])
    return 1 if failed else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    no_shell = "--no-shell" in args
    releases = [a for a in args if a != "--no-shell"] or ["4.4.0"]
    sys.exit(main(releases, not no_shell))
