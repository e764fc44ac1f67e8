#!/usr/bin/env bash
# node.sh up|down: one node netns with a veth on the cloud bridge.
# Idempotent: re-running up after a partial run converges.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

need NETNS "$RE_NAME" "a netns name"

up() {
	need CLOUD_NETNS "$RE_NAME" "a netns name"
	need BRIDGE "$RE_LINK" "a link name"
	need VETH "$RE_LINK" "a link name"
	need ADDR "$RE_CIDR4" "an IPv4 CIDR"
	need GATEWAY "$RE_IP4" "an IPv4 address"
	need GATEWAY6 "$RE_IP6" "an IPv6 address"
	[[ -z ${ADDR6-} ]] || need ADDR6 "$RE_CIDR6" "an IPv6 CIDR"
	netns_exists "$CLOUD_NETNS" || die "cloud netns $CLOUD_NETNS does not exist"

	netns_exists "$NETNS" || ip netns add "$NETNS"
	local n=(ip -n "$NETNS") c=(ip -n "$CLOUD_NETNS")
	"${n[@]}" link set lo up
	if ! "${c[@]}" link show "$VETH" >/dev/null 2>&1; then
		# A half-made pair from an interrupted run: start over.
		"${n[@]}" link del eth0 >/dev/null 2>&1 || true
		"${c[@]}" link add "$VETH" type veth peer name eth0 netns "$NETNS"
	fi
	"${c[@]}" link set "$VETH" master "$BRIDGE" up
	"${n[@]}" addr replace "$ADDR" dev eth0
	if [[ -n ${ADDR6-} ]]; then
		"${n[@]}" addr replace "$ADDR6" dev eth0 nodad
	fi
	"${n[@]}" link set eth0 up
	"${n[@]}" route replace default via "$GATEWAY" dev eth0
	if [[ -n ${ADDR6-} ]]; then
		"${n[@]}" -6 route replace default via "$GATEWAY6" dev eth0
	fi
}

down() {
	# Deleting the netns deletes its end of the veth and so the bridge end.
	if netns_exists "$NETNS"; then
		ip netns del "$NETNS"
	fi
}

case ${1-} in
up) up ;;
down) down ;;
*) die "usage: node.sh up|down" ;;
esac
