// The AddressPool objects' watch, started by Initialize when the cluster
// has their CRD.

package ccm

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/ipam/poolapi"
)

// watchPools feeds the AddressPool objects to the load balancer
// controller's address book; without the CRD only the cloud config's
// pools serve (said once in the log).
func (c *Cloud) watchPools(ctx context.Context, clientBuilder cloudprovider.ControllerClientBuilder) error {
	cfg, err := clientBuilder.Config("tfccm")
	if err != nil {
		return fmt.Errorf("client config: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("discovery client: %w", err)
	}
	if _, err := disc.ServerResourcesForGroupVersion(poolapi.Group + "/" + poolapi.Version); err != nil {
		if apierrors.IsNotFound(err) {
			klog.InfoS("No AddressPool CRD in the cluster: only the cloud config's address pools serve", "crd", poolapi.Resource+"."+poolapi.Group)
			return nil
		}
		return fmt.Errorf("discover %s/%s: %w", poolapi.Group, poolapi.Version, err)
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	return c.lbc.WatchPools(ctx, client)
}
