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
