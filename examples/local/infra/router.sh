#!/usr/bin/env bash
# router.sh start|stop: the cloud's routed-VIP service (lbhost-router) in the
# cloud netns. It reads one config per routed VIP from $STATE_DIR/routed/
# (written by the lbhost_routed_vip resource) and keeps a kernel route per
# VIP to the next hops that pass its health check; and one per layer-4 load
# balancer from $STATE_DIR/l4/ (lbhost_l4_frontend), whose nftables NAT
# rules it keeps.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

need CLOUD_NETNS "$RE_NAME" "a netns name"
need STATE_DIR "$RE_PATH" "an absolute path"

PIDFILE=$STATE_DIR/router.pid

router_pid() { running_pid "$PIDFILE" lbhost-router; } # the pid if it is running

start() {
	need ROUTER_BINARY "$RE_PATH" "an absolute path"
	[[ -x $ROUTER_BINARY ]] || die "router binary $ROUTER_BINARY is not executable (make build builds bin/lbhost-router)"
	netns_exists "$CLOUD_NETNS" || die "cloud netns $CLOUD_NETNS does not exist"
	mkdir -p "$STATE_DIR/routed" "$STATE_DIR/l4" "$STATE_DIR/tmp"
	# ECMP by flow (addresses and ports); the router hashes client-affinity
	# VIPs by client address itself (nftables marks + policy rules).
	ip netns exec "$CLOUD_NETNS" sysctl -qw net.ipv4.fib_multipath_hash_policy=1
	router_pid >/dev/null && return 0
	ip netns exec "$CLOUD_NETNS" setsid "$ROUTER_BINARY" -dir "$STATE_DIR/routed" -l4 "$STATE_DIR/l4" \
		</dev/null >>"$STATE_DIR/tmp/router.log" 2>&1 &
	echo $! >"$PIDFILE"
	for _ in $(seq 50); do
		router_pid >/dev/null && return 0
		sleep 0.1
	done
	cat "$STATE_DIR/tmp/router.log" >&2
	die "lbhost-router did not start"
}

stop() {
	local pid
	if pid=$(router_pid); then
		kill -TERM "$pid"
		for _ in $(seq 50); do
			[[ -e /proc/$pid ]] || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$PIDFILE" "$STATE_DIR/tmp/router.log"
}

case ${1-} in
start) start ;;
stop) stop ;;
*) die "usage: router.sh start|stop" ;;
esac
