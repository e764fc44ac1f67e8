# Shared checks for the local cloud's scripts. Sourced, never executed.
# Every value arrives in the environment; each is checked before use.

die() {
	echo "local cloud: $*" >&2
	exit 1
}

need() { # need NAME REGEX DESCRIPTION
	local name=$1 re=$2 what=$3 val
	val=${!name-}
	[[ $val =~ $re ]] || die "$name must be $what, got '${val}'"
}

RE_NAME='^[a-z0-9][a-z0-9-]{0,61}$'
RE_LINK='^[a-z0-9][a-z0-9-]{0,14}$'
RE_IP4='^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$'
RE_CIDR4='^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])/([0-9]|[12][0-9]|3[0-2])$'
RE_IP6='^[0-9a-fA-F:]+$'
RE_CIDR6='^[0-9a-fA-F:]+/([0-9]|[1-9][0-9]|1[01][0-9]|12[0-8])$'
RE_PATH='^/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)+$'

netns_exists() { [[ -e /run/netns/$1 ]]; }

running_pid() { # running_pid PIDFILE COMM: prints the pid in PIDFILE if that process runs COMM
	local pid
	[[ -f $1 ]] || return 1
	pid=$(head -n1 "$1")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	[[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$2" ]] || return 1
	echo "$pid"
}
