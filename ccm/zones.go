package ccm

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/tfccm/tfccm/instances"
)

// zones serves Zones from the state index.
type zones struct {
	store *instances.Store
}

var _ cloudprovider.Zones = (*zones)(nil)

// GetZone is not implemented: the controller manager does not run on a
// node of its own, and the node-less controllers use the ByProviderID and
// ByNodeName variants.
func (z *zones) GetZone(context.Context) (cloudprovider.Zone, error) {
	return cloudprovider.Zone{}, cloudprovider.NotImplemented
}

// GetZoneByProviderID returns an instance's zone and region.
func (z *zones) GetZoneByProviderID(ctx context.Context, providerID string) (cloudprovider.Zone, error) {
	in, err := lookup(ctx, z.store, providerID, "")
	if err != nil {
		return cloudprovider.Zone{}, err
	}
	return cloudprovider.Zone{FailureDomain: in.Zone, Region: in.Region}, nil
}

// GetZoneByNodeName returns the named node's zone and region.
func (z *zones) GetZoneByNodeName(ctx context.Context, name types.NodeName) (cloudprovider.Zone, error) {
	in, err := lookup(ctx, z.store, "", string(name))
	if err != nil {
		return cloudprovider.Zone{}, err
	}
	return cloudprovider.Zone{FailureDomain: in.Zone, Region: in.Region}, nil
}
