#!/bin/sh
# Instructions per operation of the bench module's benchmarks, counted by
# valgrind's cachegrind: each benchmark runs at LOW and HIGH iterations
# and the difference is divided by HIGH-LOW, so setup and start-up cancel.
# Counts do not depend on the machine's load, unlike ns/op. Async
# preemption and the garbage collector are off (GOGC=off: the loops allocate
# nothing, and a collection of a big setup heap would land in one run only),
# and GOMAXPROCS=1: valgrind runs one thread at a time, and idle threads
# looking for work would add instructions in proportion to wall time.
#
#   sh scripts/bench-instructions.sh 'GrowthRules/1/flowgate' 'GrowthRules/1/xrate' ...
#   BIN=/tmp/old.test sh scripts/bench-instructions.sh ...   # a bench binary built before
#   PKG=flow sh scripts/bench-instructions.sh EntryExitAdaptive RateAllow   # another package's
set -eu
LOW=${LOW:-20000}
HIGH=${HIGH:-120000}
cd "$(dirname "$0")/../${PKG:-bench}"
bin=$(mktemp -d)/bench.test
if [ -n "${BIN:-}" ]; then
	cp "$BIN" "$bin"
else
	go test -c -o "$bin" .
fi
ir() { # benchmark, iterations -> total instructions
	GOMAXPROCS=1 GOGC=off GODEBUG=asyncpreemptoff=1 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
		"$bin" -test.run '^$' -test.bench "$(echo "Benchmark$1" | sed 's|+|\\+|g; s|[^/]*|^&$|g')" -test.benchtime "${2}x" 2>&1 |
		sed -n 's/.*I *refs: *//p' | tr -d ,
}
for b in "$@"; do
	lo=$(ir "$b" "$LOW")
	hi=$(ir "$b" "$HIGH")
	echo "$b $(( (hi - lo) / (HIGH - LOW) )) instructions/op"
done
rm -rf "$(dirname "$bin")"
