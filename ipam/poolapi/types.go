// The AddressPool object's Go types: spec, network, status and the list.

package poolapi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group, Version and Resource name the AddressPool objects.
const (
	Group    = "tfccm.io"
	Version  = "v1alpha1"
	Resource = "addresspools"
	Kind     = "AddressPool"
)

// GVR is the AddressPool resource, for a dynamic client.
var GVR = schema.GroupVersionResource{Group: Group, Version: Version, Resource: Resource}

// AddressPool is one cluster-scoped pool of load balancer addresses, as
// the cloud config's load_balancer.address_pool block.
type AddressPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AddressPoolSpec   `json:"spec"`
	Status AddressPoolStatus `json:"status,omitempty"`
}

// AddressPoolSpec is what the admin declares; each field means what the
// address_pool block's field of the same name means (config.AddressPool).
type AddressPoolSpec struct {
	Addresses             []string `json:"addresses"`
	AutoAssign            *bool    `json:"autoAssign,omitempty"`
	AvoidBuggyIPs         bool     `json:"avoidBuggyIPs,omitempty"`
	Priority              int      `json:"priority,omitempty"`
	Namespaces            []string `json:"namespaces,omitempty"`
	NamespaceSelectors    []string `json:"namespaceSelectors,omitempty"`
	ServiceSelectors      []string `json:"serviceSelectors,omitempty"`
	ShareAcrossNamespaces bool     `json:"shareAcrossNamespaces,omitempty"`
	Network               *Network `json:"network,omitempty"`
}

// Network is the segment a pool lives on: the interface its VIPs go on,
// the LB hosts attached to it, its subnets (config.PoolNetwork), and the
// nodes attached to it (for a mode whose VIPs the nodes hold).
type Network struct {
	Interface    string   `json:"interface,omitempty"`
	Hosts        []string `json:"hosts,omitempty"`
	Subnet       string   `json:"subnet,omitempty"`
	Subnet6      string   `json:"subnet6,omitempty"`
	NodeSelector string   `json:"nodeSelector,omitempty"`
}

// AddressPoolStatus is what the CCM writes: the pool's addresses counted
// per family and its conditions (Ready, Overlaps, Invalid).
type AddressPoolStatus struct {
	IPv4       *Usage             `json:"ipv4,omitempty"`
	IPv6       *Usage             `json:"ipv6,omitempty"`
	Total      string             `json:"total,omitempty"`
	InUse      int64              `json:"inUse,omitempty"`
	Free       string             `json:"free,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Usage counts one family's addresses (strings: an IPv6 pool may hold
// more than an int64 counts).
type Usage struct {
	Total string `json:"total"`
	InUse int64  `json:"inUse"`
	Free  string `json:"free"`
}

// AddressPoolList is a list of AddressPools.
type AddressPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AddressPool `json:"items"`
}

// Condition types of an AddressPool.
const (
	// ConditionReady: the pool serves Services.
	ConditionReady = "Ready"
	// ConditionOverlaps: an address range overlaps another pool's (named);
	// the pool serves nothing.
	ConditionOverlaps = "Overlaps"
	// ConditionInvalid: the spec has a problem the apiserver's validation
	// cannot see (a selector that does not parse, a name clash with a
	// cloud config block, host bits set); the pool serves nothing.
	ConditionInvalid = "Invalid"
)
