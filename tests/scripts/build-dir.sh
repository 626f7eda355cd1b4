#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# An absolute build folder must work wherever a relative one does: the
# scripts that run programs in the test bed's guests once prefixed
# RDMASTREAM_BUILD_DIR with $PWD, so an absolute folder named nothing there
# (exit 127). Checks scripts/build-dir.sh, which they all use now, and that
# no script reads the variable by itself again.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
source scripts/build-dir.sh
fail=0
expect() { # WANT GOT WHAT
  if [[ $1 != "$2" ]]; then echo "FAIL: $3: got '$2', want '$1'"; fail=1; fi
}
expect /proj/build "$(unset RDMASTREAM_BUILD_DIR; rdmastream_build_dir /proj)" "default"
expect /proj/b2 "$(RDMASTREAM_BUILD_DIR=b2 rdmastream_build_dir /proj)" "relative"
expect /proj/x/b "$(RDMASTREAM_BUILD_DIR=./x//b/ rdmastream_build_dir /proj)" "relative, untidy"
expect /abs/path "$(RDMASTREAM_BUILD_DIR=/abs/path rdmastream_build_dir /proj)" "absolute"
expect /abs/path "$(RDMASTREAM_BUILD_DIR=/abs/path/ rdmastream_build_dir /proj)" "absolute, trailing /"
expect "$PWD/build" "$(unset RDMASTREAM_BUILD_DIR; rdmastream_build_dir)" "no root: the current folder"
expect /proj/build-asan "$(rdmastream_build_dir /proj '' build-asan)" "another variable, unset"
expect /a/s "$(rdmastream_build_dir /proj /a/s build-asan)" "another variable, absolute"
# Who reads the variable: only these may (cmake -B and ctest --test-dir
# take either form from the project's root, where those scripts run).
allowed='^(scripts/build-dir\.sh|scripts/build\.sh|scripts/test\.sh)$'
while IFS= read -r f; do
  [[ $f =~ $allowed ]] && continue
  if grep -nE '\$\{RDMASTREAM_(SANITIZE_)?BUILD_DIR[:}-]' "$f" | grep -v '^[0-9]*: *#' | grep -v 'rdmastream_build_dir'; then
    echo "FAIL: $f reads the build folder variable itself: use rdmastream_build_dir (scripts/build-dir.sh)"
    fail=1
  fi
done < <(git ls-files --cached --others --exclude-standard -- '*.sh' scripts/softroce/rdmabed 2>/dev/null || find scripts bench tests -name '*.sh')
# ... and a script's own helpers must get the absolute folder, never "$PWD/$build" again.
if git grep --untracked -nE '(\$PWD|\$root)/\$\{?build\b' -- '*.sh' ':!tests/scripts/build-dir.sh' 2>/dev/null; then
  echo "FAIL: a path built as \$PWD/\$build or \$root/\$build breaks with an absolute build folder"
  fail=1
fi
((fail == 0)) && echo "build-dir: ok"
exit "$fail"
