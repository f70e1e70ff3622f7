#!/usr/bin/env bash
# The JSON Schema accepts every valid testdata job and rejects the bad inputs it can express,
# checked with a real validator (Debian's python3-jsonschema, Draft 2020-12).
set -u
SRC=$2
PY=/usr/bin/python3
if ! $PY -c 'import jsonschema' 2>/dev/null; then echo "SKIP: python3-jsonschema is not installed"; exit 77; fi
exec $PY - "$SRC" <<'PYEOF'
import json, pathlib, sys
import jsonschema
src = pathlib.Path(sys.argv[1])
schema = json.loads((src / "schemas/program.schema.json").read_text())
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
fail = 0
valid = sorted((src / "testdata/jobs").glob("*.json")) + sorted((src / "testdata/golden").glob("*/*.json"))
for f in valid:
    errs = list(validator.iter_errors(json.loads(f.read_text())))
    if errs:
        fail = 1
        print(f"FAIL {f.relative_to(src)} should be valid: {errs[0].message} at {list(errs[0].absolute_path)}")
bad = src / "testdata/bad"
names = (bad / "SCHEMA_REJECTS").read_text().split()
for name in names:
    try:
        doc = json.loads((bad / f"{name}.json").read_text())
    except ValueError:
        print(f"FAIL {name}: not JSON, cannot be a schema case"); fail = 1; continue
    if validator.is_valid(doc):
        print(f"FAIL {name} should be rejected by the schema"); fail = 1
print(f"schema: {len(valid)} valid jobs accepted, {len(names)} bad inputs rejected" if not fail else "schema: failures")
sys.exit(fail)
PYEOF
