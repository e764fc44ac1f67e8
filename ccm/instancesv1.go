package ccm

import (
	"context"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/tfccm/tfccm/instances"
)

// instancesV1 serves the v1 Instances interface from the same index as
// InstancesV2 (controllers prefer V2; v1 is for older callers).
type instancesV1 struct {
	store *instances.Store
}

var _ cloudprovider.Instances = (*instancesV1)(nil)

// NodeAddresses returns the addresses of the named node's instance.
func (i *instancesV1) NodeAddresses(ctx context.Context, name types.NodeName) ([]v1.NodeAddress, error) {
	in, err := lookup(ctx, i.store, "", string(name))
	if err != nil {
		return nil, err
	}
	return nodeAddresses(in), nil
}

// NodeAddressesByProviderID returns the addresses of an instance.
func (i *instancesV1) NodeAddressesByProviderID(ctx context.Context, providerID string) ([]v1.NodeAddress, error) {
	in, err := lookup(ctx, i.store, providerID, "")
	if err != nil {
		return nil, err
	}
	return nodeAddresses(in), nil
}

// InstanceID returns the instance's providerID without the
// "terraform://" prefix: cloudprovider.GetInstanceProviderID prepends
// "<provider name>://" to it. Mappings whose providerIDs use another
// scheme should be used through InstancesV2.
func (i *instancesV1) InstanceID(ctx context.Context, name types.NodeName) (string, error) {
	in, err := lookup(ctx, i.store, "", string(name))
	if err != nil {
		return "", err
	}
	if in.ProviderID == "" {
		return "", cloudprovider.NotImplemented
	}
	return strings.TrimPrefix(in.ProviderID, ProviderName+"://"), nil
}

// InstanceType returns the named node's instance type.
func (i *instancesV1) InstanceType(ctx context.Context, name types.NodeName) (string, error) {
	in, err := lookup(ctx, i.store, "", string(name))
	if err != nil {
		return "", err
	}
	return in.InstanceType, nil
}

// InstanceTypeByProviderID returns an instance's type.
func (i *instancesV1) InstanceTypeByProviderID(ctx context.Context, providerID string) (string, error) {
	in, err := lookup(ctx, i.store, providerID, "")
	if err != nil {
		return "", err
	}
	return in.InstanceType, nil
}

// AddSSHKeyToAllInstances is not supported.
func (i *instancesV1) AddSSHKeyToAllInstances(context.Context, string, []byte) error {
	return cloudprovider.NotImplemented
}

// CurrentNodeName returns the hostname as the node name.
func (i *instancesV1) CurrentNodeName(_ context.Context, hostname string) (types.NodeName, error) {
	return types.NodeName(hostname), nil
}

// InstanceExistsByProviderID is false only when fresh state lacks the
// instance; any doubt is an error.
func (i *instancesV1) InstanceExistsByProviderID(ctx context.Context, providerID string) (bool, error) {
	_, err := lookup(ctx, i.store, providerID, "")
	if err == cloudprovider.InstanceNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// InstanceShutdownByProviderID reports the mapping's shutdown.
func (i *instancesV1) InstanceShutdownByProviderID(ctx context.Context, providerID string) (bool, error) {
	in, err := lookup(ctx, i.store, providerID, "")
	if err != nil {
		return false, err
	}
	return in.Shutdown, nil
}
