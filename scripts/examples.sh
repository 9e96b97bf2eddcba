#!/bin/sh
# Builds every example and runs each short-lived one with a time limit, so an
# example that stops compiling or starts failing breaks `make test`.
# An example runs when its folder has a main package; its arguments come from
# the table below (examples absent from it run with none).
set -eu
GO=${GO:-go}
LIMIT=${EXAMPLE_TIMEOUT:-90}

args_for() {
	case "$1" in
	http) echo "-selftest" ;;
	demo) echo "-duration 6s -plain" ;;
	*) echo "" ;;
	esac
}

$GO build -o /dev/null ./examples/... || exit 1
status=0
for dir in examples/*/; do
	name=$(basename "$dir")
	ls "$dir"*.go >/dev/null 2>&1 || continue # data-only folders (rules, grafana)
	grep -qs '^package main' "$dir"*.go || continue
	echo "== examples/$name"
	# shellcheck disable=SC2046
	if ! timeout "$LIMIT" $GO run "./examples/$name" $(args_for "$name") >"/tmp/flowgate-example-$name.log" 2>&1; then
		echo "examples/$name failed; its output:" >&2
		tail -40 "/tmp/flowgate-example-$name.log" >&2
		status=1
	else
		tail -3 "/tmp/flowgate-example-$name.log"
	fi
done
exit $status
