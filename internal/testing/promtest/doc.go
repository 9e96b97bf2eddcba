// Package promtest owns the throwaway Prometheus servers that flowgate's
// tests run against: Start writes a configuration that scrapes the given
// targets and loads the given rule files, starts prometheus on a free
// loopback port with its storage in the test's temporary directory, waits
// until it is ready, and kills and reaps it in t.Cleanup.
//
// The prometheus binary comes from the PROMETHEUS environment variable if
// set, otherwise from PATH (Debian's package "prometheus", which make test
// installs). When it is missing the test is skipped, unless
// FLOWGATE_REQUIRE_PROMETHEUS=1, which turns the skip into a failure so CI
// cannot pass by silently skipping.
//
// Query and Alerts read Prometheus's HTTP API (/api/v1/query,
// /api/v1/alerts) the way a dashboard or a person with curl would.
package promtest
