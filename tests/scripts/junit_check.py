#!/usr/bin/env python3
"""Checks a JUnit XML report against the rules of the schema Jenkins' JUnit plugin reads
(junit-10.xsd, the one GitLab and the GitHub test-report actions follow too): no Debian package
ships that schema, so its rules are written out here with Python's xml module.
  junit_check.py REPORT.xml     exit 0 and "ok: ..." when it conforms, else 1 and the first problem"""
import sys
import xml.etree.ElementTree as ET

def fail(msg):
    print("junit_check: " + msg)
    sys.exit(1)

def number(el, attr, kind, required=False):
    v = el.get(attr)
    if v is None:
        if required: fail("<%s> needs attribute %s" % (el.tag, attr))
        return None
    try:
        x = kind(v)
    except ValueError:
        fail("<%s %s=%r> is not a %s" % (el.tag, attr, v, kind.__name__))
    if x < 0: fail("<%s %s=%r> is negative" % (el.tag, attr, v))
    return x

SUITE_ATTRS = {"name", "tests", "failures", "errors", "skipped", "disabled", "time", "timestamp", "hostname", "id", "package", "file", "log", "url", "version", "group"}
CASE_ATTRS = {"name", "classname", "time", "status", "assertions", "file", "line", "group", "url"}
CASE_CHILDREN = {"skipped", "error", "failure", "system-out", "system-err"}

def check_suite(s):
    if s.tag != "testsuite": fail("expected <testsuite>, got <%s>" % s.tag)
    if not s.get("name"): fail("<testsuite> needs a name")
    for a in s.attrib:
        if a not in SUITE_ATTRS: fail("<testsuite> has unknown attribute %s" % a)
    tests = number(s, "tests", int, True)
    failures, errors, skipped = (number(s, a, int) for a in ("failures", "errors", "skipped"))
    number(s, "time", float)
    cases = [c for c in s if c.tag == "testcase"]
    for c in s:
        if c.tag not in ("testcase", "testsuite", "properties", "system-out", "system-err"):
            fail("<testsuite> may not hold <%s>" % c.tag)
    n_fail = n_err = n_skip = 0
    for c in cases:
        if not c.get("name"): fail("<testcase> needs a name")
        for a in c.attrib:
            if a not in CASE_ATTRS: fail("<testcase> has unknown attribute %s" % a)
        number(c, "time", float)
        for k in c:
            if k.tag not in CASE_CHILDREN: fail("<testcase> may not hold <%s>" % k.tag)
            if k.tag in ("failure", "error"):
                for a in k.attrib:
                    if a not in ("message", "type"): fail("<%s> has unknown attribute %s" % (k.tag, a))
        n_fail += sum(k.tag == "failure" for k in c)
        n_err += sum(k.tag == "error" for k in c)
        n_skip += sum(k.tag == "skipped" for k in c)
    if tests != len(cases): fail("testsuite %r: tests=%d but %d <testcase>" % (s.get("name"), tests, len(cases)))
    for attr, want in (("failures", n_fail), ("errors", n_err), ("skipped", n_skip)):
        got = {"failures": failures, "errors": errors, "skipped": skipped}[attr]
        if got is not None and got != want: fail("testsuite %r: %s=%d but %d found" % (s.get("name"), attr, got, want))
    return len(cases), n_fail

try:
    root = ET.parse(sys.argv[1]).getroot()
except ET.ParseError as e:
    fail("not well-formed XML: %s" % e)
suites = [root] if root.tag == "testsuite" else list(root)
if root.tag not in ("testsuite", "testsuites"): fail("root must be <testsuites> or <testsuite>, not <%s>" % root.tag)
total = failed = 0
for s in suites:
    t, f = check_suite(s)
    total, failed = total + t, failed + f
if root.tag == "testsuites":
    if number(root, "tests", int) not in (None, total): fail("<testsuites tests> differs from the testcases")
    if number(root, "failures", int) not in (None, failed): fail("<testsuites failures> differs from the failures")
print("ok: %d suites, %d testcases, %d failures" % (len(suites), total, failed))
