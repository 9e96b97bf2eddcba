#!/bin/sh
# Vets and tests each module of its own named on the command line (the
# framework adapters under contrib/), the way make test tests the core:
# -race, -count=1. Each module requires a released core version; the
# go.work at the root puts this tree in its place, so each tests against
# this tree (GOWORK is set to it, whatever the caller's). Every module runs
# even after one fails.
set -u
GO=${GO:-go}
GOWORK="$(cd "$(dirname "$0")/.." && pwd)/go.work"
export GOWORK
status=0
for m in "$@"; do
	echo "== $m"
	if ! (cd "$m" && $GO vet ./... && $GO test -race -count=1 -timeout 10m ./...); then
		echo "$m: failed" >&2
		status=1
	fi
done
exit $status
