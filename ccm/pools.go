// The pool objects' watch (tfccm's AddressPools; MetalLB's IPAddressPools
// with compat { metallb = true }), started by Initialize when the cluster
// has their CRDs.

package ccm

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/ccm/lbcontroller"
	"github.com/tfccm/tfccm/ipam/metallb"
	"github.com/tfccm/tfccm/ipam/poolapi"
)

// watchPools feeds the pool objects to the load balancer controller's
// address book; without their CRDs only the cloud config's pools serve
// (said once in the log).
func (c *Cloud) watchPools(ctx context.Context, clientBuilder cloudprovider.ControllerClientBuilder) error {
	cfg, err := clientBuilder.Config("tfccm")
	if err != nil {
		return fmt.Errorf("client config: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("discovery client: %w", err)
	}
	var src lbcontroller.PoolSources
	if src.AddressPools, err = served(disc, poolapi.GVR); err != nil {
		return err
	}
	if !src.AddressPools {
		klog.InfoS("No AddressPool CRD in the cluster: the cloud config's address pools serve", "crd", poolapi.Resource+"."+poolapi.Group)
	}
	if c.cfg.Compat != nil && c.cfg.Compat.MetalLB {
		for _, gvr := range []schema.GroupVersionResource{metallb.PoolsGVR, metallb.L2GVR, metallb.BGPGVR} {
			ok, err := served(disc, gvr)
			if err != nil {
				return err
			}
			if ok {
				src.MetalLB = append(src.MetalLB, gvr)
			}
		}
		if len(src.MetalLB) == 0 || src.MetalLB[0] != metallb.PoolsGVR {
			klog.InfoS("compat { metallb = true } but no MetalLB IPAddressPool CRD in the cluster: MetalLB's pools are not read", "crd", metallb.PoolsGVR.Resource+"."+metallb.Group)
			src.MetalLB = nil
		}
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	return c.lbc.WatchPools(ctx, client, src)
}

// served reports whether the apiserver serves gvr.
func served(disc discovery.DiscoveryInterface, gvr schema.GroupVersionResource) (bool, error) {
	l, err := disc.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", gvr.GroupVersion(), err)
	}
	for _, r := range l.APIResources {
		if r.Name == gvr.Resource {
			return true, nil
		}
	}
	return false, nil
}
