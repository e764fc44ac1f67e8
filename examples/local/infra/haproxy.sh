#!/usr/bin/env bash
# haproxy.sh start|stop: the HAProxy master (master-worker mode) inside the
# cloud netns. Config = base.cfg + every fragments/*.cfg (one per load
# balancer, written by the loadbalancer template).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

need CLOUD_NETNS "$RE_NAME" "a netns name"
need STATE_DIR "$RE_PATH" "an absolute path"

PIDFILE=$STATE_DIR/haproxy.pid

master_pid() { running_pid "$PIDFILE" haproxy; } # the pid if it is running

write_base() {
	local tmp=$STATE_DIR/tmp/base.cfg.$$
	cat >"$tmp" <<CFG
# Written by examples/local/infra/haproxy.sh. Load balancers live in fragments/.
global
    stats socket $STATE_DIR/haproxy.sock mode 600 level admin
    stats socket ipv4@127.0.0.1:9999 level admin
    server-state-file $STATE_DIR/server-state
    maxconn 4096

defaults
    mode tcp
    timeout connect 3s
    timeout client 60s
    timeout server 60s
    timeout check 2s
    load-server-state-from-file global

frontend tfccm-local-status
    mode http
    bind 127.0.0.1:8404
    http-request return status 200 content-type text/plain string "ok"
CFG
	mv -f "$tmp" "$STATE_DIR/base.cfg"
}

start() {
	netns_exists "$CLOUD_NETNS" || die "cloud netns $CLOUD_NETNS does not exist"
	mkdir -p "$STATE_DIR/fragments" "$STATE_DIR/claims" "$STATE_DIR/tmp"
	write_base
	local pid
	if pid=$(master_pid); then
		kill -USR2 "$pid" # already running (re-run after a crash): reload
		return 0
	fi
	rm -f "$STATE_DIR/master.sock" "$STATE_DIR/haproxy.sock"
	local log=$STATE_DIR/tmp/start.log
	if ! ip netns exec "$CLOUD_NETNS" setsid haproxy -W -D \
		-S "$STATE_DIR/master.sock,mode,600" -p "$PIDFILE" \
		-f "$STATE_DIR/base.cfg" -f "$STATE_DIR/fragments" \
		</dev/null >"$log" 2>&1; then
		cat "$log" >&2
		die "haproxy failed to start"
	fi
	for _ in $(seq 50); do
		if master_pid >/dev/null && [[ -S $STATE_DIR/haproxy.sock ]]; then
			rm -f "$log"
			return 0
		fi
		sleep 0.1
	done
	cat "$log" >&2
	die "haproxy did not come up within 5s"
}

stop() {
	local pid
	pid=$(master_pid) || { rm -f "$PIDFILE"; return 0; }
	kill -TERM "$pid"
	for _ in $(seq 50); do
		[[ -e /proc/$pid ]] || { rm -f "$PIDFILE"; return 0; }
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	rm -f "$PIDFILE"
}

case ${1-} in
start) start ;;
stop) stop ;;
*) die "usage: haproxy.sh start|stop" ;;
esac
