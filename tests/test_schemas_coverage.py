"""Every place the product serialises JSON is either one of the outputs in
segtools.schemas.OUTPUTS (a shipped schema, validated by tests/test_schemas*.py) or listed
below as not an output of ours (Kafka's own formats, values inside another format). A new
json.dump/json.dumps/JSONEncoder call fails here until it is given a schema or a reason."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from segtools import schemas

pytestmark = pytest.mark.fast

REPO = Path(__file__).resolve().parents[1]
PRODUCT = ("segtools", "cli", "spark", "formats")

#: (file, enclosing function) -> one label per serialising call in it, in source order: an
#: OUTPUTS key, or "not an output: why"
SITES: dict[tuple[str, str], tuple[str, ...]] = {
    ("cli/advise.py", "advise"): ("advise --json",),
    ("cli/bundle.py", "verify"): ("verify --output json",),
    ("cli/compare.py", "compare"): ("compare --report", "compare --report"),
    ("cli/quorum.py", "quorum"): ("quorum --json",),
    ("cli/quorum.py", "_time_travel"): ("quorum --image-at", "quorum --image-at --diff-from"),
    ("cli/replay.py", "replay"): ("replay --plan-out", "replay --plan-out"),
    ("cli/tier.py", "tier"): ("tier --json",),
    ("segtools/bundle.py", "collect"): ("collect: MANIFEST.json",),
    ("segtools/dump/json_out.py", "NdjsonSink.__init__"): ("dump --output ndjson",),
    ("segtools/dump/json_out.py", "JsonSink.__init__"): ("dump --output json",),
    ("segtools/dump/json_out.py", "JsonSink.note"): ("dump --output ndjson",),
    ("segtools/dump/json_out.py", "JsonSink.finding"): ("dump --output ndjson",),
    ("segtools/dump/json_out.py", "data_value"): ("not an output: a check that decoded fields serialise",),
    ("segtools/dump/state_dump.py", "_dump_text_file"): ("not an output: one value of a text line",),
    # partial_run's _SUCCESS (export, salvage, collect, compare --lost-out), on a local disk
    # (streamed) and on an object store
    ("segtools/files/outputs.py", "_LocalMarkers.write_json"): (
        "_SUCCESS (export, salvage, collect, compare --lost-out)",),
    ("segtools/files/outputs.py", "_ArrowMarkers.write_json"): (
        "_SUCCESS (export, salvage, collect, compare --lost-out)",),
    ("segtools/forensics/lost_out.py", "write_lost_out"): ("compare --lost-out: lost.ndjson",),
    ("segtools/forensics/report.py", "CompareReport.json_text"): ("compare --report",),
    ("segtools/salvage.py", "salvage"): ("salvage: segtools-salvage.json", "salvage: OUT/manifest.json"),
    ("segtools/simulate/truth.py", "acks_text"): ("simulate: acks.jsonl",),
    ("segtools/simulate/truth.py", "truth_file_text"): ("simulate: truth.json",),
    ("segtools/realcluster/__init__.py", "run_on_kafka"): ("simulate --engine kafka: kafka/run.json",),
    # Kafka's own formats: Kafka's layout is the contract, not a schema of ours
    ("segtools/advise.py", "PartitionAdvice._reassign"): (
        "not an output: kafka-reassign-partitions' topics list", "not an output: kafka-reassign-partitions' plan",
        "not an output: the plan inside a shell command"),
    ("formats/root_files.py", "_Json._build"): ("not an output: Kafka's quorum-state file (JsonObjectDocument)",),
    ("segtools/simulate/files.py", "write_broker"): ("not an output: Kafka's .kafka_cleanshutdown marker",),
    ("cli/docs.py", "_schema"): ("not an output: prints a shipped schema itself",),
    # values inside another format
    ("segtools/forensics/plain.py", "dumps"): ("not an output: a JSON string inside a Spark/Arrow column",),
    ("segtools/forensics/report_html.py", "_preview"): ("not an output: a value shown in an HTML cell",),
    ("segtools/forensics/report_html.py", "_json_block"): (
        "not an output: the page's lost-record rows for its own script (machines read compare --report)",),
    ("segtools/forensics/report_html.py", "render_html"): ("not an output: gzip chunks of the page's rows",),
    ("segtools/forensics/report_html.py", "_pre_json"): ("not an output: a cluster image shown in the page's <pre>",),
    ("segtools/forensics/report_html.py", "_cell"): ("not an output: a value shown in an HTML cell",),
    ("spark/compare_job.py", "run_specs"): ("not an output: JSON strings in Parquet table columns",
                                            "not an output: JSON strings in Parquet table columns"),
    ("spark/datasource.py", "plan_json"): ("not an output: the Spark data source's plan option",),
}


def serialising_calls(root: Path = REPO) -> dict[tuple[str, str], int]:
    """(file, enclosing function) -> how many json.dump / json.dumps / json.JSONEncoder calls."""
    found: dict[tuple[str, str], int] = {}

    def walk(node: ast.AST, stack: list[str], rel: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                walk(child, [*stack, child.name], rel)
                continue
            if (isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute)
                    and isinstance(child.func.value, ast.Name) and child.func.value.id == "json"
                    and child.func.attr in ("dump", "dumps", "JSONEncoder")):
                key = (rel, ".".join(stack) or "<module>")
                found[key] = found.get(key, 0) + 1
            walk(child, stack, rel)

    for top in PRODUCT:
        for path in sorted((root / top).rglob("*.py")):
            walk(ast.parse(path.read_text(encoding="utf-8")), [], str(path.relative_to(root)))
    return found


def test_every_json_writing_site_has_a_schema_or_a_reason() -> None:
    found = serialising_calls()
    unlisted = {k: n for k, n in found.items() if len(SITES.get(k, ())) != n}
    assert not unlisted, (
        "JSON written here has no schema: add it to segtools.schemas.OUTPUTS with a schema in "
        f"segtools/schemas/ and a test in tests/test_schemas*.py, then list it in SITES: {unlisted}")
    stale = set(SITES) - set(found)
    assert not stale, f"SITES lists places that no longer write JSON: {stale}"


def test_every_label_is_an_output_or_a_reason_and_every_output_is_written() -> None:
    labels = {label for labels in SITES.values() for label in labels}
    outputs = {label for label in labels if not label.startswith("not an output: ")}
    assert outputs <= set(schemas.OUTPUTS), outputs - set(schemas.OUTPUTS)
    assert set(schemas.OUTPUTS) - outputs == set(), "an output in OUTPUTS that nothing writes"


def test_the_guard_finds_a_new_site(tmp_path: Path) -> None:
    """The walk is not blind: a json.dumps in a new method is found, keyed by its function."""
    (tmp_path / "segtools").mkdir()
    (tmp_path / "segtools" / "new.py").write_text("import json\n\n\nclass A:\n    def out(self):\n"
                                                  "        return json.dumps({})\n")
    assert serialising_calls(tmp_path) == {("segtools/new.py", "A.out"): 1}


def _requires_version(schema: dict) -> bool:
    """schema_version required on the document, on each item of an array document, on each
    entry of a map document, or (an NDJSON line) on the head line of each group."""
    if "schema_version" in schema.get("required", ()):
        return True
    for inner in (schema.get("items"), schema.get("additionalProperties")):
        if isinstance(inner, dict) and "schema_version" in inner.get("required", ()):
            return True
    return any("schema_version" in rule.get("then", {}).get("required", ()) for rule in schema.get("allOf", ()))


def test_every_schema_requires_schema_version() -> None:
    for name in schemas.NAMES:
        assert _requires_version(schemas.load(name)), name


def _finding_kinds(package: str) -> set[str]:
    """The kinds every ``Finding(...)`` of ``package`` is built with (all literals, or fail)."""
    kinds: set[str] = set()
    for path in sorted((REPO / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Finding":
                arg = node.args[0] if node.args else next(k.value for k in node.keywords if k.arg == "kind")
                assert isinstance(arg, ast.Constant), f"{path}:{node.lineno}: a finding kind that is not a literal"
                kinds.add(arg.value)
    return kinds


def test_code_enums_are_the_codes_the_product_writes() -> None:
    """The enums of the schemas are the codes in the source: a new finding kind, transaction
    state or truth cause fails here until its schema knows it."""
    from segtools.forensics.transactions import TXN_STATES
    from segtools.simulate import truth

    quorum = schemas.load("quorum")["properties"]
    # the audit's findings and its observations (NOTE lines) are both Finding objects
    kinds = {k for key in ("findings", "observations") for k in quorum[key]["items"]["properties"]["kind"]["enum"]}
    assert kinds == _finding_kinds("segtools/quorum")
    tier = schemas.load("tier")["properties"]["findings"]["items"]["properties"]["kind"]["enum"]
    assert set(tier) == _finding_kinds("segtools/tier")
    assert set(schemas.load("lost-record")["properties"]["txn_state"]["enum"]) == set(TXN_STATES)
    causes = schemas.load("truth")["additionalProperties"]["properties"]["lost"]["items"]["properties"]["cause"]
    assert set(causes["enum"]) == {truth.UNCLEAN_ELECTION, truth.LEADER_CRASH_ACKS_1, truth.UNCOMMITTED,
                                   truth.POWER_LOSS, truth.TRUNCATED}


def test_json_is_only_used_as_json_dot_name() -> None:
    """The guard above looks for ``json.dump``/``json.dumps``: an aliased module or a name imported
    from json (``from json import dumps``) would hide a site from it."""
    hidden = []
    for top in PRODUCT:
        for path in sorted((REPO / top).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module == "json":
                    hidden.append(f"{path.relative_to(REPO)}:{node.lineno}")
                if isinstance(node, ast.Import) and any(a.name == "json" and a.asname for a in node.names):
                    hidden.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert hidden == []


def test_dump_file_kinds_are_the_kinds_dump_names_files_by() -> None:
    from segtools.dump.paths import NAMED_KINDS, SUFFIX_KINDS

    kinds = set(NAMED_KINDS.values()) | set(SUFFIX_KINDS.values()) | {"unknown"}
    assert set(schemas.load("dump-json")["properties"]["kind"]["enum"]) == kinds
    (rule,) = [r for r in schemas.load("dump-ndjson")["allOf"]
               if r.get("if", {}).get("properties", {}).get("type") == {"const": "file"}]
    assert set(rule["then"]["properties"]["kind"]["enum"]) == kinds


def test_every_command_writing_success_is_in_its_schema() -> None:
    """_SUCCESS names the command that wrote it: each partial_run(command=...) of the product is
    one the success schema knows (a new one fails here until the schema says what it adds)."""
    commands = set()
    for top in PRODUCT:
        for path in sorted((REPO / top).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "partial_run":
                    (kw,) = [k for k in node.keywords if k.arg == "command"]
                    assert isinstance(kw.value, ast.Constant), f"{path}:{node.lineno}: command not a literal"
                    commands.add(kw.value.value)
    assert commands == set(schemas.load("success")["properties"]["command"]["enum"])
