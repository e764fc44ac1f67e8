#!/usr/bin/env bash
# agnhost-rootfs.sh: the root filesystem under the agnhost test image (make
# tools-nodes): a minimal Debian (mmdebstrap, variant minbase, from the apt
# sources this machine has) with what upstream e2e specs run inside agnhost
# pods: sh, curl, wget, nc, seq, ip, nslookup, ping. Built once into the keyed
# cache (${TFCCM_CACHE:-~/.cache/tfccm}, ~70 s cold); prints the tar's path.
# wget tries once, as the upstream image's does: specs run `wget -T 5` against
# addresses that drop packets and expect an answer within seconds, where
# GNU wget's default of 20 tries takes minutes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${TFCCM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tfccm}
suite=bookworm
packages=curl,wget,netcat-openbsd,iproute2,bind9-dnsutils,iputils-ping,ca-certificates
key=$(cat "$0" | sha256sum | cut -c1-16)
out="$cache/agnhost-rootfs-$suite-$key.tar"
if [[ -s $out ]]; then
	echo "[tools] agnhost rootfs from cache $out" >&2
	echo "$out"
	exit 0
fi
mkdir -p "$cache"
if ! command -v mmdebstrap >/dev/null; then
	echo "[tools] installing Debian package mmdebstrap" >&2
	sudo=""
	[[ $(id -u) == 0 ]] || sudo=sudo
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null ||
		{ $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null; }
fi
echo "[tools] building the agnhost rootfs ($suite: $packages)" >&2
tmp="$out.tmp.$$"
trap 'rm -rf "$tmp"' EXIT
# A fixed SOURCE_DATE_EPOCH: file times in the tar do not follow the clock.
SOURCE_DATE_EPOCH=1767225600 mmdebstrap --quiet --format=tar --variant=minbase --include="$packages" \
	--aptopt='Acquire::Check-Valid-Until "false"' \
	--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
	--customize-hook='echo "tries = 1" >>"$1/etc/wgetrc"' \
	"$suite" "$tmp" >&2
mv "$tmp" "$out"
echo "$out"
