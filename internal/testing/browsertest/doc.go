// Package browsertest starts a throwaway headless chromium for tests and
// drives it over the DevTools protocol (CDP), with a small websocket client
// of its own, so no test depends on a CDP library.
//
// A test that needs a browser calls Start: it skips with a clear message
// when chromium is missing, and fails instead under FLOWGATE_REQUIRE_BROWSER=1
// (make test sets it; scripts/deps.sh installs Debian's chromium). CHROMIUM
// names a binary explicitly.
package browsertest
