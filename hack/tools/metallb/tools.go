//go:build tools

// Package tools pins MetalLB's controller (its IP allocator, the part that
// serves LoadBalancer Services of its class) and its speaker (the L2
// announcements), the second load balancer the real-node tests run beside
// tfccm.
package tools

import (
	_ "go.universe.tf/metallb/controller"
	_ "go.universe.tf/metallb/speaker"
)
