#!/usr/bin/env bash
# make demo / make demo-down. `up` runs in the foreground until Ctrl-C and
# cleans up after itself; `down` removes what a killed demo left behind.
set -euo pipefail
cd "$(dirname "$0")/.."
work=.work/demo
case "${1:-up}" in
up)
	shift || true
	go build -o bin/tfccm-demo ./hack/demo
	exec bin/tfccm-demo --dir "$work" "$@"
	;;
down)
	pkill -f "bin/terraform-cloud-controller-manager .*--cloud-config=$PWD/$work/" 2>/dev/null || true
	if [[ -f $work/cluster/nodes.json ]]; then # make demo NODES=n
		go run ./hack/devcluster down --dir "$work/cluster" || true
	fi
	# The baremetal demo's LB hosts (SET=baremetal): their sshd, HAProxy and
	# keepalived run in netns demo-lb-*.
	for ns in $(ip netns list | awk '$1 ~ /^demo-lb-/ {print $1}'); do
		for pid in $(ip netns pids "$ns"); do kill "$pid" 2>/dev/null || true; done
		sleep 1
		ip netns del "$ns" 2>/dev/null || true
	done
	for p in "$work"/cluster/*.pid; do
		[[ -f $p ]] && kill "$(cat "$p")" 2>/dev/null || true
	done
	if [[ -d $work/cloud/infra ]]; then
		TF_CLI_CONFIG_FILE=/dev/null bin/tofu -chdir="$work/cloud/infra" destroy -auto-approve -input=false -no-color >/dev/null
	fi
	rm -rf "$work"
	echo "demo removed"
	;;
*)
	echo "usage: hack/demo.sh up|down" >&2
	exit 2
	;;
esac
