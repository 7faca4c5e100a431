"""Before/after check for layout refactors (issue 24), run by hand: dump every segment, index
and snapshot file of samples/ and tests/data (text with --deep-iteration --print-data-log,
--index-sanity-check, --verify-index-only, json) in one process and print a hash of stdout,
stderr and exit status per file and variant. Run it before and after a change, then diff:

    python tests/formats/dump_fingerprint.py > before.txt   # (on the old commit)
    python tests/formats/dump_fingerprint.py > after.txt && cmp before.txt after.txt
"""
import hashlib
import io
from pathlib import Path

from segtools.dump.options import DumpOptions
from segtools.dump.runner import run_dump

root = Path(__file__).resolve().parents[2]
files = sorted(str(p) for base in ('samples', 'tests/data') for p in (root / base).rglob('*')
               if p.is_file() and p.suffix in ('.log', '.index', '.timeindex', '.txnindex', '.snapshot'))
variants = {'text': DumpOptions(deep_iteration=True, print_data_log=True),
            'sanity': DumpOptions(index_sanity_check=True),
            'verify': DumpOptions(verify_index_only=True),
            'json': DumpOptions(deep_iteration=True, print_data_log=True, output='json')}
for f in files:
    for name, opt in variants.items():
        out, err = io.StringIO(), io.StringIO()
        try:
            rc = run_dump([f], opt, out=out, err=err)
        except Exception as e:   # noqa: BLE001 - a crash is a result to compare too
            rc = f'{type(e).__name__}:{e}'
        h = hashlib.sha256((out.getvalue() + '\0' + err.getvalue() + f'\0{rc}').encode()).hexdigest()[:16]
        print(f, name, h)
