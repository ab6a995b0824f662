#!/usr/bin/env python3
"""Reads a ctest JUnit report and sorts its failed tests: prints an anchored ctest -R regex
matching the tests whose only fault is LeakSanitizer's own tracer crashing at exit
("Tracer caught signal 11 ... LeakSanitizer has encountered a fatal error", an intermittent
bug of LSan's stop-the-world, google/sanitizers#1353), and exits 1 if any other test failed.
scripts/sanitizers.sh reruns the printed tests; a real leak, sanitizer report or test failure
is never retried."""
import re
import sys
import xml.etree.ElementTree as ET

TRACER = "LeakSanitizer has encountered a fatal error"
REAL = ("[  FAILED  ]", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
        "SUMMARY: ")


def failed_cases(report):
    for case in ET.parse(report).getroot().iter("testcase"):
        if case.get("status") in ("fail", "failed") or case.find("failure") is not None:
            out = "".join(e.text or "" for e in case.iter() if e.tag in ("system-out", "failure"))
            yield case.get("name"), out


def main(report):
    tracer_only, other = [], []
    for name, out in failed_cases(report):
        only = TRACER in out and not any(r in out for r in REAL)
        (tracer_only if only else other).append(name)
    for name in other:
        print(f"failed: {name}", file=sys.stderr)
    for name in tracer_only:
        print(f"LSan tracer crash only, to rerun: {name}", file=sys.stderr)
    if other:
        return 1
    if tracer_only:
        print("^(" + "|".join(re.escape(n) for n in tracer_only) + ")$")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
