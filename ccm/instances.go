package ccm

import (
	"context"
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/instances"
)

// instanceFacet serves InstancesV2 from the Terraform state index.
type instanceFacet struct {
	store   *instances.Store
	mapping instances.MappingSource // re-read to follow override changes
}

var _ cloudprovider.InstancesV2 = (*instanceFacet)(nil)

// instancesEnabled reports whether the Instances, InstancesV2 and Zones
// facets are on: enabled (the default) and at least one state source.
func instancesEnabled(cfg *config.Config) bool {
	return cfg.Instances != nil && config.Enabled(cfg.Instances.Enabled) && len(cfg.Instances.Sources) > 0
}

// newInstances builds the state Store for cfg: the mapping is
// cfg.Instances.Mapping when set, else builtin (the template set's
// instances.hcl).
func newInstances(cfg *config.Config, builtin func() ([]byte, string, error)) (*instanceFacet, error) {
	store, err := instances.StoreFromConfig(cfg, builtin)
	if err != nil {
		return nil, err
	}
	return &instanceFacet{store: store, mapping: instances.MappingFromConfig(cfg, builtin)}, nil
}

// lookup finds the instance of a providerID and/or node name, returning
// cloudprovider.InstanceNotFound (unwrapped: callers compare with ==) only
// when fresh state definitely lacks it.
func lookup(ctx context.Context, store *instances.Store, providerID, name string) (*instances.Instance, error) {
	in, err := store.Lookup(ctx, providerID, name)
	if errors.Is(err, instances.ErrNotFound) {
		return nil, cloudprovider.InstanceNotFound
	}
	if err != nil {
		return nil, err
	}
	return in, nil
}

// InstanceExists reports false only when fresh, successfully read state
// lacks the node's instance; any doubt is an error, so the node lifecycle
// controller never deletes a node because a lookup failed.
func (i *instanceFacet) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	_, err := lookup(ctx, i.store, node.Spec.ProviderID, node.Name)
	if err == cloudprovider.InstanceNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// InstanceShutdown reports the mapping's shutdown for the node's instance.
func (i *instanceFacet) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	in, err := lookup(ctx, i.store, node.Spec.ProviderID, node.Name)
	if err != nil {
		return false, err
	}
	return in.Shutdown, nil
}

// InstanceMetadata returns the node's providerID, type, zone, region,
// addresses and additional labels, by providerID first, then by name.
func (i *instanceFacet) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	in, err := lookup(ctx, i.store, node.Spec.ProviderID, node.Name)
	if err != nil {
		return nil, err
	}
	md := &cloudprovider.InstanceMetadata{
		ProviderID:    in.ProviderID,
		InstanceType:  in.InstanceType,
		NodeAddresses: nodeAddresses(in),
		Zone:          in.Zone,
		Region:        in.Region,
	}
	if len(in.Labels) > 0 {
		md.AdditionalLabels = make(map[string]string, len(in.Labels))
		for k, v := range in.Labels {
			md.AdditionalLabels[k] = v
		}
	}
	return md, nil
}

func nodeAddresses(in *instances.Instance) []v1.NodeAddress {
	out := make([]v1.NodeAddress, len(in.Addresses))
	for i, a := range in.Addresses {
		out[i] = v1.NodeAddress{Type: v1.NodeAddressType(a.Type), Address: a.Address}
	}
	return out
}

// startInstances starts the state refresh loop (from Initialize).
// mappingPollInterval is how often the instances mapping (the template
// set's, following the override directory, or instances.mapping) is
// checked for changes.
const mappingPollInterval = 2 * time.Second

func (c *Cloud) startInstances(ctx context.Context) {
	if c.instances != nil {
		c.instances.store.Start(ctx)
		go instances.WatchMapping(ctx, c.instances.store, c.instances.mapping, mappingPollInterval)
	}
}
