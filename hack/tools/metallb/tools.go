//go:build tools

// Package tools pins MetalLB's controller (its IP allocator, the part that
// serves LoadBalancer Services of its class), the second load balancer
// controller the real-node tests run beside tfccm.
package tools

import _ "go.universe.tf/metallb/controller"
