"""Multi-file summaries print in Scala 2.13 mutable.HashMap order, as kafka-dump-log does.
The oracle is scala-library itself (the 2.13 jar pyspark ships), driven from Java."""

from __future__ import annotations

import os
import random
import shutil
import struct
import subprocess
from pathlib import Path

import pyspark
from dump_builders import SEG, lines, run, simple_records_log

from segtools.dump.scala_order import scala_hashmap_order

ORDER_SOURCE = """
import java.nio.file.*;
import java.util.*;

public class ScalaOrder {
    public static void main(String[] args) throws Exception {
        // scenarios separated by blank lines; each line is one put(key, _) call
        StringBuilder out = new StringBuilder();
        scala.collection.mutable.HashMap<String, Integer> map = new scala.collection.mutable.HashMap<>();
        for (String line : Files.readAllLines(Paths.get(args[0]))) {
            if (line.isEmpty()) {
                scala.collection.Iterator<String> it = map.keysIterator();
                while (it.hasNext()) out.append(it.next()).append('\\n');
                out.append('\\n');
                map = new scala.collection.mutable.HashMap<>();
            } else {
                map.put(line, 1);
            }
        }
        Files.writeString(Paths.get(args[1]), out.toString());
    }
}
"""


def scala_orders(scenarios: list[list[str]], workdir: Path) -> list[list[str]]:
    java = shutil.which("java")
    assert java is not None, "Java 17 must be on PATH for the Scala HashMap oracle"
    jars = Path(pyspark.__file__).parent / "jars"
    (scala_jar,) = jars.glob("scala-library-2.13.*.jar")
    (workdir / "ScalaOrder.java").write_text(ORDER_SOURCE)
    (workdir / "in.txt").write_text("".join("".join(k + "\n" for k in s) + "\n" for s in scenarios))
    subprocess.run([java, "-cp", str(scala_jar), str(workdir / "ScalaOrder.java"),
                    str(workdir / "in.txt"), str(workdir / "out.txt")], check=True, timeout=300,
                   capture_output=True)
    blocks = (workdir / "out.txt").read_text().split("\n\n")[:-1]
    return [block.split("\n") if block else [] for block in blocks]


def test_model_matches_scala_hashmap(tmp_path: Path) -> None:
    rng = random.Random(7)
    scenarios = []
    for n in (1, 2, 10, 11, 12, 13, 23, 24, 25, 49, 100, 300):
        keys = [f"/data/kafka/t{rng.randrange(10**6)}-{rng.randrange(50)}/{rng.randrange(9):020d}"
                f".{rng.choice(['index', 'log', 'timeindex'])}" for _ in range(n)]
        puts = [k for k in keys for _ in range(rng.choice([1, 1, 3]))]
        rng.shuffle(puts)
        scenarios.append(puts)
    for puts, expected in zip(scenarios, scala_orders(scenarios, tmp_path)):
        assert scala_hashmap_order(puts) == expected


def test_multi_file_index_mismatch_summary_order(tmp_path: Path) -> None:
    """13 index files, each with one or two mismatches: the stderr blocks come out in the
    order Scala's HashMap iterates the puts Kafka makes (one per mismatch)."""
    index_files = []
    puts = []
    for i in range(13):
        d = tmp_path / f"topic{i}-{i}"
        d.mkdir()
        log, batches = simple_records_log(d)
        index = d / f"{SEG}.index"
        entries = [(8, 0)] + ([(28, len(batches[0]))] if i % 3 == 0 else [])
        index.write_bytes(b"".join(struct.pack(">ii", o, p) for o, p in entries))
        index_files.append(index)
        puts += [os.path.abspath(index)] * len(entries)
    result = run("--kafka-version", "3.9", "--verify-index-only", *index_files)
    assert result.exit_code == 1
    order = [line[len("Mismatches in :"):] for line in lines(result.stderr)
             if line.startswith("Mismatches in :")]
    (expected,) = scala_orders([puts], tmp_path)
    assert order == expected
    assert order != sorted(order) and order != [os.path.abspath(p) for p in index_files]
