#!/usr/bin/env bash
# .ci/check-files.test.sh: runs .ci/check-files on a scratch repository:
# clean passes; a planted binary, a planted 1.1 MiB text file and an
# oversized file in a subdirectory each fail; declared in
# .ci/fixtures.txt they pass.
set -euo pipefail

check=$(cd "$(dirname "$0")" && pwd)/check-files
repo=$(mktemp -d)
trap 'rm -rf "$repo"' EXIT
cd "$repo"
git init -q .
mkdir -p .ci sub
echo 'package x' >x.go
git add x.go

fail() {
	printf 'check-files.test: %s\n' "$*" >&2
	exit 1
}
expect_pass() { "$check" 2>/dev/null || fail "$1: want pass, got fail"; }
expect_fail() {
	local out
	if out=$("$check" 2>&1); then
		fail "$1: want fail, got pass"
	fi
	case "$out" in *"$2"*) ;; *) fail "$1: output lacks $2: $out" ;; esac
}

expect_pass "clean"

printf 'ELF\0\0\1binary' >tool
git add tool
expect_fail "planted binary" "tool: binary file"
echo 'tool' >.ci/fixtures.txt
expect_pass "declared binary"

head -c 1153434 /dev/zero | tr '\0' 'a' >sub/big.json
git add sub/big.json
expect_fail "planted large file" "sub/big.json: 1153434 bytes"
printf '# fixtures\ntool\nsub/big.json  # a large fixture\n' >.ci/fixtures.txt
expect_pass "declared large file"

echo 'check-files.test: ok'
