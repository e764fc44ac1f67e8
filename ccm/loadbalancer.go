package ccm

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/config"
)

// The LoadBalancer facet: the service controller's calls, each logged and
// handed to the load-balancer controller (package lbcontroller), which
// owns the Services' lifecycle.

// LoadBalancer serves the service controller's class-less Services of
// type LoadBalancer unless disabled in the config (load_balancer { enabled
// = false }, or serve_classless = false: the service controller then does
// not start). Services of load_balancer_class are served by the
// controller's class loop either way.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	lb := c.lbc.LoadBalancer()
	if lb == nil || !config.Enabled(c.cfg.ServeClassless) {
		return nil, false
	}
	return loadBalancer{lb}, true
}

// loadBalancer is the cloudprovider.LoadBalancer the service controller
// calls.
type loadBalancer struct{ ctl cloudprovider.LoadBalancer }

var _ cloudprovider.LoadBalancer = loadBalancer{}

func (l loadBalancer) GetLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	klog.V(5).InfoS("GetLoadBalancer", "service", klog.KObj(svc))
	return l.ctl.GetLoadBalancer(ctx, clusterName, svc)
}

func (l loadBalancer) GetLoadBalancerName(ctx context.Context, clusterName string, svc *corev1.Service) string {
	return l.ctl.GetLoadBalancerName(ctx, clusterName, svc)
}

func (l loadBalancer) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	klog.V(2).InfoS("EnsureLoadBalancer", "service", klog.KObj(svc), "nodes", len(nodes))
	return l.ctl.EnsureLoadBalancer(ctx, clusterName, svc, nodes)
}

func (l loadBalancer) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *corev1.Service, nodes []*corev1.Node) error {
	klog.V(2).InfoS("UpdateLoadBalancer", "service", klog.KObj(svc), "nodes", len(nodes))
	return l.ctl.UpdateLoadBalancer(ctx, clusterName, svc, nodes)
}

func (l loadBalancer) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *corev1.Service) error {
	klog.V(2).InfoS("EnsureLoadBalancerDeleted", "service", klog.KObj(svc))
	return l.ctl.EnsureLoadBalancerDeleted(ctx, clusterName, svc)
}
