#!/usr/bin/env bash
# route.sh add|del: one kernel route in the local cloud's netns.
#   add  ip route replace CIDR via VIA (or blackhole CIDR)
#   del  delete that exact route if it is still there (a newer route for the
#        same CIDR with another next hop is left alone)
# Values come from the environment and are validated before use.
set -euo pipefail

die() {
	echo "local routes: $*" >&2
	exit 1
}
need() {
	local val=${!1-}
	[[ $val =~ $2 ]] || die "$1 must be $3, got '${val}'"
}

OCTET='(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])'
RE_IP4="^($OCTET\\.){3}$OCTET\$"
RE_IP6='^[0-9a-fA-F]*:[0-9a-fA-F:]*$'

need CLOUD_NETNS '^[a-z0-9][a-z0-9-]{0,61}$' "a netns name"
need FAMILY '^[46]$' "4 or 6"
need BLACKHOLE '^(true|false)$' "true or false"
if [[ $FAMILY == 4 ]]; then
	need CIDR "^($OCTET\\.){3}$OCTET/([0-9]|[12][0-9]|3[0-2])\$" "an IPv4 CIDR"
	[[ $BLACKHOLE == true ]] || need VIA "$RE_IP4" "an IPv4 address"
else
	need CIDR '^[0-9a-fA-F]*:[0-9a-fA-F:]*/([0-9]|[1-9][0-9]|1[01][0-9]|12[0-8])$' "an IPv6 CIDR"
	[[ $BLACKHOLE == true ]] || need VIA "$RE_IP6" "an IPv6 address"
fi
[[ -e /run/netns/$CLOUD_NETNS ]] || die "cloud netns $CLOUD_NETNS does not exist (is the local cloud up?)"

r=(ip "-$FAMILY" -n "$CLOUD_NETNS" route)
if [[ $BLACKHOLE == true ]]; then
	spec=(blackhole "$CIDR")
else
	spec=("$CIDR" via "$VIA")
fi

case ${1-} in
add)
	"${r[@]}" replace "${spec[@]}"
	;;
del)
	# `ip route show` prints the kernel's canonical form; ask for exactly ours.
	if [[ $BLACKHOLE == true ]]; then
		present=$("${r[@]}" show exact "$CIDR" type blackhole)
	else
		present=$("${r[@]}" show exact "$CIDR" via "$VIA")
	fi
	if [[ -n $present ]]; then
		"${r[@]}" del "${spec[@]}"
	fi
	;;
*) die "usage: route.sh add|del" ;;
esac
