#!/bin/sh
# Runs every benchmark of the bench/ module (flowgate against x/time/rate,
# uber-go/ratelimit and redis_rate, and the cluster comparison) in ONE
# `go test` run, saves the raw output with the machine it ran on to
# bench/results.txt, and regenerates the table in bench/README.md from that
# file, so the README's figures are this run's.
#
#   sh scripts/bench-peers.sh            # or: make bench-peers
#   COUNT=5 BENCHTIME=2s sh scripts/bench-peers.sh
#
# Needs redis-server on PATH (or REDIS_SERVER): the Redis benchmarks start
# their own throwaway server, and fail rather than skip without one.
set -eu

GO=${GO:-go}
COUNT=${COUNT:-5}
BENCHTIME=${BENCHTIME:-1s}
BENCH=${BENCH:-.}

cd "$(dirname "$0")/../bench"

redis=${REDIS_SERVER:-$(command -v redis-server || true)}
if [ -z "$redis" ] || [ ! -x "$redis" ]; then
	echo "bench-peers: redis-server not found (run 'make deps' or set REDIS_SERVER)" >&2
	exit 1
fi

tmp=results.txt.tmp
{
	echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "# command: cd bench && go test -run '^\$' -bench '$BENCH' -benchmem -count $COUNT -benchtime $BENCHTIME"
	echo "# nproc: $(nproc)"
	echo "# cpu model: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
	echo "# memory: $(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
	echo "# kernel: $(uname -sr)"
	echo "# go: $($GO env GOVERSION) $($GO env GOOS)/$($GO env GOARCH)"
	echo "# redis-server: $("$redis" --version | sed 's/^Redis server //')"
	echo "# load average before (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$tmp"

start=$(date +%s)
status=0
FLOWGATE_REQUIRE_REDIS=1 REDIS_SERVER="$redis" \
	$GO test -run '^$' -bench "$BENCH" -benchmem -count "$COUNT" -benchtime "$BENCHTIME" -timeout 30m . \
	2>&1 | tee -a "$tmp" || status=$?
# tee hides go test's status; a failed run shows FAIL in its output.
if grep -q '^FAIL' "$tmp" || [ "$status" -ne 0 ]; then
	echo "bench-peers: the run failed; raw output kept in bench/$tmp, README unchanged" >&2
	exit 1
fi
{
	echo "# load average after (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "# wall time: $(($(date +%s) - start)) s"
} >>"$tmp"
mv "$tmp" results.txt

$GO run ./cmd/benchtable -in results.txt -readme README.md
echo "bench-peers: wrote bench/results.txt and the table in bench/README.md"
