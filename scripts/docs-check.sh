#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The documentation, checked as make test checks code:
#   1. Documentation/ builds with Sphinx (Debian's python3-sphinx, the
#      kernel's renderer) with warnings as errors: a broken :doc: or :ref:
#      link, a page in no toctree, or malformed reStructuredText fails;
#   2. facts have one source: README.md and Documentation/*.rst state no
#      test count (the runners print them) and no time taken by the kernel
#      build, CI, make test or a test suite, except on the one page that
#      holds those times, dated, with the command that measured them
#      (Documentation/timings.rst); other pages link to it.
# Prints "docs: PASS|FAIL what" per check and ends with
# "docs: N passed, N failed".
#
#   scripts/docs-check.sh [OUTDIR]    (the HTML goes to OUTDIR, default a
#                                      temporary directory)
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/kernel-common.sh
. "$ROOT/scripts/kernel-common.sh"

out=${1:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -n "$out" ] || out=$tmp/html

if ! command -v sphinx-build >/dev/null; then
	verdict docs FAIL "sphinx_build: sphinx-build missing (apt-get install python3-sphinx; scripts/setup.sh installs it)"
elif sphinx-build -q -E -W --keep-going -b html "$ROOT/Documentation" "$out" >"$tmp/sphinx.log" 2>&1; then
	verdict docs PASS "sphinx_build: Documentation/ builds with warnings as errors"
else
	sed 's/^/  /' "$tmp/sphinx.log"
	verdict docs FAIL "sphinx_build: $(grep -c -E 'WARNING|ERROR' "$tmp/sphinx.log") warning(s) or error(s)"
fi

# facts: the pages as paragraphs (lines joined, so that a fact wrapped over
# two lines is still seen), each tagged with its page and first line.
python3 - "$ROOT" >"$tmp/facts" <<'PY'
import pathlib, re, sys

root = pathlib.Path(sys.argv[1])
pages = [root / "README.md"] + sorted((root / "Documentation").glob("*.rst"))
# The one page that may state the times below.
home = root / "Documentation" / "timings.rst"

# A count of tests: "117 tests", "41 guest tests", "guest: 48 passed",
# "total: 75 passed", a TAP plan "1..60", a runner's "[11/44]", "the
# 54th of 64".
count = re.compile(
    r"\b\d+ (?:guest |host |cargo |misuse |unit )?tests?\b"
    r"|\b(?:total|guest|pair|cargo test|test-all|misuse[\w-]*|install-test): \d+ passed"
    r"|^\s*1\.\.\d+\s*$"
    r"|\[\d+/\d+\]"
    r"|\b\d+(?:st|nd|rd|th) (?:test )?of \d+\b",
    re.M)
# A duration near what this project times: the kernel build, CI, make
# test, a suite (within 80 characters, either side).
subject = (r"(?:kernel build|builds? (?:the |a |its )?(?:main |debug |whole )?kernel"
           r"|\bCI\b|make test|\.ci/run|(?:guest|two-host|debug|main|whole) suite)")
duration = r"\b\d+(?:[.,]\d+)? ?(?:s|min|minutes|seconds|hours?)\b"
timed = re.compile(rf"{subject}.{{0,80}}?{duration}|{duration}.{{0,80}}?{subject}", re.I)

bad = 0
for page in pages:
    if not page.exists():
        continue
    rel = page.relative_to(root)
    lines = page.read_text().split("\n")
    para, start = [], 0
    for i, line in enumerate(lines + [""], 1):
        if line.strip():
            if not para:
                start = i
            para.append(line.strip())
            continue
        if para:
            text = " ".join(para)
            for m in count.finditer("\n".join(para)):
                print(f"{rel}:{start}: a test count ({m.group(0).strip()!r}): the runners print counts; state none")
                bad += 1
            if page != home:
                for m in timed.finditer(text):
                    print(f"{rel}:{start}: a time ({m.group(0)!r}): times live in Documentation/timings.rst; link to it")
                    bad += 1
        para = []
sys.exit(1 if bad else 0)
PY
if [ $? = 0 ]; then
	verdict docs PASS "facts_one_source: no test count, and times of builds, CI and suites only in Documentation/timings.rst"
else
	sed 's/^/  /' "$tmp/facts"
	verdict docs FAIL "facts_one_source: $(wc -l <"$tmp/facts") fact(s) stated outside their one place"
fi
verdicts_end docs
