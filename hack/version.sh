#!/usr/bin/env bash
# Prints the version of the working tree (docs/releasing.md): `git describe
# --tags --always --dirty`, e.g. v0.1.0, v0.1.0-3-gabc1234, v0.1.0-dirty. A
# tree without a v* tag gets v0.0.0-g<sha>[-dirty] and a directory without git
# v0.0.0-unknown, so the result is always semver-shaped (the CCM's
# k8s.io/component-base parses it).
set -euo pipefail
v=$(git describe --tags --always --dirty --match 'v[0-9]*' 2>/dev/null || true)
case "$v" in
v[0-9]*) echo "$v" ;;
"") echo v0.0.0-unknown ;;
*) echo "v0.0.0-g$v" ;;
esac
