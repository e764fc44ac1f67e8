package templates

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Backend health (tfccm.io/Degraded): a load balancer module may carry a
// read-only root module in its subdirectory HealthDir. tfccm plans it
// periodically with the load balancer workspace's own inputs (TfvarsFile;
// workspace.Probe) and reads its `backends` output. A set whose modules
// have none reports no Degraded condition.
const (
	HealthDir = "health"
	// HealthOutput is the health module's output: a list of
	// {node = string, healthy = bool}.
	HealthOutput = "backends"
)

// HasHealth reports whether the module carries a health module.
func (m *Module) HasHealth() bool { return m.Health != nil }

// BackendHealth is one backend of a load balancer as the load balancer
// itself sees it.
type BackendHealth struct {
	Node    string `json:"node"`
	Healthy bool   `json:"healthy"`
}

// DecodeBackends reads the health module's `backends` output.
func DecodeBackends(outputs map[string]json.RawMessage) ([]BackendHealth, error) {
	raw, ok := outputs[HealthOutput]
	if !ok {
		return nil, errors.New("the health module has no `backends` output")
	}
	var items []struct {
		Node    *string `json:"node"`
		Healthy *bool   `json:"healthy"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("output `backends` is not a list of {node, healthy}: %w", err)
	}
	out := make([]BackendHealth, 0, len(items))
	for i, it := range items {
		if it.Node == nil || *it.Node == "" || it.Healthy == nil {
			return nil, fmt.Errorf("output `backends[%d]` needs a node name and healthy", i)
		}
		out = append(out, BackendHealth{Node: *it.Node, Healthy: *it.Healthy})
	}
	return out, nil
}

// HostsOutput is a health module's optional output of the load balancer's
// hosts (LB hosts of the baremetal set) by name, each true when the probe
// could connect to it: a host that could not be reached is named in the
// Degraded condition and its gauge (tfccm_load_balancer_host_up).
const HostsOutput = "hosts"

// DecodeHosts reads the health module's `hosts` output (none: nil).
func DecodeHosts(outputs map[string]json.RawMessage) (map[string]bool, error) {
	raw, ok := outputs[HostsOutput]
	if !ok {
		return nil, nil
	}
	var hosts map[string]bool
	if err := json.Unmarshal(raw, &hosts); err != nil {
		return nil, fmt.Errorf("output `hosts` is not a map of host name to bool: %w", err)
	}
	return hosts, nil
}

// VIPHoldersOutput is a health module's optional output of which LB hosts
// hold the load balancer's VIP now, per IP family ("IPv4", "IPv6") served:
// the Service's tfccm.io/VIPHeld condition and
// tfccm_load_balancer_vip_holders (one holder is right, two or more a
// split brain, none a lost VIP).
const VIPHoldersOutput = "vip_holders"

// DecodeVIPHolders reads the health module's `vip_holders` output (none:
// nil), each family's hosts sorted.
func DecodeVIPHolders(outputs map[string]json.RawMessage) (map[string][]string, error) {
	raw, ok := outputs[VIPHoldersOutput]
	if !ok {
		return nil, nil
	}
	var holders map[string][]string
	if err := json.Unmarshal(raw, &holders); err != nil {
		return nil, fmt.Errorf("output `vip_holders` is not a map of IP family to a list of host names: %w", err)
	}
	for f, hs := range holders {
		if f != "IPv4" && f != "IPv6" {
			return nil, fmt.Errorf("output `vip_holders` names IP family %q: want IPv4 or IPv6", f)
		}
		if hs == nil {
			holders[f] = []string{}
		}
		slices.Sort(holders[f])
	}
	return holders, nil
}

// VIPIdleOutput is a health module's optional output of the IP families
// whose address no holder is meant to hold now, each with the reason
// (NoLocalEndpoint: externalTrafficPolicy Local and no ready endpoint on
// any node): tfccm.io/VIPHeld says so, and no holders gauge counts it as
// lost.
const VIPIdleOutput = "vip_idle"

// DecodeVIPIdle reads the health module's `vip_idle` output (none: nil).
func DecodeVIPIdle(outputs map[string]json.RawMessage) (map[string]string, error) {
	raw, ok := outputs[VIPIdleOutput]
	if !ok {
		return nil, nil
	}
	var idle map[string]string
	if err := json.Unmarshal(raw, &idle); err != nil {
		return nil, fmt.Errorf("output `vip_idle` is not a map of IP family to a reason: %w", err)
	}
	for f, why := range idle {
		if f != "IPv4" && f != "IPv6" {
			return nil, fmt.Errorf("output `vip_idle` names IP family %q: want IPv4 or IPv6", f)
		}
		if why != "NoLocalEndpoint" {
			return nil, fmt.Errorf("output `vip_idle` gives family %s reason %q: want NoLocalEndpoint", f, why)
		}
	}
	return idle, nil
}

// VIPHolderKindOutput is a health module's optional output naming what
// holds its VIPs, for the words and rule of tfccm.io/VIPHeld: "node" (the
// nodes set; one holder per VIP), "BGP node" (the nodes set's bgp
// variant: every node announcing the VIP holds it, active-active); none
// is "LB host".
const VIPHolderKindOutput = "vip_holder_kind"

// DecodeVIPHolderKind reads the health module's `vip_holder_kind` output:
// "node", "BGP node", or "" (LB hosts) without it.
func DecodeVIPHolderKind(outputs map[string]json.RawMessage) (string, error) {
	raw, ok := outputs[VIPHolderKindOutput]
	if !ok {
		return "", nil
	}
	var kind string
	if err := json.Unmarshal(raw, &kind); err != nil || kind != "node" && kind != "BGP node" && kind != "LB host" {
		return "", fmt.Errorf("output `vip_holder_kind` is %s: want \"node\", \"BGP node\" or \"LB host\"", raw)
	}
	if kind == "LB host" {
		kind = ""
	}
	return kind, nil
}

// BGPSessionsOutput is a health module's optional output of every LB
// host's BGP sessions (the bgp variant of baremetal): the Service's
// tfccm.io/BGPEstablished condition and tfccm_bgp_session_up.
const BGPSessionsOutput = "bgp_sessions"

// BGPSession is one LB host's session with one peer.
type BGPSession struct {
	Peer  string `json:"peer"`
	State string `json:"state"`
}

// DecodeBGPSessions reads the health module's `bgp_sessions` output
// (none: nil): host name → its sessions, sorted by peer.
func DecodeBGPSessions(outputs map[string]json.RawMessage) (map[string][]BGPSession, error) {
	raw, ok := outputs[BGPSessionsOutput]
	if !ok {
		return nil, nil
	}
	var sessions map[string][]BGPSession
	if err := json.Unmarshal(raw, &sessions); err != nil {
		return nil, fmt.Errorf("output `bgp_sessions` is not a map of host name to a list of {peer, state}: %w", err)
	}
	for h, ss := range sessions {
		for _, s := range ss {
			if s.Peer == "" || s.State == "" {
				return nil, fmt.Errorf("output `bgp_sessions`: a session of host %q has no peer or state", h)
			}
		}
		slices.SortFunc(ss, func(a, b BGPSession) int { return strings.Compare(a.Peer, b.Peer) })
	}
	return sessions, nil
}
