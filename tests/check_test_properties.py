"""CTest guard: every registered test fails on a nonzero exit status.

  python3 tests/check_test_properties.py CTEST BUILD_DIR

Lists the build's tests (`ctest --show-only=json-v1`) and fails, naming them, if any has a
property that lets it pass whatever its exit status says:
  PASS_REGULAR_EXPRESSION  CTest then judges the output alone (a crash after the PASS line, a
                           sanitizer abort at exit, still passes);
  WILL_FAIL                every failure passes, a crash included.
A test that must print a line, or must be refused, runs through tests/expect_output.sh, which
checks the exit status and the output together.
"""

import json
import subprocess
import sys

REFUSED = {
    "PASS_REGULAR_EXPRESSION": "CTest ignores the exit status: run it through tests/expect_output.sh REGEX -- CMD",
    "WILL_FAIL": "any failure passes, a crash included: use tests/expect_output.sh --fail REGEX -- CMD",
}


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check_test_properties.py CTEST BUILD_DIR")
    ctest, build = sys.argv[1:]
    listing = subprocess.run([ctest, "--show-only=json-v1", "--test-dir", build], check=True,
                             capture_output=True, text=True).stdout
    tests = json.loads(listing)["tests"]
    if len(tests) < 2:
        sys.exit(f"check_test_properties.py: ctest lists {len(tests)} tests in {build}: nothing to check")
    bad = [f"{t['name']}: {p['name']} ({REFUSED[p['name']]})"
           for t in tests for p in t.get("properties", []) if p["name"] in REFUSED and p.get("value") not in (False, "0", "OFF")]
    for line in bad:
        print("FAIL:", line)
    print(f"{len(tests)} tests listed, {len(bad)} that could pass with a nonzero exit status")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
