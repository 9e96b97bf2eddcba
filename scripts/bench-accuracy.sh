#!/bin/sh
# The distributed-accuracy table (bench/README.md, "Distributed accuracy"):
# runs TestAccuracyTable in the bench module against one throwaway
# redis-server, which writes bench/accuracy.txt, the pictures and the
# README's table. The grid can be cut down through the environment (see
# bench/accuracy_test.go), e.g.
#
#   ACC_NS=4,32 ACC_LOADS=1,2 ACC_CELL=3s sh scripts/bench-accuracy.sh
#
# The full grid is 3 algorithms x (4 settings + split) + redis_rate, 6 N,
# 3 shapes, 5 loads: 1 710 cells of ACC_CELL (4 s) each, about 2 hours;
# the default below (ACC_NS=1,4,16,32, loads 0.8,1,2,10, settings
# off,defaults,redis_rate,split) is 576 cells, about 40 minutes.
set -eu
GO=${GO:-go}
cd "$(dirname "$0")/../bench"
redis=${REDIS_SERVER:-$(command -v redis-server || true)}
if [ -z "$redis" ] || [ ! -x "$redis" ]; then
	echo "bench-accuracy: redis-server not found (run 'make deps' or set REDIS_SERVER)" >&2
	exit 1
fi
export ACC_NS=${ACC_NS:-1,4,16,32}
export ACC_LOADS=${ACC_LOADS:-0.8,1,2,10}
export ACC_SETTINGS=${ACC_SETTINGS:-off,defaults,redis_rate,split}
FLOWGATE_ACCURACY=1 FLOWGATE_REQUIRE_REDIS=1 REDIS_SERVER="$redis" \
	$GO test -count=1 -timeout 4h -run '^TestAccuracyTable$' -v . | grep -v '^        '
