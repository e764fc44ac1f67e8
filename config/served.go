package config

// The one rule of which Services tfccm serves.

import corev1 "k8s.io/api/core/v1"

// Serves reports whether tfccm serves svc: a Service of type LoadBalancer
// whose spec.loadBalancerClass tfccm serves (ServesClass). The controller,
// its review watch and the offline CLI all ask this one function.
func (c *Config) Serves(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && c.ServesClass(svc.Spec.LoadBalancerClass)
}
