// Package hotpath holds the speed techniques of flowgate's hot paths, so
// that the code deciding a call reads plainly and the next algorithm can
// reuse them. Each one answers the same cost: on a multi-core machine a
// 64-byte cache line written by one core must move to another core before
// that core can write it, and a line read and then written moves twice.
// Under parallel calls those transfers, not the arithmetic, are what a pass
// costs. The helpers, and when to reach for one:
//
//   - LineAligned places a hot object so that its contended words start a
//     cache line, with nothing another object writes on that line. Use it
//     for state every core writes (a rule's global limiter), not for
//     per-key state, where memory per key matters more.
//   - Pad with a blank `_ [n]byte` field to a multiple of CacheLine where
//     the allocator lays many small objects side by side (pooled permits,
//     the shards of a table); a test pins each such size.
//   - LaneCount sizes per-core lanes: counters every call writes (passes,
//     completions) are split so calls on different cores write different
//     lines, and readers add the lanes up.
//   - LoadForWrite asks for a line exclusive (PREFETCHW) before reading it
//     for a compare-and-swap, so the line moves once, not twice; CAS128 and
//     Load128 update and read two words as one (CMPXCHG16B), so a state of
//     two numbers needs no lock. Pair16 finds the 16-byte aligned pair
//     CMPXCHG16B needs inside three words.
//   - StoreUnpublished32 is a plain store to an atomic word that no other
//     goroutine can see yet (an XCHG, a full fence on amd64, costs a sixth
//     of a pass).
//   - Divider divides by a fixed number with one multiplication.
//
// Four more cut instructions on one core rather than line transfers:
//
//   - Nanotime reads the runtime's monotonic clock without time.Since's
//     steps; clock.Real reads it, and the flow engine calls it directly.
//   - PerP keeps one spare object per P (pooled permits) for less than
//     sync.Pool costs, which stays as the fallback.
//   - AddrSlot picks a slot by a string's address, for a small table of
//     recent answers that spares a map lookup (the caller still compares
//     the content).
//   - StrHasher hashes a short key (a user ID, an IP address) in two
//     multiplications, where maphash.String goes through the runtime's
//     generic hash; the key tables hash every keyed call's key with it.
//
// And one hides a cache miss rather than a transfer:
//
//   - Prefetch starts loading a line and returns at once (PREFETCHT0;
//     nothing on other architectures). A plain load that misses holds up
//     every instruction after it once the processor's look-ahead is full,
//     so a call that reads one random line of a table of tens of megabytes
//     pays the whole memory latency even when nothing waits for the value
//     (bench's BenchmarkGrowthFloor, call+read); issued before other work,
//     a prefetch lets that work run while the line comes in. flow's plain
//     path prefetches a call's key index slot before it reads the clock,
//     once the key table's index is too large to stay in a core's caches.
//
// Nothing here decides anything; every helper is measured by the
// benchmarks of the package that uses it.
package hotpath
