#!/bin/sh
# Installs what flowgate's tests need when it is missing: redis-server (with
# redis-cli), prometheus (Debian's package, which also brings promtool),
# etcd (Debian's etcd-server) and chromium (the admin console's browser test
# drives it headless).
# It uses apt-get when we are root and says what to do otherwise; the tests
# that need a missing one then fail under make test (FLOWGATE_REQUIRE_*).
set -u

need=""
command -v redis-server >/dev/null 2>&1 || need="$need redis-server"
command -v redis-cli >/dev/null 2>&1 || need="$need redis-tools"
if ! command -v prometheus >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1; then
	need="$need prometheus"
fi
command -v etcd >/dev/null 2>&1 || [ -x /usr/bin/etcd ] || need="$need etcd-server"

if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1 && [ -z "${CHROMIUM:-}" ]; then
	need="$need chromium"
fi

if [ -z "$need" ]; then
	exit 0
fi

if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "flowgate: missing:$need. Install it (e.g. 'sudo apt-get install$need')," >&2
	echo "flowgate: or the tests that need it will fail under FLOWGATE_REQUIRE_REDIS=1 / FLOWGATE_REQUIRE_PROMETHEUS=1 / FLOWGATE_REQUIRE_ETCD=1 / FLOWGATE_REQUIRE_BROWSER=1." >&2
	exit 0
fi

export DEBIAN_FRONTEND=noninteractive
echo "flowgate: installing:$need"
apt-get update -qq >/dev/null 2>&1 || true
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $need >/dev/null || {
	echo "flowgate: apt-get install$need failed" >&2
	exit 1
}
# A package install may start the services; our tests start their own.
if command -v service >/dev/null 2>&1; then
	service redis-server stop >/dev/null 2>&1 || true
	service prometheus stop >/dev/null 2>&1 || true
	service etcd stop >/dev/null 2>&1 || true
fi
exit 0
