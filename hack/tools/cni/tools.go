//go:build tools

// Package tools pins the CNI plugins real nodes use: bridge, host-local
// IPAM, loopback and portmap.
package tools

import (
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
	_ "github.com/containernetworking/plugins/plugins/meta/portmap"
)
