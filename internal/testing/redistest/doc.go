// Package redistest owns the throwaway redis-server processes that flowgate's
// tests run against: a single server from Start and a 3-primary Redis Cluster
// from StartCluster, each on free loopback ports in the test's temporary
// directory, without persistence, and killed and reaped in t.Cleanup.
//
// A Server can be crashed (Kill), brought back empty on the same port
// (Restart) and frozen to look like a slow Redis (Pause, Resume), so tests can
// drive the token server's failure policy against a real Redis.
//
// The redis-server binary comes from the REDIS_SERVER environment variable if
// set, otherwise from PATH. When it is missing the test is skipped, unless
// FLOWGATE_REQUIRE_REDIS=1, which turns the skip into a failure so CI cannot
// pass by silently skipping every Redis test.
//
// Free ports are picked by listening on 127.0.0.1:0 and closing; because
// another test binary may take the port before redis-server binds it, a start
// that loses that race is retried on a new port, and a server that answers on
// the port is accepted only if its INFO process_id is the process we started.
//
// The package supports Linux and other Unix systems (Pause and Resume send
// SIGSTOP and SIGCONT). On Linux the servers also get SIGKILL when the test
// binary dies, so a test timeout cannot leak them.
package redistest
