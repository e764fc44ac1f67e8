// The NodeVIP object's Go types: spec, status, and their constants.

package vipapi

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group, Version, Resource and Kind name the NodeVIP objects.
const (
	Group    = "tfccm.io"
	Version  = "v1alpha1"
	Resource = "nodevips"
	Kind     = "NodeVIP"
)

// GVR is the NodeVIP resource, for a dynamic client.
var GVR = schema.GroupVersionResource{Group: Group, Version: Version, Resource: Resource}

// NodeVIP is one address of one load balancer, served by one node at a
// time: the holder puts it on its interface and announces it, kube-proxy
// there serves the Service (ipMode VIP).
type NodeVIP struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodeVIPSpec   `json:"spec"`
	Status NodeVIPStatus `json:"status,omitempty"`
}

// NodeVIPSpec is the desired state the CCM's provider writes.
type NodeVIPSpec struct {
	// Address is the VIP, IPv4 or IPv6, canonical form.
	Address string `json:"address"`
	// Service is the Service it serves (for people, and to find its
	// EndpointSlices with externalTrafficPolicy Local).
	Service ServiceRef `json:"service"`
	// Ports are the Service's ports (shown in plans and to people; the
	// agents do not filter traffic: kube-proxy does).
	Ports []Port `json:"ports,omitempty"`
	// ExternalTrafficPolicy is Cluster or Local: Local lets only nodes with
	// a ready endpoint of the Service hold the VIP.
	ExternalTrafficPolicy string `json:"externalTrafficPolicy"`
	// Nodes are the nodes that may hold the VIP (the module's node
	// selector applied to the cluster's nodes).
	Nodes []string `json:"nodes,omitempty"`
	// Interface is where the VIP goes; empty: the interface whose network
	// contains the address.
	Interface string `json:"interface,omitempty"`
	// Standby: the address is not held by any node (another speaker still
	// announces it: a migration from MetalLB); the agents report the
	// Announced condition False with reason Standby, and no Event. An
	// address shared by several NodeVIPs is held unless all are on standby.
	Standby bool `json:"standby,omitempty"`
	// Announce is how the address is announced: "" or AnnounceL2 (one
	// holder answers ARP/NDP for it), or AnnounceBGP (every eligible node
	// announces a route to it to its BGP peers, configured by the NodeBGP
	// object; the routers spread the flows over them by ECMP).
	Announce string `json:"announce,omitempty"`
}

// Announce modes.
const (
	AnnounceL2  = "l2"
	AnnounceBGP = "bgp"
)

// BGP: the NodeVIP is announced over BGP.
func (s NodeVIPSpec) BGP() bool { return s.Announce == AnnounceBGP }

// ServiceRef names a Service.
type ServiceRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
}

// Port is one port of the Service.
type Port struct {
	Protocol string `json:"protocol"`
	Port     int32  `json:"port"`
}

// NodeVIPStatus is what the agents report.
type NodeVIPStatus struct {
	// Holder is the node holding the VIP; empty when none does.
	Holder string `json:"holder,omitempty"`
	// Interface is the holder's interface carrying the VIP.
	Interface string `json:"interface,omitempty"`
	// Announcement is how the holder announced it ("gratuitous ARP",
	// "unsolicited neighbor advertisement").
	Announcement string `json:"announcement,omitempty"`
	// Announcers are the nodes announcing the address over BGP now
	// (announce bgp: there is no single holder), sorted.
	Announcers []string `json:"announcers,omitempty"`
	// Candidates are the eligible nodes the holder was chosen from.
	Candidates []string `json:"candidates,omitempty"`
	// Contenders are the nodes answering for the address at once, sorted,
	// when more than one does (a split brain: their agents do not hear
	// each other, yet each reaches the API server and overwrites the
	// other's claim); empty otherwise.
	Contenders []string `json:"contenders,omitempty"`
	// ObservedGeneration is the spec generation the status describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Announced.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ConditionAnnounced is true when a holder has the VIP and announced it.
const ConditionAnnounced = "Announced"

// Reasons of the Announced condition.
const (
	ReasonAnnounced       = "Announced"
	ReasonNoEligibleNode  = "NoEligibleNode"
	ReasonOutsideNetworks = "AddressOutsideNodeNetworks"
	ReasonCannotAnnounce  = "CannotAnnounce"
	ReasonInvalid         = "Invalid"
	// ReasonNoLocalEndpoint: externalTrafficPolicy Local and no eligible
	// node has a ready endpoint of the Service; no node holds the address
	// until one has (not a failure: apply does not wait for it).
	ReasonNoLocalEndpoint = "NoLocalEndpoint"
	// ReasonNoBGP: announce bgp, but no NodeBGP object configures the
	// nodes' peering, or no eligible node's FRR took it.
	ReasonNoBGP = "NoBGPSpeaker"
	// ReasonStandby: the NodeVIP is on standby (spec.standby); nothing
	// is wrong, so no Warning Event.
	ReasonStandby = "Standby"
)

// EventSplitBrain is the Warning Event an agent records on a NodeVIP when
// it finds another node answering for the address it holds.
const EventSplitBrain = "SplitBrain"

// Traffic policies.
const (
	PolicyCluster = "Cluster"
	PolicyLocal   = "Local"
)

// FromUnstructured converts a dynamic client's object.
func FromUnstructured(u *unstructured.Unstructured) (*NodeVIP, error) {
	var v NodeVIP
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &v); err != nil {
		return nil, fmt.Errorf("NodeVIP %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return &v, nil
}

// ToUnstructured converts v for a dynamic client, with its kind set.
func ToUnstructured(v *NodeVIP) (*unstructured.Unstructured, error) {
	c := *v
	c.TypeMeta = metav1.TypeMeta{APIVersion: Group + "/" + Version, Kind: Kind}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
	if err != nil {
		return nil, fmt.Errorf("NodeVIP %s/%s: %w", v.Namespace, v.Name, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// Announced is the Announced condition, nil when absent.
func (s *NodeVIPStatus) Announced() *metav1.Condition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == ConditionAnnounced {
			return &s.Conditions[i]
		}
	}
	return nil
}

// DeepCopyStatus is a copy of s sharing nothing with it.
func (s NodeVIPStatus) DeepCopyStatus() NodeVIPStatus {
	out := s
	out.Candidates = append([]string(nil), s.Candidates...)
	out.Announcers = append([]string(nil), s.Announcers...)
	out.Contenders = append([]string(nil), s.Contenders...)
	out.Conditions = nil
	for _, c := range s.Conditions {
		out.Conditions = append(out.Conditions, *c.DeepCopy())
	}
	return out
}
