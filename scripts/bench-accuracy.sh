#!/bin/sh
# The distributed-accuracy table (bench/README.md, "Distributed accuracy"):
# runs TestAccuracyTable in the bench module against one throwaway
# redis-server; the run writes bench/accuracy.txt (every cell), the
# pictures and the README's table, and this script prints the table.
#
# The full grid (accGrid in bench/accuracy_test.go) is 625 cells of 3 s
# (and 3 as separate processes), about 32 minutes on 2 cores (a 217-cell
# subset took 664 s). A quick run takes a subset through the
# environment (comma-separated; each left unset means all), e.g.
#
#   ACC_ALGOS=token_bucket ACC_NS=4,32 ACC_LOADS=1,10 ACC_SETTINGS=off,defaults sh scripts/bench-accuracy.sh
#
# ACC_SHAPES (even,skewed,moving), ACC_CELL (3s) and ACC_PROCS (4: the N
# whose skewed 2x leasing-defaults cell is run again as separate OS
# processes; 0: none) work the same way. A subset run rewrites the table
# with only its cells (its first line says so): run the full grid before
# committing it. To redraw table and pictures from accuracy.txt without
# running (after a change to how they are drawn):
#
#   cd bench && FLOWGATE_ACCURACY_RENDER=1 go test -run '^TestAccuracyRender$' .
set -eu
GO=${GO:-go}
cd "$(dirname "$0")/../bench"
redis=${REDIS_SERVER:-$(command -v redis-server || true)}
if [ -z "$redis" ] || [ ! -x "$redis" ]; then
	echo "bench-accuracy: redis-server not found (run 'make deps' or set REDIS_SERVER)" >&2
	exit 1
fi
rc=$(mktemp)
trap 'rm -f "$rc"' EXIT
start=$(date +%s)
# -v shows each cell as it ends (go test's indented continuation lines
# are dropped); sh has no pipefail, so the status goes through a file.
{
	FLOWGATE_ACCURACY=1 FLOWGATE_REQUIRE_REDIS=1 REDIS_SERVER="$redis" \
		$GO test -count=1 -timeout 2h -run '^TestAccuracyTable$' -v . 2>&1
	echo $? >"$rc"
} | grep -v '^        '
if [ "$(cat "$rc")" != 0 ]; then
	echo "bench-accuracy: the run failed" >&2
	exit 1
fi
echo
sed -n '/<!-- accuracy:start -->/,/<!-- accuracy:end -->/p' README.md
echo "bench-accuracy: $(($(date +%s) - start)) s; table and pictures written to bench/README.md"
