#!/bin/sh
# Vets and tests each module of its own named on the command line (the
# framework adapters under contrib/), the way make test tests the core:
# -race, -count=1. Each module has a replace to the core, so it tests
# against this tree. Every module runs even after one fails.
set -u
GO=${GO:-go}
status=0
for m in "$@"; do
	echo "== $m"
	if ! (cd "$m" && $GO vet ./... && $GO test -race -count=1 -timeout 10m ./...); then
		echo "$m: failed" >&2
		status=1
	fi
done
exit $status
