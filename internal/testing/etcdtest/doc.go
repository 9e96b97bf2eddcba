// Package etcdtest owns the throwaway etcd processes that flowgate's tests
// run against: one single-member etcd per Start, on free loopback ports, with
// its data in the test's temporary directory, killed and reaped in t.Cleanup.
//
// A Server can be crashed (Kill) and brought back with its data on the same
// ports (Restart), so tests can check that a rules source survives an etcd
// outage and resumes where it stopped.
//
// The etcd binary comes from the ETCD_SERVER environment variable if set,
// otherwise from PATH or /usr/bin/etcd (Debian's etcd-server package). When it
// is missing the test is skipped, unless FLOWGATE_REQUIRE_ETCD=1, which turns
// the skip into a failure so CI cannot pass by skipping every etcd test.
package etcdtest
