package standin

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// cloudRules are what a cloud refuses at apply that no plan shows, by
// resource type: checked against the objects in the stand-in's store
// (EnvStore) before the new object joins them. Each names the cloud's
// documented rule.
var cloudRules = map[string]func(s *Server, id string, planned tftypes.Value) error{
	"google_compute_forwarding_rule": sharedInternalAddress,
	"openstack_lb_members_v2":        ovnMembers,
	"openstack_lb_monitor_v2":        ovnMonitor,
	"openstack_lb_pool_v2":           ovnPool,
}

// The Octavia OVN provider driver (ovn-octavia-provider, driver.py)
// refuses what it cannot do when a pool, member or monitor is created on an
// ovn load balancer: members with monitor options, health monitors other
// than TCP, UDP-CONNECT and SCTP, lb_methods other than SOURCE_IP_PORT.

// ovnMembers refuses monitor options on the members of an ovn pool.
func ovnMembers(s *Server, _ string, planned tftypes.Value) error {
	if !s.ovnPool(stringAttr(planned, "pool_id")) {
		return nil
	}
	m, _ := objectOf(planned)
	for _, member := range elements(m["member"]) {
		if stringAttr(member, "monitor_port") != "" || stringAttr(member, "monitor_address") != "" {
			return errors.New("Provider 'ovn' does not support a requested option: OVN provider does not support monitor options")
		}
	}
	return nil
}

// ovnMonitor refuses the health monitor types the OVN driver lacks.
func ovnMonitor(s *Server, _ string, planned tftypes.Value) error {
	typ := stringAttr(planned, "type")
	if !s.ovnPool(stringAttr(planned, "pool_id")) || typ == "TCP" || typ == "UDP-CONNECT" || typ == "SCTP" {
		return nil
	}
	return fmt.Errorf("Provider 'ovn' does not support a requested option: OVN provider does not support %s Health Monitor type. Supported types: TCP, UDP-CONNECT, SCTP", typ)
}

// ovnPool refuses the lb_methods the OVN driver lacks.
func ovnPool(s *Server, _ string, planned tftypes.Value) error {
	method := stringAttr(planned, "lb_method")
	if !s.ovnLoadBalancer(s.listenerLoadBalancer(stringAttr(planned, "listener_id")), stringAttr(planned, "loadbalancer_id")) || method == "SOURCE_IP_PORT" {
		return nil
	}
	return fmt.Errorf("Provider 'ovn' does not support a requested algorithm: OVN provider does not support %s algorithm", method)
}

// ovnPool reports whether the stored pool's load balancer (through its
// listener or directly) has loadbalancer_provider "ovn".
func (s *Server) ovnPool(poolID string) bool {
	pool := s.storedObject("openstack_lb_pool_v2", poolID)
	return s.ovnLoadBalancer(s.listenerLoadBalancer(stringAttr(pool, "listener_id")), stringAttr(pool, "loadbalancer_id"))
}

// listenerLoadBalancer returns the load balancer id of a stored listener.
func (s *Server) listenerLoadBalancer(listenerID string) string {
	return stringAttr(s.storedObject("openstack_lb_listener_v2", listenerID), "loadbalancer_id")
}

func (s *Server) ovnLoadBalancer(ids ...string) bool {
	for _, id := range ids {
		if stringAttr(s.storedObject("openstack_lb_loadbalancer_v2", id), "loadbalancer_provider") == "ovn" {
			return true
		}
	}
	return false
}

// storedObject returns the stored object of a type by id, or a null value
// when the store lacks it.
func (s *Server) storedObject(typeName, id string) tftypes.Value {
	r, err := s.resource(typeName)
	if err != nil || id == "" || s.store == "" {
		return tftypes.Value{}
	}
	dv, err := s.load(typeName, id)
	if err != nil {
		return tftypes.NewValue(r.ValueType(), nil)
	}
	v, err := dv.Unmarshal(r.ValueType())
	if err != nil {
		return tftypes.NewValue(r.ValueType(), nil)
	}
	return v
}

// sharedInternalAddress: Google Cloud gives an internal IP literal to one
// forwarding rule; rules share one only when it is a reserved address with
// purpose SHARED_LOADBALANCER_VIP (Compute Engine documentation, "Internal
// passthrough Network Load Balancer: multiple forwarding rules with a
// common IP address").
func sharedInternalAddress(s *Server, id string, planned tftypes.Value) error {
	ip := stringAttr(planned, "ip_address")
	if stringAttr(planned, "load_balancing_scheme") != "INTERNAL" {
		return nil
	}
	if _, err := netip.ParseAddr(ip); err != nil {
		return nil
	}
	others, err := s.stored("google_compute_forwarding_rule")
	if err != nil {
		return err
	}
	shared := false
	for _, o := range others {
		if stringAttr(o, "id") != id && stringAttr(o, "ip_address") == ip && stringAttr(o, "load_balancing_scheme") == "INTERNAL" {
			shared = true
		}
	}
	if !shared {
		return nil
	}
	addresses, err := s.stored("google_compute_address")
	if err != nil {
		return err
	}
	for _, a := range addresses {
		if stringAttr(a, "address") == ip && stringAttr(a, "purpose") == "SHARED_LOADBALANCER_VIP" {
			return nil
		}
	}
	return fmt.Errorf("googleapi: Error 400: IP_IN_USE_BY_ANOTHER_RESOURCE - IP '%s' is already being used by another resource (internal forwarding rules share an IP only as a reserved address with purpose SHARED_LOADBALANCER_VIP)", ip)
}

// stored returns every object of a resource type in the store.
func (s *Server) stored(typeName string) ([]tftypes.Value, error) {
	if s.store == "" {
		return nil, nil
	}
	r, err := s.resource(typeName)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(s.store, typeName)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", typeName, err)
	}
	var out []tftypes.Value
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".msgpack") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", typeName, err)
		}
		v, err := (&tfprotov6.DynamicValue{MsgPack: data}).Unmarshal(r.ValueType())
		if err != nil {
			return nil, fmt.Errorf("store %s %s: %w", typeName, e.Name(), err)
		}
		out = append(out, v)
	}
	return out, nil
}
