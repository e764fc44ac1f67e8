#!/usr/bin/env bash
# What tests leave behind: network namespaces, processes and veth links of
# local clouds, control planes and CCMs. `snapshot FILE` records what is
# there now; `check FILE` fails listing everything that appeared since and
# is still there (make test runs it after the tests, so a test that does not
# clean up on success, failure or timeout fails the run).
set -euo pipefail

list() {
	# Network namespaces of local clouds (tests: t…, lc…; demo: dm…).
	ip netns list 2>/dev/null | awk '{print "netns " $1}' | grep -E '^netns (t[0-9a-f]{5}|lc[0-9a-f]{5}|dm[0-9]+)' || true
	# Processes started from test directories or the e2e binary dir:
	# etcd, kube-apiserver, the CCM, HAProxy of a local cloud, tofu.
	ps -eo pid=,args= | grep -E '/tmp/(Test|tfccm-e2e-bin|go-build)|tfccm-local|haproxy .*/tmp/' |
		grep -vE 'grep -E|leftovers.sh|go test|\.test( |$)' |
		awk '{pid=$1; $1=""; print "process" $0}' || true
	# HAProxy of a local cloud whose namespace is gone (it would keep a VIP's
	# frontend alive where nothing can reach or stop it).
	local hostns named pid ns
	hostns=$(readlink /proc/1/ns/net 2>/dev/null || true)
	named=$(for n in $(ip netns list 2>/dev/null | awk '{print $1}'); do stat -Lc 'net:[%i]' "/run/netns/$n" 2>/dev/null; done)
	for pid in $(pgrep -x haproxy 2>/dev/null); do
		ns=$(readlink "/proc/$pid/ns/net" 2>/dev/null) || continue
		if [[ $ns != "$hostns" ]] && ! grep -qxF "$ns" <<<"$named"; then
			echo "process haproxy in a deleted network namespace ($ns)"
		fi
	done
	# Host-side veth links of local clouds.
	ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 |
		grep -E '^(t[0-9a-f]{5}|lc[0-9a-f]{5}|dm[0-9]+)' | sed 's/^/link /' || true
}

case "${1:-}" in
snapshot)
	list | sort -u >"$2"
	;;
check)
	before=$2
	[[ -f $before ]] || : >"$before"
	# Cleanups can take a moment after the last test binary exits.
	for _ in 1 2 3 4 5 6; do
		new=$(comm -13 "$before" <(list | sort -u))
		[[ -z $new ]] && exit 0
		sleep 5
	done
	echo "make test left these behind (a test does not clean up after itself):" >&2
	echo "$new" >&2
	exit 1
	;;
*)
	echo "usage: $0 snapshot FILE | check FILE" >&2
	exit 2
	;;
esac
