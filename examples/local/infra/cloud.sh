#!/usr/bin/env bash
# cloud.sh up|down: the cloud netns, its node bridge, the host<->cloud veth
# and the host route to the VIP pool. Idempotent in both directions.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

need CLOUD_NETNS "$RE_NAME" "a netns name"
need BRIDGE "$RE_LINK" "a link name"
need HOST_LINK "$RE_LINK" "a link name"
need CLOUD_LINK "$RE_LINK" "a link name"
need BRIDGE_ADDR "$RE_CIDR4" "an IPv4 CIDR"
need BRIDGE_ADDR6 "$RE_CIDR6" "an IPv6 CIDR"
need HOST_ADDR "$RE_IP4" "an IPv4 address"
need CLOUD_ADDR "$RE_IP4" "an IPv4 address"
need VIP_POOL "$RE_CIDR4" "an IPv4 CIDR"
need STATE_DIR "$RE_PATH" "an absolute path"

up() {
	netns_exists "$CLOUD_NETNS" || ip netns add "$CLOUD_NETNS"
	local n=(ip -n "$CLOUD_NETNS")
	"${n[@]}" link set lo up
	ip netns exec "$CLOUD_NETNS" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 net.ipv6.conf.default.forwarding=1
	# HAProxy binds a VIP not (yet) on the netns: a load balancer prepared
	# before its take-over from MetalLB (lbhost_vip standby).
	ip netns exec "$CLOUD_NETNS" sysctl -qw net.ipv4.ip_nonlocal_bind=1 net.ipv6.ip_nonlocal_bind=1

	"${n[@]}" link show "$BRIDGE" >/dev/null 2>&1 || "${n[@]}" link add "$BRIDGE" type bridge
	"${n[@]}" addr replace "$BRIDGE_ADDR" dev "$BRIDGE"
	"${n[@]}" addr replace "$BRIDGE_ADDR6" dev "$BRIDGE" nodad
	"${n[@]}" link set "$BRIDGE" up

	if ! ip link show "$HOST_LINK" >/dev/null 2>&1; then
		ip link add "$HOST_LINK" type veth peer name "$CLOUD_LINK" netns "$CLOUD_NETNS"
	fi
	ip addr replace "$HOST_ADDR/30" dev "$HOST_LINK"
	ip link set "$HOST_LINK" up
	"${n[@]}" addr replace "$CLOUD_ADDR/30" dev "$CLOUD_LINK"
	"${n[@]}" link set "$CLOUD_LINK" up
	ip route replace "$VIP_POOL" via "$CLOUD_ADDR" dev "$HOST_LINK"

	mkdir -p "$STATE_DIR/fragments" "$STATE_DIR/claims" "$STATE_DIR/tmp"
	chmod 700 "$STATE_DIR"
}

down() {
	if [[ $(ip route show exact "$VIP_POOL") == *"via $CLOUD_ADDR "* ]]; then
		ip route del "$VIP_POOL" via "$CLOUD_ADDR"
	fi
	if ip link show "$HOST_LINK" >/dev/null 2>&1; then
		ip link del "$HOST_LINK"
	fi
	if netns_exists "$CLOUD_NETNS"; then
		ip netns del "$CLOUD_NETNS"
	fi
	# Remove only what the cloud and its load balancers put there (with the
	# lbhost provider's temporary files, which a provider killed mid-write
	# leaves behind: .lbhost-*).
	if [[ -d $STATE_DIR ]]; then
		rm -f "$STATE_DIR"/.lbhost-* "$STATE_DIR"/*/.lbhost-* "$STATE_DIR"/fragments/*.cfg "$STATE_DIR"/claims/* "$STATE_DIR"/tmp/* "$STATE_DIR"/routed/*.json "$STATE_DIR"/l4/*.json \
			"$STATE_DIR"/pending/*.json "$STATE_DIR"/pending/*.cfg "$STATE_DIR"/base.cfg "$STATE_DIR"/server-state "$STATE_DIR"/lock "$STATE_DIR"/commit.lock \
			"$STATE_DIR"/haproxy.pid "$STATE_DIR"/haproxy.sock "$STATE_DIR"/master.sock
		rmdir "$STATE_DIR"/fragments "$STATE_DIR"/claims "$STATE_DIR"/pending "$STATE_DIR"/tmp "$STATE_DIR"/routed "$STATE_DIR"/l4 2>/dev/null || true
		rmdir "$STATE_DIR" || die "state_dir $STATE_DIR holds files the local cloud did not create; left in place"
	fi
}

case ${1-} in
up) up ;;
down) down ;;
*) die "usage: cloud.sh up|down" ;;
esac
