//go:build tools

// Package tools pins containerd (daemon, ctr, the runc shim) so they build
// from this module; hack/tools-nodes.sh builds them with CGO_ENABLED=0 and
// the tags no_btrfs no_devmapper no_zfs.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
