// The pool objects' watch (tfccm's AddressPools; MetalLB's IPAddressPools
// with compat { metallb = true }), started by Initialize with the CRDs the
// cluster has, and again when one appears later.

package ccm

import (
	"context"
	"fmt"
	"slices"
	"time"

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

// poolCRDPoll is how often the apiserver is asked again for pool CRDs it
// did not serve at start (MetalLB's installed after tfccm, say).
const poolCRDPoll = 5 * time.Second

// watchPools feeds the pool objects to the load balancer controller's
// address book; without their CRDs only the cloud config's pools serve
// (said once in the log), until a CRD appears: the watch then starts
// again with it, without a restart.
func (c *Cloud) watchPools(ctx context.Context, clientBuilder cloudprovider.ControllerClientBuilder) error {
	cfg, err := clientBuilder.Config("tfccm")
	if err != nil {
		return fmt.Errorf("client config: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("discovery client: %w", err)
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	src, err := c.poolSources(disc, true)
	if err != nil {
		return err
	}
	wctx, stop := context.WithCancel(ctx)
	if err := c.lbc.WatchPools(wctx, client, src); err != nil {
		stop()
		return err
	}
	if c.allPoolSources(src) {
		go func() { <-ctx.Done(); stop() }()
		return nil
	}
	go func() {
		tick := time.NewTicker(poolCRDPoll)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				stop()
				return
			case <-tick.C:
			}
			now, err := c.poolSources(disc, false)
			if err != nil || samePoolSources(now, src) {
				continue
			}
			klog.InfoS("Pool CRDs appeared: watching them without a restart", "addressPools", now.AddressPools, "metallb", len(now.MetalLB))
			stop()
			wctx, stop = context.WithCancel(ctx)
			if err := c.lbc.WatchPools(wctx, client, now); err != nil {
				klog.ErrorS(err, "Watch the pool objects")
				continue
			}
			if src = now; c.allPoolSources(src) {
				<-ctx.Done()
				stop()
				return
			}
		}
	}()
	return nil
}

// poolSources are the pool objects the apiserver serves now (with logged,
// the CRDs it lacks are said in the log).
func (c *Cloud) poolSources(disc discovery.DiscoveryInterface, logged bool) (lbcontroller.PoolSources, error) {
	var src lbcontroller.PoolSources
	var err error
	if src.AddressPools, err = served(disc, poolapi.GVR); err != nil {
		return src, err
	}
	if !src.AddressPools && logged {
		klog.InfoS("No AddressPool CRD in the cluster: the cloud config's address pools serve (watching for it)", "crd", poolapi.Resource+"."+poolapi.Group)
	}
	if c.cfg.Compat != nil && c.cfg.Compat.MetalLB {
		for _, gvr := range []schema.GroupVersionResource{metallb.PoolsGVR, metallb.L2GVR, metallb.BGPGVR} {
			ok, err := served(disc, gvr)
			if err != nil {
				return src, err
			}
			if ok {
				src.MetalLB = append(src.MetalLB, gvr)
			}
		}
		if len(src.MetalLB) == 0 || src.MetalLB[0] != metallb.PoolsGVR {
			if logged {
				klog.InfoS("compat { metallb = true } but no MetalLB IPAddressPool CRD in the cluster: MetalLB's pools are not read until it appears", "crd", metallb.PoolsGVR.Resource+"."+metallb.Group)
			}
			src.MetalLB = nil
		}
	}
	return src, nil
}

// allPoolSources reports whether src has every pool CRD tfccm may read.
func (c *Cloud) allPoolSources(src lbcontroller.PoolSources) bool {
	return src.AddressPools && (c.cfg.Compat == nil || !c.cfg.Compat.MetalLB || len(src.MetalLB) == 3)
}

func samePoolSources(a, b lbcontroller.PoolSources) bool {
	return a.AddressPools == b.AddressPools && slices.Equal(a.MetalLB, b.MetalLB)
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
