// MetalLB's objects as tfccm reads them: the fields of metallb.io/v1beta1
// IPAddressPool and L2Advertisement that carry a pool's meaning (facts of
// MetalLB's published API, under their JSON names).

package metallb

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group and Version of MetalLB's objects.
const (
	Group   = "metallb.io"
	Version = "v1beta1"
)

// The resources read: pools, and the L2 and BGP announcements (BGP ones
// only to say they are not converted).
var (
	PoolsGVR = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "ipaddresspools"}
	L2GVR    = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "l2advertisements"}
	BGPGVR   = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "bgpadvertisements"}
)

// IPAddressPool is MetalLB's pool (namespaced, in MetalLB's namespace).
type IPAddressPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              IPAddressPoolSpec `json:"spec"`
}

// IPAddressPoolSpec is the pool's addresses and allocation rules.
type IPAddressPoolSpec struct {
	Addresses         []string           `json:"addresses"`
	AutoAssign        *bool              `json:"autoAssign,omitempty"`
	AvoidBuggyIPs     bool               `json:"avoidBuggyIPs,omitempty"`
	ServiceAllocation *ServiceAllocation `json:"serviceAllocation,omitempty"`
}

// ServiceAllocation restricts which Services the pool serves.
type ServiceAllocation struct {
	Priority           int                    `json:"priority,omitempty"`
	Namespaces         []string               `json:"namespaces,omitempty"`
	NamespaceSelectors []metav1.LabelSelector `json:"namespaceSelectors,omitempty"`
	ServiceSelectors   []metav1.LabelSelector `json:"serviceSelectors,omitempty"`
}

// Advertisement is an L2Advertisement or a BGPAdvertisement: which pools
// it announces, from which nodes, on which interfaces (L2 only).
type Advertisement struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AdvertisementSpec `json:"spec,omitempty"`
}

// AdvertisementSpec is the part of both kinds' spec that names pools,
// nodes and interfaces.
type AdvertisementSpec struct {
	IPAddressPools         []string               `json:"ipAddressPools,omitempty"`
	IPAddressPoolSelectors []metav1.LabelSelector `json:"ipAddressPoolSelectors,omitempty"`
	NodeSelectors          []metav1.LabelSelector `json:"nodeSelectors,omitempty"`
	Interfaces             []string               `json:"interfaces,omitempty"`
}
