#!/usr/bin/env python3
"""Golden-test driver in the lit/FileCheck habit.

A case is a folder under testdata/golden/ holding:
  cmd               one shell command line. Substitutions: %sp-opt (the binary), %S (this
                    folder), %T (a fresh temp dir), %testdata (the testdata folder).
  expected.rc       the exit code (default 0)
  expected.stdout   exact stdout (optional)       check.stdout  FileCheck-lite lines (optional)
  expected.stderr   exact stderr (optional)       check.stderr  FileCheck-lite lines (optional)
  expected/NAME     a file the command must leave as %T/NAME, compared byte for byte
  absent            names (one a line) that must NOT exist in %T afterwards
Temp files (*.tmp.*) left in %T always fail the case: outputs are written atomically.

FileCheck-lite (plain substrings, no regexes; blank lines and lines starting with # or // are
ignored): "CHECK: s" finds the next line containing s, "CHECK-NEXT: s" the very next line,
"CHECK-SAME: s" s later on the line of the previous match, "CHECK-EMPTY:" an empty next line,
"CHECK-NOT: s" forbids s between the previous match and the next one (or the end). "CHECK-LABEL: s"
lines are found first, in order, and cut the output into sections: the checks between two labels
must match between the two labelled lines.
With SPOPT_UPDATE_GOLDEN=1 the exact expectations are rewritten from what the command printed.
Usage: golden.py SP_OPT CASE_DIR
"""
import os, pathlib, shutil, subprocess, sys, tempfile

def filecheck(text, spec, what):
    lines = text.splitlines()
    checks = []
    for raw in spec.splitlines():
        raw = raw.strip()
        if not raw or raw.startswith("#") or raw.startswith("//"):
            continue
        kind, _, pat = raw.partition(":")
        if kind not in ("CHECK", "CHECK-NEXT", "CHECK-NOT", "CHECK-SAME", "CHECK-EMPTY", "CHECK-LABEL"):
            return f"{what}: bad check line {raw!r}"
        checks.append((kind, pat.strip(), raw))
    # Labels first, in order: they cut the output into sections no other check matches across.
    label_at = {}
    pos = 0
    for i, (kind, pat, _) in enumerate(checks):
        if kind == "CHECK-LABEL":
            found = next((n for n in range(pos, len(lines)) if pat in lines[n]), None)
            if found is None:
                return f"{what}: CHECK-LABEL: {pat!r} not found after line {pos}\n--- {what} ---\n{text}"
            label_at[i] = found
            pos = found + 1
    def limit(i):  # the line of the next label after check i, or the end
        return next((label_at[j] for j in sorted(label_at) if j > i), len(lines))
    pos, col, last = 0, 0, None  # next line to search; end of the last match on line `last`
    nots = []
    def check_nots(upto):
        for n in nots:
            for k in range(pos, upto):
                if n in lines[k]:
                    return f"{what}: CHECK-NOT: {n!r} found on line {k}: {lines[k]!r}"
        return None
    for i, (kind, pat, raw) in enumerate(checks):
        if kind == "CHECK-NOT":
            nots.append(pat)
            continue
        end = limit(i)
        if kind == "CHECK-LABEL":
            found, at = label_at[i], lines[label_at[i]].find(pat)
        elif kind == "CHECK-SAME":
            at = lines[last].find(pat, col) if last is not None and pat else -1
            if at < 0:
                return f"{what}: CHECK-SAME: {pat!r} not found on line {last} after column {col}\n--- {what} ---\n{text}"
            col = at + len(pat)
            continue
        elif kind == "CHECK-EMPTY":
            found, at = (pos, 0) if pos < len(lines) and lines[pos] == "" else (None, -1)
        elif kind == "CHECK-NEXT":
            found = pos if pos < end and pat in lines[pos] else None
            at = lines[pos].find(pat) if found is not None else -1
        else:
            found = next((n for n in range(pos, end) if pat in lines[n]), None)
            at = lines[found].find(pat) if found is not None else -1
        if found is None:
            return f"{what}: {kind}: {pat!r} not found after line {pos}\n--- {what} ---\n{text}"
        msg = check_nots(found)
        if msg:
            return msg
        nots = []
        pos, last, col = found + 1, found, at + len(pat)
    return check_nots(len(lines))

def main():
    binary, case = sys.argv[1], pathlib.Path(sys.argv[2]).resolve()
    testdata = case.parent.parent
    update = os.environ.get("SPOPT_UPDATE_GOLDEN") == "1"
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="golden-"))
    try:
        cmd = (case / "cmd").read_text().strip()
        cmd = (cmd.replace("%sp-opt", binary).replace("%testdata", str(testdata))
                  .replace("%S", str(case)).replace("%T", str(tmp)))
        env = dict(os.environ, NO_COLOR="1")
        p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=600,
                           cwd=str(testdata.parent), env=env)
        out = p.stdout.replace(str(tmp), "%T").replace(str(testdata), "%testdata")
        err = p.stderr.replace(str(tmp), "%T").replace(str(testdata), "%testdata")
        failures = []
        rc_file = case / "expected.rc"
        want_rc = int(rc_file.read_text()) if rc_file.exists() else 0
        if update:
            if p.returncode != 0 or rc_file.exists():
                rc_file.write_text(f"{p.returncode}\n")
            for name, text in (("expected.stdout", out), ("expected.stderr", err)):
                if (case / name).exists():
                    (case / name).write_text(text)
            exp_dir = case / "expected"
            if exp_dir.is_dir():
                for f in exp_dir.iterdir():
                    if (tmp / f.name).exists():
                        shutil.copy(tmp / f.name, f)
        elif p.returncode != want_rc:
            failures.append(f"exit code {p.returncode}, expected {want_rc}")
        for name, text in (("stdout", out), ("stderr", err)):
            exp = case / f"expected.{name}"
            if exp.exists() and not update and exp.read_text() != text:
                failures.append(f"{name} differs from {exp.name}:\n--- got ---\n{text}--- expected ---\n{exp.read_text()}")
            chk = case / f"check.{name}"
            if chk.exists():
                msg = filecheck(text, chk.read_text(), name)
                if msg:
                    failures.append(msg)
        exp_dir = case / "expected"
        if exp_dir.is_dir() and not update:
            for f in sorted(exp_dir.iterdir()):
                got = tmp / f.name
                if not got.exists():
                    failures.append(f"missing output {f.name}")
                elif got.read_bytes() != f.read_bytes():
                    failures.append(f"output {f.name} differs from expected/{f.name} (diff {got} {f})")
        absent = case / "absent"
        if absent.exists():
            for name in absent.read_text().split():
                if (tmp / name).exists():
                    failures.append(f"{name} must not exist after the command")
        leftovers = [f.name for f in tmp.iterdir() if ".tmp." in f.name]
        if leftovers:
            failures.append(f"temp files left behind: {leftovers}")
        if failures:
            print(f"FAIL {case.name}\n$ {cmd}\n--- stdout ---\n{p.stdout}--- stderr ---\n{p.stderr}")
            print("\n".join(failures))
            return 1
        print(f"PASS {case.name}")
        return 0
    finally:
        if not os.environ.get("SPOPT_KEEP_TMP"):
            shutil.rmtree(tmp, ignore_errors=True)

if __name__ == "__main__":
    sys.exit(main())
