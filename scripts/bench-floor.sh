#!/bin/sh
# The speed floor of the core (one rule, parallel, refusal, three levels,
# a million users), measured for two revisions in ONE interleaved run: the
# bench module's test binary is built at BASE and at the work tree, and the
# two run in turn, ROUNDS times, on the same machine, so that load and
# frequency changes hit both alike. Prints the medians per benchmark and the
# floor's ratios for each side.
#
#   sh scripts/bench-floor.sh                 # BASE defaults to HEAD~1
#   BASE=44a2d4f ROUNDS=6 sh scripts/bench-floor.sh
#
# The raw output and the table go to bench/floor.txt, the record of the run
# that bench/README quotes.
set -eu

GO=${GO:-go}
BASE=${BASE:-HEAD~1}
ROUNDS=${ROUNDS:-5}
BENCHTIME=${BENCHTIME:-500ms}
# Each family runs in a process of its own: a family's heap (a million
# users' limiters) must not set the next one's costs (a refusal's
# allocation then lands in cold memory: +60 ns seen). BENCH, when set, is
# one family.
BENCH=${BENCH:-'^BenchmarkFloorParts$ ^BenchmarkFloorEssentials$ ^(BenchmarkPeersPass|BenchmarkPeersPassParallel|BenchmarkPeersBlock)$ ^BenchmarkGrowthLevels$ ^BenchmarkGrowthUsers$'}

root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

git -C "$root" worktree add --detach "$tmp/base" "$BASE" >/dev/null 2>&1
(cd "$tmp/base/bench" && $GO test -c -o "$tmp/base.test" .)
(cd "$root/bench" && $GO test -c -o "$tmp/work.test" .)

out="$root/bench/floor.txt"
dirty=$(git -C "$root" diff --quiet && git -C "$root" diff --cached --quiet || echo +dirty) # before out is rewritten
{
	echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "# base: $(git -C "$root" rev-parse --short "$BASE")  work: $(git -C "$root" rev-parse --short HEAD)$dirty"
	echo "# rounds: $ROUNDS, benchtime $BENCHTIME, interleaved base/work"
	echo "# cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), nproc $(nproc)"
	echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out"
set -f # BENCH's families are split on spaces, never expanded as file names
i=0
while [ "$i" -lt "$ROUNDS" ]; do
	for side in base work; do
		for family in $BENCH; do
			"$tmp/$side.test" -test.run '^$' -test.bench "$family" -test.benchmem -test.benchtime "$BENCHTIME" 2>&1 |
				grep '^Benchmark' | sed "s/^/$side /" >>"$out"
		done
	done
	i=$((i + 1))
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out"

# Medians per side and benchmark, then the floor's ratios.
grep -v '^#' "$out" | awk '
{ side = $1; name = $2; sub(/-[0-9]+$/, "", name); ns = $4; allocs = 0
  for (i = 5; i <= NF; i++) if ($(i) == "allocs/op") allocs = $(i-1)
  key = side SUBSEP name; n[key]++; v[key, n[key]] = ns; a[key] = allocs; names[name] = 1 }
function median(key,   m, i, j, t, arr) {
  m = n[key]; for (i = 1; i <= m; i++) arr[i] = v[key, i]
  for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (arr[j] < arr[i]) { t = arr[i]; arr[i] = arr[j]; arr[j] = t }
  return (m % 2) ? arr[(m + 1) / 2] : (arr[m / 2] + arr[m / 2 + 1]) / 2 }
function spread(x, bench,   num, den, k, m, r, lo, hi) {
  num = x SUBSEP bench "/flowgate"; den = x SUBSEP bench "/xrate"
  m = n[num]; if (n[den] < m) m = n[den]
  if (m == 0) return "-"
  for (k = 1; k <= m; k++) { r = v[num, k] / v[den, k]
    if (k == 1 || r < lo) lo = r; if (k == 1 || r > hi) hi = r }
  return sprintf("%.2f-%.2f", lo, hi) }
END {
  printf "%-52s %10s %10s %8s %8s\n", "benchmark (median ns/op)", "base", "work", "allocs", "work/base"
  for (name in names) { b = median("base" SUBSEP name); w = median("work" SUBSEP name)
    printf "%-52s %10.1f %10.1f %8s %8.2f\n", name, b, w, a["work" SUBSEP name], (b > 0 ? w / b : 0); med[name, "base"] = b; med[name, "work"] = w }
  print ""
  printf "%-44s %8s %8s %8s\n", "floor", "base", "work", "bound"
  split("base work", sides, " ")
  for (s = 1; s <= 2; s++) { x = sides[s]
    r1[x] = med["BenchmarkPeersPass/flowgate", x] / med["BenchmarkPeersPass/xrate", x]
    r2[x] = med["BenchmarkPeersPassParallel/flowgate", x] / med["BenchmarkPeersPassParallel/xrate", x]
    r3[x] = med["BenchmarkPeersBlock/flowgate", x] / med["BenchmarkPeersBlock/xrate", x]
    r4[x] = med["BenchmarkGrowthLevels/ip+user+global/flowgate", x] / med["BenchmarkGrowthLevels/ip+user+global/xrate", x]
    r5[x] = med["BenchmarkGrowthUsers/1000000/flowgate", x] / med["BenchmarkGrowthUsers/1000/flowgate", x]
    d = med["BenchmarkPeersBlock/flowgate-decide", x]; r6[x] = (d > 0 ? d / med["BenchmarkPeersBlock/xrate", x] : 0) }
  printf "%-44s %8.2f %8.2f %8s\n", "one rule pass / x/time/rate Allow", r1["base"], r1["work"], "<= 1.0"
  printf "%-44s %8.2f %8.2f %8s\n", "parallel pass / parallel Allow", r2["base"], r2["work"], "<= 1.0"
  # The same two ratios round by round (the k-th run of each side against
  # the k-th of x/time/rate, minutes apart at most): the spread says how
  # far one median can be trusted.
  printf "%-44s %9s %9s\n", "  pass, each round (lowest-highest)", spread("base", "BenchmarkPeersPass"), spread("work", "BenchmarkPeersPass")
  printf "%-44s %9s %9s\n", "  parallel, each round (lowest-highest)", spread("base", "BenchmarkPeersPassParallel"), spread("work", "BenchmarkPeersPassParallel")
  printf "%-44s %8.2f %8.2f %8s\n", "refusal / refusing Allow", r3["base"], r3["work"], "<= 1.5"
  printf "%-44s %8.2f %8.2f %8s\n", "refusal by Decide / refusing Allow", r6["base"], r6["work"], "(0 allocs)"
  printf "%-44s %8.2f %8.2f %8s\n", "ip+user+global / three Allow", r4["base"], r4["work"], "<= 0.9"
  printf "%-44s %8.2f %8.2f %8s\n", "1 000 000 users / 1 000 users", r5["base"], r5["work"], "<= 2.5"
}' | tee -a "$out"
echo "bench-floor: raw output and table in bench/floor.txt"
