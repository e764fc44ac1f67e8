#!/usr/bin/env bash
# Builds tfccm's pinned tools (OpenTofu, kube-apiserver, kube-controller-manager, kubectl, helm, promtool) into bin/ from the Go module proxy and installs
# the Debian packages the tests need. `tools.sh image` (make tools-image, what make image
# needs) builds only OpenTofu, with Go alone: no Debian package, no service stopped. `tools.sh nodes` (make tools-nodes) also builds the parts of real
# nodes: kubelet, kube-proxy, kube-controller-manager, kube-scheduler, containerd, CoreDNS, the CNI
# plugins and agnhost. Reuses a keyed cache
# (${TFCCM_CACHE:-~/.cache/tfccm}) so a second run, or a fresh clone on the
# same machine, builds nothing.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${TFCCM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tfccm}
bin="$root/bin"
mkdir -p "$bin" "$cache"

TOFU_VERSION=v1.12.6
KUBE_VERSION=v1.36.3
HELM_VERSION=v3.22.0
CONTAINERD_VERSION=v2.2.9
COREDNS_VERSION=v1.14.7
CNI_PLUGINS_VERSION=v1.9.1
# Prometheus v3.16.0 (its Go module is versioned v0.316.0): promtool checks
# and unit-tests the chart's alerting rules.
PROMTOOL_VERSION=v0.316.0
# SeaweedFS (a Go module without releases on the proxy: a pseudo-version): a
# real S3-compatible server for the s3 state backend's tests.
SEAWEEDFS_VERSION=v0.0.0-20261109003541-7506e5f91cd6
# MetalLB's controller (its IP allocator): the second load balancer controller the
# real-node tests run beside tfccm (spec.loadBalancerClass, migration).
METALLB_VERSION=v0.15.2

log() { printf '[tools] %s\n' "$*" >&2; }

# key NAME VERSION MODDIR [TAGS]: a cache key over the version, the wrapper module
# (its own Go sources too), the build tags and the Go toolchain, so any change to how
# it is built rebuilds it.
key() {
	{
		echo "$2"
		cat "$3/go.mod" "$3/go.sum"
		# The wrapper's own Go sources (main.go, a test suite), tools.go aside.
		find "$3" -name '*.go' ! -name tools.go -print0 | sort -z | xargs -0 -r cat
		if [[ -n ${4-} ]]; then echo "tags $4"; fi
		go env GOVERSION GOARCH
	} | sha256sum | cut -c1-16
}

