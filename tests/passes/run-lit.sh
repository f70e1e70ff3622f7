#!/bin/bash
# Runs one pass test file (tests/passes/*.sptxt) under lit with FileCheck, as ctest's passes/NAME.
# Both come from Debian's llvm-14-tools (scripts/install-deps.sh); without them the test is
# skipped (exit 77) with the reason, never passed.
# Usage: run-lit.sh SP_OPT TEST_FILE EXEC_ROOT (one per file: lit keeps its timing file there, so
# files run in parallel must not share one)
set -u
# Absolute: lit runs the RUN lines in a directory of its own.
SP_OPT=$(realpath "$1") TEST=$(realpath "$2") EXEC_ROOT=$(realpath -m "$3")
find_tool() {
  for candidate in "$@"; do
    if [ -x "$candidate" ]; then echo "$candidate"; return 0; fi
    if command -v "$candidate" > /dev/null 2>&1; then command -v "$candidate"; return 0; fi
  done
  return 1
}
LIT=$(find_tool lit /usr/lib/llvm-14/build/utils/lit/lit.py) || { echo "skip: lit not found (apt-get install llvm-14-tools)"; exit 77; }
FILECHECK=$(find_tool FileCheck /usr/lib/llvm-14/bin/FileCheck FileCheck-14) ||
  { echo "skip: FileCheck not found (apt-get install llvm-14-tools)"; exit 77; }
# FileCheck must be called FileCheck on PATH (the RUN lines say so): a FileCheck-14 gets a link.
if [ "$(basename "$FILECHECK")" != FileCheck ]; then
  mkdir -p "$EXEC_ROOT/bin" && ln -sf "$FILECHECK" "$EXEC_ROOT/bin/FileCheck" && FILECHECK=$EXEC_ROOT/bin/FileCheck
fi
case $LIT in *.py) LIT="python3 $LIT" ;; esac
exec $LIT -v --param sp_opt="$SP_OPT" --param filecheck="$FILECHECK" --param exec_root="$EXEC_ROOT" "$TEST"
