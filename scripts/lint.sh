#!/bin/sh
# The checks of `make lint`: gofmt has nothing to change in any Go file of
# the repository, and go vet and staticcheck find nothing in the core
# module and in each module of its own named on the command line (bench,
# contrib/gin, ...; the go.work at the root puts this tree in place of the
# core version each requires, so each is checked against this tree). The
# core is checked without the workspace (GOWORK=off): as a user builds it,
# and ./... then names its packages alone. Every module is checked even
# after one fails.
#
#   sh scripts/lint.sh bench contrib/gin    # or: make lint
#
# staticcheck is pinned (STATICCHECK_VERSION, a version that knows the Go
# release go.mod names) and installed into a temporary GOBIN, never into a
# go.mod. STATICCHECK=/path/to/staticcheck uses a binary already installed
# instead, provided it is the pinned version. Checks left out are listed,
# each with its reason, in staticcheck.conf.
set -u

GO=${GO:-go}
# staticcheck 2026.2.2 (Go 1.26 is supported since 2026.1, v0.7.0).
STATICCHECK_VERSION=${STATICCHECK_VERSION:-v0.8.2}

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
status=0

# gofmt from the toolchain that builds the code, not whichever is on PATH.
gofmt="$("$GO" env GOROOT)/bin/gofmt"
files=$(git ls-files '*.go' 2>/dev/null) || files=$(find . -name '*.go' -not -path './.git/*')
echo "== gofmt"
# shellcheck disable=SC2086
out=$("$gofmt" -l $files)
if [ -n "$out" ]; then
	echo "gofmt would change:"
	echo "$out"
	status=1
fi

sc=${STATICCHECK:-}
if [ -z "$sc" ]; then
	bin=$(mktemp -d)
	trap 'rm -rf "$bin"' EXIT
	# Outside the module, so go install does not touch go.mod.
	if ! (cd "$bin" && GOBIN="$bin" "$GO" install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"); then
		echo "lint: cannot install staticcheck $STATICCHECK_VERSION" >&2
		exit 1
	fi
	sc="$bin/staticcheck"
fi
have=$("$sc" -version)
case "$have" in
*"(${STATICCHECK_VERSION#v})"*) ;;
*)
	echo "lint: $sc is \"$have\", want staticcheck $STATICCHECK_VERSION" >&2
	exit 1
	;;
esac

for m in . "$@"; do
	echo "== go vet, $have: $m"
	work="$root/go.work"
	[ "$m" = . ] && work=off
	if ! (cd "$m" && GOWORK=$work "$GO" vet ./... && GOWORK=$work "$sc" ./...); then
		echo "lint: $m: failed" >&2
		status=1
	fi
done
exit $status
