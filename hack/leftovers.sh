#!/usr/bin/env bash
# What tests leave behind: network namespaces, processes and veth links of
# local clouds, control planes and CCMs, cgroups of real nodes (the nodes'
# mounts live in their own mount namespaces and go with their processes). `snapshot FILE` records what is
# there now; `check FILE` fails listing everything that appeared since and
# is still there (make test runs it after the tests, so a test that does not
# clean up on success, failure or timeout fails the run). `clean` removes
# what `list` finds now (make clean-leftovers: after a test run killed by
# hand, before the next one).
set -euo pipefail

# owner_alive NAME: whether the test process a local cloud's name (its
# prefix, then "-…") was made from is still running (its cloud is then not
# left over, yet): t and lc prefixes carry the PID in their first 5 hex
# digits (t… adds a sequence digit or two), dm ones in decimal.
owner_alive() {
	local p=$1 pid
	if [[ $p =~ ^t([0-9a-f]{5}) ]]; then
		pid=$((16#${BASH_REMATCH[1]}))
	elif [[ $p =~ ^lc([0-9a-f]{5}) ]]; then
		pid=$((16#${BASH_REMATCH[1]}))
	elif [[ $p =~ ^dm([0-9]+) ]]; then
		pid=${BASH_REMATCH[1]}
	else
		return 1
	fi
	[[ -d /proc/$pid ]]
}

list() {
	# Network namespaces and host links of local clouds (tests: t…, lc…;
	# demo: dm…) whose test process is gone.
	local name
	for name in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^(t[0-9a-f]{5}|lc[0-9a-f]{5}|dm[0-9]+)'); do
		owner_alive "$name" || echo "netns $name"
	done
	for name in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E '^(t[0-9a-f]{5}|lc[0-9a-f]{5}|dm[0-9]+)'); do
		owner_alive "$name" || echo "link $name"
	done
	# Cgroup roots of real nodes (test/nodes: tfccm-<cloud prefix>-n-<node>,
	# in every hierarchy) whose test process is gone: their pods' processes
	# were killed and the directories removed, or they are left over.
	local d base
	for d in /sys/fs/cgroup/*/tfccm-*; do
		[[ -d $d ]] || continue
		base=${d##*/tfccm-}
		# Only test clouds' nodes: `devcluster up --nodes` (tfccmdc) is
		# started and stopped by hand.
		[[ ${base%%-*} =~ ^(t[0-9a-f]{5}|lc[0-9a-f]{5}|dm[0-9]+) ]] || continue
		owner_alive "${base%%-*}" || echo "cgroup $d"
	done
	# Orphaned processes started from test directories or the e2e binary
	# dir (etcd, kube-apiserver, the CCM, tofu): their test is gone, so
	# init adopted them.
	ps -eo pid=,ppid=,args= | awk '$2 == 1' | grep -E '/tmp/(Test|tfccm-e2e-bin|go-build)|tfccm-local' |
		grep -vE 'grep -E|leftovers.sh' |
		awk '{pid=$1; $1=""; $2=""; sub(/^ +/, ""); print "process " pid " " $0}' || true
	# HAProxy, the routed-VIP/l4 service or conntrackd of a local cloud or LB
	# host whose namespace is gone (it would keep a VIP alive where nothing
	# can reach or stop it).
	local hostns named pid ns
	hostns=$(readlink /proc/1/ns/net 2>/dev/null || true)
	named=$(for n in $(ip netns list 2>/dev/null | awk '{print $1}'); do stat -Lc 'net:[%i]' "/run/netns/$n" 2>/dev/null; done)
	for pid in $(pgrep -x haproxy 2>/dev/null) $(pgrep -x lbhost-router 2>/dev/null) $(pgrep -x conntrackd 2>/dev/null); do
		ns=$(readlink "/proc/$pid/ns/net" 2>/dev/null) || continue
		if [[ $ns != "$hostns" ]] && ! grep -qxF "$ns" <<<"$named"; then
			echo "process $pid $(cat "/proc/$pid/comm" 2>/dev/null) in a deleted network namespace ($ns)"
		fi
	done
}

# clean: processes first (they hold namespaces, links and cgroups), then
# the namespaces, links and cgroups; each removal is printed.
clean() {
	local found kind what d
	found=$(list | sort -u)
	[[ -n $found ]] || { echo "nothing left over"; return 0; }
	while read -r kind what _; do
		[[ $kind == process ]] || continue
		echo "kill $what"
		kill -9 "$what" 2>/dev/null || true
	done <<<"$found"
	sleep 1
	while read -r kind what _; do
		case $kind in
		netns) echo "ip netns delete $what"; ip netns delete "$what" 2>/dev/null || true ;;
		link) echo "ip link delete $what"; ip link delete "$what" 2>/dev/null || true ;;
		cgroup)
			for d in $(find "$what" -depth -type d 2>/dev/null); do
				xargs -r kill -9 <"$d/cgroup.procs" 2>/dev/null || true
				rmdir "$d" 2>/dev/null || true
			done
			echo "rmdir $what"
			;;
		esac
	done <<<"$found"
	local left
	left=$(list | sort -u)
	if [[ -n $left ]]; then
		echo "still there (remove by hand):" >&2
		echo "$left" >&2
		return 1
	fi
}

case "${1:-}" in
clean)
	clean
	;;
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
	echo "usage: $0 snapshot FILE | check FILE | clean" >&2
	exit 2
	;;
esac
