"""Before/after check for layout refactors (issue 24), run by hand: dump every segment, KRaft
checkpoint, index and snapshot file of samples/ and tests/data, and of every folder given as
an argument (e.g. a copy of real brokers' log dirs), in one process (text with
--deep-iteration --print-data-log, --index-sanity-check, --verify-index-only, json) and print
a hash of stdout, stderr and exit status per file and variant. Run it before and after a
change, then diff:

    python tests/formats/dump_fingerprint.py [DIR...] > before.txt   # (on the old commit)
    python tests/formats/dump_fingerprint.py [DIR...] > after.txt && cmp before.txt after.txt

The dump only reads its inputs; paths are printed relative to their root so that two
checkouts compare.
"""
import hashlib
import io
import sys
from pathlib import Path

from segtools.dump.options import DumpOptions
from segtools.dump.runner import run_dump

root = Path(__file__).resolve().parents[2]
SUFFIXES = ('.log', '.index', '.timeindex', '.txnindex', '.snapshot', '.checkpoint')
bases = [root / 'samples', root / 'tests/data'] + [Path(a).resolve() for a in sys.argv[1:]]
files = sorted((str(p), base) for base in bases for p in base.rglob('*')
               if p.is_file() and p.suffix in SUFFIXES)
variants = {'text': DumpOptions(deep_iteration=True, print_data_log=True),
            'sanity': DumpOptions(index_sanity_check=True),
            'verify': DumpOptions(verify_index_only=True),
            'json': DumpOptions(deep_iteration=True, print_data_log=True, output='json')}
for f, base in files:
    for name, opt in variants.items():
        out, err = io.StringIO(), io.StringIO()
        try:
            rc = run_dump([f], opt, out=out, err=err)
        except Exception as e:   # noqa: BLE001 - a crash is a result to compare too
            rc = f'{type(e).__name__}:{e}'
        text = (out.getvalue() + '\0' + err.getvalue() + f'\0{rc}').replace(str(root), '<root>')
        h = hashlib.sha256(text.encode()).hexdigest()[:16]
        print(Path(f).relative_to(base.parent), name, h)
