# Sourced by the script tests that open pages in headless Chromium (not a test itself: *.bash is
# not globbed by tests/CMakeLists.txt). `browser_test NAME WHAT` sets $browser, or skips the test
# (exit 77) naming WHAT is left unchecked; it makes $work (removed at exit) and `fail MESSAGE`.
browser_test() {
  test_name=$1
  browser=""
  for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null; then browser=$(command -v "$b"); break; fi
  done
  if [ -z "$browser" ]; then
    echo "SKIP $test_name: Chromium is not installed (Debian: apt-get install chromium); $2"
    exit 77
  fi
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
}
fail() { echo "FAIL $test_name: $*"; exit 1; }
