#!/bin/sh
# Installs what flowgate's tests need when it is missing: redis-server (with
# redis-cli), etcd (Debian's etcd-server) and, where the distribution has it,
# promtool. It uses apt-get when we are root and says what to do otherwise.
# It never fails the build for promtool, which only adds a check.
set -u

need=""
command -v redis-server >/dev/null 2>&1 || need="$need redis-server"
command -v redis-cli >/dev/null 2>&1 || need="$need redis-tools"
command -v etcd >/dev/null 2>&1 || [ -x /usr/bin/etcd ] || need="$need etcd-server"
command -v promtool >/dev/null 2>&1 || want_promtool=1

if [ -z "$need" ] && [ -z "${want_promtool:-}" ]; then
	exit 0
fi

if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
	if [ -n "$need" ]; then
		echo "flowgate: missing:$need. Install it (e.g. 'sudo apt-get install$need')," >&2
		echo "flowgate: or the Redis and etcd tests will fail under FLOWGATE_REQUIRE_REDIS=1 / FLOWGATE_REQUIRE_ETCD=1." >&2
	fi
	exit 0
fi

export DEBIAN_FRONTEND=noninteractive
echo "flowgate: installing:${need}${want_promtool:+ prometheus(promtool)}"
apt-get update -qq >/dev/null 2>&1 || true
if [ -n "$need" ]; then
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $need >/dev/null || {
		echo "flowgate: apt-get install$need failed" >&2
		exit 1
	}
fi
if [ -n "${want_promtool:-}" ]; then
	apt-get install -y -qq --no-install-recommends prometheus >/dev/null 2>&1 ||
		echo "flowgate: promtool not installed (package prometheus); alert-rule checks will be skipped" >&2
fi
# A package install may start the service; our tests start their own servers.
if command -v service >/dev/null 2>&1; then
	service redis-server stop >/dev/null 2>&1 || true
	service etcd stop >/dev/null 2>&1 || true
fi
exit 0
