#!/bin/sh
# The walk of one flow.Entry and Exit: which files and functions of the
# module the call runs through, for a resource with one token_bucket rule,
# or with WALK_LEVELS=1 an IP, a user and a global rule. It runs one test
# twice under -covermode=count, without the call and with it, and lists
# the blocks whose count grew (scripts/walk).
#
#   sh scripts/walk.sh                 # this tree
#   sh scripts/walk.sh /path/to/tree   # another checkout of the module
set -eu
# The walk is of the core module alone, whatever go.work ties to it.
export GOWORK=off
GO=${GO:-go}
here=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-$here}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; rm -f "$root/flow/zz_walk_test.go"' EXIT
cp "$here/scripts/walk/walk_test.go.txt" "$root/flow/zz_walk_test.go"
(cd "$here" && $GO build -o "$tmp/walk" ./scripts/walk)
cd "$root"
pkgs=$($GO list ./... | grep -v '/examples/\|/cmd/\|/internal/testing/\|/scripts/' | tr '\n' ',' | sed 's/,$//')
WALK_CALLS=0 $GO test -count=1 -run '^TestWalk$' -covermode=count -coverpkg="$pkgs" -coverprofile="$tmp/a.out" ./flow >/dev/null 2>&1
$GO test -count=1 -run '^TestWalk$' -covermode=count -coverpkg="$pkgs" -coverprofile="$tmp/b.out" ./flow >/dev/null 2>&1
"$tmp/walk" "$tmp/a.out" "$tmp/b.out" "$root" "$($GO list -m)"