# build NAME VERSION MODDIR PKG LDFLAGS [TAGS]   (PKG test:IMPORTPATH: a go test -c binary)
build() {
	local name=$1 version=$2 moddir=$3 pkg=$4 ldflags=$5 tags=${6-}
	local k dest
	k=$(key "$name" "$version" "$moddir" "$tags")
	dest="$cache/$name-$version-$k"
	if [[ -x "$bin/$name" && "$(cat "$bin/.$name.key" 2>/dev/null)" == "$k" ]]; then
		log "$name $version up to date"
		return
	fi
	if [[ ! -x "$dest/$name" ]]; then
		log "building $name $version from the module proxy (cold: several minutes)"
		mkdir -p "$dest.tmp/$(dirname "$name")"
		local gocmd=(build)
		# test:PKG is a test binary (go test -c), e.g. the upstream e2e suite.
		if [[ $pkg == test:* ]]; then gocmd=(test -c) pkg=${pkg#test:}; fi
		(cd "$moddir" && GOFLAGS=-mod=mod CGO_ENABLED=0 go "${gocmd[@]}" -trimpath -tags "$tags" -ldflags "$ldflags" -o "$dest.tmp/$name" "$pkg")
		rm -rf "$dest" && mv "$dest.tmp" "$dest"
	fi
	mkdir -p "$(dirname "$bin/$name")" "$(dirname "$bin/.$name.key")"
	cp "$dest/$name" "$bin/$name.tmp" && mv "$bin/$name.tmp" "$bin/$name"
	echo "$k" > "$bin/.$name.key"
	log "$name $version installed from cache $dest"
}

# lanes FN...: runs the functions at once, each one's output prefixed with its
# name, and fails if any failed. A lane builds the tools of one wrapper module
# (or a few small ones) in turn, so they share its compiled packages; two lanes
# keep both cores busy through each build's link and download waits.
lanes() {
	local pids=() fn rc=0
	for fn in "$@"; do
		(set -o pipefail; "$fn" 2>&1 | sed -u "s/^/[$fn] /" >&2) &
		pids+=($!)
	done
	for pid in "${pids[@]}"; do
		wait "$pid" || rc=1
	done
	return $rc
}

apt_install() {
	local missing=()
	command -v haproxy >/dev/null || [[ -x /usr/sbin/haproxy ]] || missing+=(haproxy)
	command -v etcd >/dev/null || [[ -x /usr/bin/etcd ]] || missing+=(etcd-server)
	command -v ip >/dev/null || [[ -x /usr/sbin/ip || -x /sbin/ip ]] || missing+=(iproute2)
	command -v curl >/dev/null || missing+=(curl)
	# TestContainerServesLoadBalancer runs the image with runc on an unpacked
	# bundle. (Debian's podman 4.3 loads the image archive, but cannot start
	# containers on these VMs: it raises rlimits, which needs
	# CAP_SYS_RESOURCE.) The image's CA bundle comes from ca-certificates.
	command -v runc >/dev/null || [[ -x /usr/sbin/runc ]] || missing+=(runc)
	[[ -f /etc/ssl/certs/ca-certificates.crt ]] || missing+=(ca-certificates)
	# The lbhost provider's tests: keepalived (VRRP VIPs), sshd (ssh transport), flock.
	command -v keepalived >/dev/null || [[ -x /usr/sbin/keepalived ]] || missing+=(keepalived)
	[[ -x /usr/sbin/sshd ]] || missing+=(openssh-server)
	command -v ssh-keygen >/dev/null || missing+=(openssh-client)
	command -v flock >/dev/null || missing+=(util-linux)
	# The ssh transport's sudo mode (a non-root login with lbhost/hostfiles' sudoers rules).
	command -v sudo >/dev/null || [[ -x /usr/bin/sudo ]] || missing+=(sudo)
	# lbhost-router hashes client-affinity routed VIPs by client with nftables.
	command -v nft >/dev/null || [[ -x /usr/sbin/nft ]] || missing+=(nftables)
	# The pg state backend's tests run Debian's PostgreSQL (internal/testkit/pgserver).
	compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || missing+=(postgresql)
	# The l4 variant: lbhost-router flushes UDP flows with conntrack; the LB
	# hosts sync connection state with conntrackd (TestBaremetalL4, bench).
	command -v conntrack >/dev/null || [[ -x /usr/sbin/conntrack ]] || missing+=(conntrack)
	command -v conntrackd >/dev/null || [[ -x /usr/sbin/conntrackd ]] || missing+=(conntrackd)
	# BGP announcements (lbhost/frr): bgpd, bfdd and zebra on the LB hosts and
	# the top-of-rack router of lbhost/hosttest.
	[[ -x /usr/lib/frr/bgpd ]] || missing+=(frr)
	# frr-reload.py, which lbhost applies FRR's configuration with: `tfccm lbhost
	# prepare` on a test's LB host (a namespace with no way out) finds it
	# installed instead of asking apt for it (lbhost/hostfiles/packages).
	[[ -x /usr/lib/frr/frr-reload.py ]] || missing+=(frr-pythontools)
	# TestCompletion loads tfccm's bash completion as a user's shell does.
	[[ -f /usr/share/bash-completion/bash_completion ]] || missing+=(bash-completion)
	if ((${#missing[@]})); then
		log "installing Debian packages: ${missing[*]}"
		local sudo=""
		[[ $(id -u) == 0 ]] || sudo=sudo
		export DEBIAN_FRONTEND=noninteractive
		$sudo apt-get update -qq
		$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	fi
	# Debian starts packaged daemons on install; tfccm runs its own.
	if command -v systemctl >/dev/null && systemctl is-active --quiet haproxy 2>/dev/null; then
		systemctl stop haproxy || true
	fi
	if command -v systemctl >/dev/null && systemctl is-active --quiet keepalived 2>/dev/null; then
		systemctl stop keepalived || true
	fi
	if command -v systemctl >/dev/null && systemctl is-active --quiet conntrackd 2>/dev/null; then
		systemctl stop conntrackd || true
	fi
	if command -v systemctl >/dev/null && systemctl is-active --quiet frr 2>/dev/null; then
		systemctl stop frr || true
	fi
}

kube_node() {
	local kube="$root/hack/tools/kube-node" kldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36 -X k8s.io/component-base/version.gitTreeState=clean"
	for c in kubelet kube-proxy kube-controller-manager kube-scheduler; do
		build "$c" "$KUBE_VERSION" "$kube" "k8s.io/kubernetes/cmd/$c" "$kldflags"
	done
	build agnhost "$KUBE_VERSION" "$kube" k8s.io/kubernetes/test/images/agnhost "-s -w"
}

# node_runtime: containerd and its shim, CoreDNS, the CNI plugins.
node_runtime() {
	local ctrd="$root/hack/tools/containerd" ctags="no_btrfs no_devmapper no_zfs"
	for c in containerd containerd-shim-runc-v2 ctr; do
		build "$c" "$CONTAINERD_VERSION" "$ctrd" "github.com/containerd/containerd/v2/cmd/$c" \
			"-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" "$ctags"
	done
	build coredns "$COREDNS_VERSION" "$root/hack/tools/coredns" . "-s -w"
	for p in main/bridge main/loopback ipam/host-local meta/portmap; do
		build "cni/${p#*/}" "$CNI_PLUGINS_VERSION" "$root/hack/tools/cni" "github.com/containernetworking/plugins/plugins/$p" "-s -w"
	done
}

# The parts of real nodes (make tools-nodes): kubelet, kube-proxy and the controllers from
# the same Kubernetes release as kube-apiserver, containerd and its runc shim, CoreDNS, the
# CNI plugins (in bin/cni: `bridge` would shadow iproute2's), agnhost for test images.
nodes() {
	local missing=()
	# kube-proxy (iptables mode) and the local cloud's NAT for node->host traffic.
	command -v iptables-restore >/dev/null || [[ -x /usr/sbin/iptables-restore ]] || missing+=(iptables)
	command -v conntrack >/dev/null || [[ -x /usr/sbin/conntrack ]] || missing+=(conntrack)
	if ((${#missing[@]})); then
		log "installing Debian packages: ${missing[*]}"
		local sudo=""
		[[ $(id -u) == 0 ]] || sudo=sudo
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
			{ $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
	fi
	lanes kube_node node_runtime
	"$bin/kubelet" --version >&2
	"$bin/containerd" --version >&2
}

# image_tools: OpenTofu as bin/tofu, the one tool the image holds.
image_tools() {
	build tofu "$TOFU_VERSION" "$root/hack/tools/tofu" github.com/opentofu/opentofu/cmd/tofu \
		"-s -w -X github.com/opentofu/opentofu/version.dev=no"
}

# The base tools in two lanes of about equal cold cost (~2,300 packages each).
tofu_promtool() {
	image_tools
	# remove_all_sd (Prometheus' own build tag) leaves out the service
	# discoveries and their cloud SDKs: rule checks and tests need none.
	build promtool "$PROMTOOL_VERSION" "$root/hack/tools/promtool" github.com/prometheus/prometheus/cmd/promtool \
		"-s -w -X github.com/prometheus/common/version.Version=3.16.0 -X github.com/prometheus/common/version.Branch=HEAD" remove_all_sd
}

kube_helm() {
	build kube-apiserver "$KUBE_VERSION" "$root/hack/tools/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver \
		"-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36 -X k8s.io/component-base/version.gitTreeState=clean"
	# kube-controller-manager (as tools-nodes builds it: one cache entry) for the
	# tests that need its Job controller without real nodes (runner pods under
	# Pod Security); most of its packages are kube-apiserver's, built just before.
	build kube-controller-manager "$KUBE_VERSION" "$root/hack/tools/kube-node" k8s.io/kubernetes/cmd/kube-controller-manager \
		"-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36 -X k8s.io/component-base/version.gitTreeState=clean"
	build kubectl "$KUBE_VERSION" "$root/hack/tools/kube-apiserver" k8s.io/kubernetes/cmd/kubectl \
		"-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36 -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION"
	build helm "$HELM_VERSION" "$root/hack/tools/helm" helm.sh/helm/v3/cmd/helm \
		"-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
}

# `tools.sh image` (make tools-image): only what `make image` puts in the
# image besides tfccm's own binaries, built with Go alone.
if [[ ${1-} == image ]]; then
	image_tools
	env -u TF_CLI_CONFIG_FILE "$bin/tofu" version | sed -n 1p >&2
	exit 0
fi
apt_install
lanes tofu_promtool kube_helm
env -u TF_CLI_CONFIG_FILE "$bin/tofu" version | sed -n 1p >&2
"$bin/kube-apiserver" --version >&2
"$bin/helm" version --short >&2
"$bin/promtool" --version 2>&1 | sed -n 1p >&2
if [[ ${1-} == nodes ]]; then
	nodes
fi
# `tools.sh s3` (make tools-s3): SeaweedFS as bin/weed, the S3-compatible
# server of the s3 backend's tests (make test-backends). Its own target: a
# cold build costs ~8 CPU-minutes, too much for a cold make test.
if [[ ${1-} == s3 ]]; then
	build weed "$SEAWEEDFS_VERSION" "$root/hack/tools/seaweedfs" github.com/seaweedfs/seaweedfs/weed "-s -w"
fi
# `tools.sh metallb` (make tools-metallb): MetalLB's controller as bin/metallb-controller, its
# speaker (L2 and BGP announcements; run with --node-name, memberlist off without --ml-bindaddr)
# as bin/metallb-speaker, and its CRDs (IPAddressPool, L2Advertisement, ...) from the module's
# source in bin/metallb-crds, for the real-node tests that run it beside tfccm (not part of
# make test: ~4 min cold).
if [[ ${1-} == metallb ]]; then
	build metallb-controller "$METALLB_VERSION" "$root/hack/tools/metallb" go.universe.tf/metallb/controller "-s -w"
	build metallb-speaker "$METALLB_VERSION" "$root/hack/tools/metallb" go.universe.tf/metallb/speaker "-s -w"
	mlb=$(cd "$root/hack/tools/metallb" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' go.universe.tf/metallb)
	mkdir -p "$bin/metallb-crds"
	install -m 0644 "$mlb"/config/crd/bases/*.yaml "$bin/metallb-crds/"
fi
# `tools.sh e2e` (make tools-e2e): the upstream e2e framework with its
# sig-network specs as bin/e2e.test (hack/tools/kube-e2e/lbsuite, go test -c),
# for running `[sig-network] LoadBalancers` against tfccm on real nodes.
if [[ ${1-} == e2e ]]; then
	build e2e.test "$KUBE_VERSION" "$root/hack/tools/kube-e2e" test:github.com/tfccm/tfccm/hack/tools/kube-e2e/lbsuite \
		"-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36"
fi
# `tools.sh release-tofu ARCH...` (make release): OpenTofu for linux/ARCH, for the image
# of each release platform, as bin/tofu-linux-ARCH: built and cached like bin/tofu (the
# cache key includes GOARCH); this machine's own architecture is a copy of bin/tofu.
if [[ ${1-} == release-tofu ]]; then
	shift
	for arch in "$@"; do
		if [[ $arch == "$(go env GOARCH)" && "$(go env GOOS)" == linux ]]; then
			cp "$bin/tofu" "$bin/tofu-linux-$arch.tmp" && mv "$bin/tofu-linux-$arch.tmp" "$bin/tofu-linux-$arch"
		else
			GOOS=linux GOARCH=$arch build "tofu-linux-$arch" "$TOFU_VERSION" "$root/hack/tools/tofu" github.com/opentofu/opentofu/cmd/tofu \
				"-s -w -X github.com/opentofu/opentofu/version.dev=no"
		fi
	done
fi
