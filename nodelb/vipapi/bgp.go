// The NodeBGP object's Go types: the nodes' BGP peering in BGP mode.

package vipapi

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Names of the NodeBGP objects.
const (
	BGPResource = "nodebgps"
	BGPKind     = "NodeBGP"
	// BGPName is the name of the one NodeBGP object of a cluster, in
	// tfccm's namespace (the nodes set's bgp module writes it).
	BGPName = "nodes"
)

// BGPGVR is the NodeBGP resource, for a dynamic client.
var BGPGVR = schema.GroupVersionResource{Group: Group, Version: Version, Resource: BGPResource}

// NodeBGP is the BGP peering of the cluster's nodes: every node agent
// configures its node's FRR with these peers, BFD profiles and pools, and
// announces there the NodeVIPs with announce bgp it is eligible for.
type NodeBGP struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodeBGPSpec   `json:"spec"`
	Status NodeBGPStatus `json:"status,omitempty"`
}

// NodeBGPSpec is what the provider's lbhost_node_bgp writes.
type NodeBGPSpec struct {
	// ASN is the nodes' AS.
	ASN int64 `json:"asn"`
	// Peers are the routers the nodes peer with.
	Peers []BGPPeer `json:"peers"`
	// BFDProfiles are BFD timer sets a peer may use.
	BFDProfiles []BFDProfile `json:"bfdProfiles,omitempty"`
	// Pools are the address pools the nodes announce host routes of,
	// with their communities and local preference.
	Pools []BGPPool `json:"pools"`
}

// BGPPeer is one router.
type BGPPeer struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	ASN     int64  `json:"asn"`
	Port    int32  `json:"port,omitempty"`
	// KeepaliveTime and HoldTime are seconds (0: FRR's defaults).
	KeepaliveTime int32 `json:"keepaliveTime,omitempty"`
	HoldTime      int32 `json:"holdTime,omitempty"`
	// PasswordSecret is a key of a Secret in tfccm's namespace holding
	// the TCP MD5 password: the agents read it; it is never in the
	// object, a plan or the state.
	PasswordSecret *SecretKeyRef `json:"passwordSecret,omitempty"`
	BFDProfile     string        `json:"bfdProfile,omitempty"`
	IBGP           bool          `json:"ibgp,omitempty"`
	// NodeSelector limits the peer to the nodes whose labels match (a
	// rack's top-of-rack router); empty: every node.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
}

// SecretKeyRef names one key of a Secret in tfccm's namespace.
type SecretKeyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// BFDProfile is a set of BFD timers (milliseconds; 0: FRR's defaults).
type BFDProfile struct {
	Name             string `json:"name"`
	ReceiveInterval  int32  `json:"receiveInterval,omitempty"`
	TransmitInterval int32  `json:"transmitInterval,omitempty"`
	DetectMultiplier int32  `json:"detectMultiplier,omitempty"`
}

// BGPPool is an address pool.
type BGPPool struct {
	Name        string   `json:"name"`
	Prefixes    []string `json:"prefixes"`
	Communities []string `json:"communities,omitempty"`
	LocalPref   *int64   `json:"localPref,omitempty"`
}

// NodeBGPStatus is what the agents report, one entry per node.
type NodeBGPStatus struct {
	Nodes []NodeBGPNode `json:"nodes,omitempty"`
}

// NodeBGPNode is one node's state.
type NodeBGPNode struct {
	Name string `json:"name"`
	// Configured: the node's FRR holds the peering.
	Configured bool `json:"configured"`
	// Message says why not.
	Message            string `json:"message,omitempty"`
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
	// Sessions are the node's BGP sessions with the peers of the spec,
	// as its bgpd reports them (the admin's own neighbours left out).
	Sessions []NodeBGPSession `json:"sessions,omitempty"`
}

// NodeBGPSession is one BGP session of a node.
type NodeBGPSession struct {
	// Peer is the peer's name in the spec.
	Peer string `json:"peer"`
	// State is BGP's: Established, or Idle, Connect, Active, OpenSent,
	// OpenConfirm.
	State string `json:"state"`
	// Since is when the session reached its state (absent when bgpd
	// does not tell: a session never up).
	Since *metav1.Time `json:"since,omitempty"`
}

// Equal reports whether n and o say the same.
func (n NodeBGPNode) Equal(o NodeBGPNode) bool {
	if n.Name != o.Name || n.Configured != o.Configured || n.Message != o.Message || n.ObservedGeneration != o.ObservedGeneration || len(n.Sessions) != len(o.Sessions) {
		return false
	}
	for i, s := range n.Sessions {
		t := o.Sessions[i]
		if s.Peer != t.Peer || s.State != t.State || (s.Since == nil) != (t.Since == nil) || (s.Since != nil && !s.Since.Equal(t.Since)) {
			return false
		}
	}
	return true
}

// BGPFromUnstructured converts a dynamic client's object.
func BGPFromUnstructured(u *unstructured.Unstructured) (*NodeBGP, error) {
	var b NodeBGP
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &b); err != nil {
		return nil, fmt.Errorf("NodeBGP %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return &b, nil
}

// BGPToUnstructured converts b for a dynamic client, with its kind set.
func BGPToUnstructured(b *NodeBGP) (*unstructured.Unstructured, error) {
	c := *b
	c.TypeMeta = metav1.TypeMeta{APIVersion: Group + "/" + Version, Kind: BGPKind}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
	if err != nil {
		return nil, fmt.Errorf("NodeBGP %s/%s: %w", b.Namespace, b.Name, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}
