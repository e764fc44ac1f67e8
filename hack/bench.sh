#!/usr/bin/env bash
# make bench: every Go benchmark in the module (engine vs raw tofu ratio,
# routes batching, state index), one run, results on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/bin:$PATH"
pkgs=$(go list ./... | while read -r p; do
	d=$(go list -f '{{.Dir}}' "$p")
	grep -lq '^func Benchmark' "$d"/*_test.go 2>/dev/null && echo "$p"
done || true)
if [[ -z "$pkgs" ]]; then
	echo "no benchmarks yet"
	exit 0
fi
# shellcheck disable=SC2086
go test -run '^$' -bench . -benchmem -count=1 -timeout 30m $pkgs
