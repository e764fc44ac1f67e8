package templates

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/config"
)

// maxLBName is the longest load balancer name tfccm generates or accepts.
const maxLBName = 32

// defaultLBName is "<cluster>-<10 hex digits of sha256(UID)>", at most 32
// characters (the cluster part is truncated to fit).
func defaultLBName(cluster string, uid string) string {
	sum := sha256.Sum256([]byte(uid))
	h := hex.EncodeToString(sum[:])[:10]
	prefix := cluster
	if len(prefix) > maxLBName-len(h)-1 {
		prefix = strings.TrimRight(prefix[:maxLBName-len(h)-1], "-")
	}
	if prefix == "" {
		return "lb-" + h
	}
	return prefix + "-" + h
}

// LoadBalancerName is the name passed to the template as
// load_balancer_name: tfccm.io/name when set and valid, otherwise
// "<cluster>-<hash of the Service UID>". Deterministic, <= 32 characters of
// [a-z0-9-]. An invalid tfccm.io/name falls back to the default here;
// RenderLoadBalancer reports it as an error.
func LoadBalancerName(cfg *config.Config, svc *corev1.Service) string {
	if n, ok, err := annotations.Name.Get(svc.Annotations); ok && err == nil {
		return n
	}
	return defaultLBName(cfg.ClusterName, string(svc.UID))
}

// LoadBalancerID is the name passed to the template as load_balancer_id:
// "<cluster>-<hash of the Service UID>", whatever tfccm.io/name says. A
// tenant chooses load_balancer_name; nobody chooses this one, so two
// Services never have the same (the Service UID is unique): templates
// key what identifies a load balancer where tfccm alone sees it (an LB
// host's VIP claim, HAProxy fragment, VRRP instance, nft table) by it. It
// equals load_balancer_name when tfccm.io/name is unset.
func LoadBalancerID(cfg *config.Config, svc *corev1.Service) string {
	return defaultLBName(cfg.ClusterName, string(svc.UID))
}

// LoadBalancerWorkspaceName is the workspace (directory and state key) of a
// Service's load balancer: "lb-" + the default name, keyed by the Service UID
// only, so that two Services can never share a workspace and renaming with
// tfccm.io/name renames the load balancer instead of leaking the old one.
func LoadBalancerWorkspaceName(cfg *config.Config, svc *corev1.Service) string {
	return lbWorkspaceName(cfg.ClusterName, string(svc.UID))
}

// lbWorkspaceName is the one rule of load balancer workspace names.
func lbWorkspaceName(cluster, uid string) string { return "lb-" + defaultLBName(cluster, uid) }

// IsLoadBalancerWorkspace reports whether name has the shape of this
// cluster's load balancer workspace names (LoadBalancerWorkspaceName).
func IsLoadBalancerWorkspace(cfg *config.Config, name string) bool {
	probe := lbWorkspaceName(cfg.ClusterName, "")
	prefix := probe[:len(probe)-10] // the UID hash is 10 hex digits
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || len(rest) != 10 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil
}

// RoutesWorkspaceName is the name of the cluster's one routes workspace.
const RoutesWorkspaceName = "routes"

// RouteName is the route name tfccm uses for a node's pod CIDR:
// "<node>/<cidr>", e.g. "node-1/10.244.1.0/24". Node names never contain
// "/", so cutting at the first "/" recovers both parts.
func RouteName(node, cidr string) string { return node + "/" + cidr }
