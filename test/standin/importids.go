package standin

// Import ids: what `tofu import` (and an import block) passes for a
// resource is the provider's documented import id, which for many types
// is not the object's id: hcloud's "<load balancer id>__<listen port>",
// Exoscale's "<id>@<zone>", OCI's "networkLoadBalancers/<id>/listeners/
// <name>", Google's "projects/<p>/regions/<r>/addresses/<name>". The
// stand-in resolves each documented form to the stored object it names,
// and refuses a form the real provider would refuse, so a template is
// tested with the ids the real provider takes.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// importForm is one resource type's documented import id: its pattern
// and the attributes (of the stored object) each submatch must equal;
// "id" matches the object's id.
type importForm struct {
	re    *regexp.Regexp
	attrs []string
}

var importForms = map[string]importForm{
	"hcloud_load_balancer_service":          {regexp.MustCompile(`^([0-9]+)__([0-9]+)$`), []string{"load_balancer_id", "listen_port"}},
	"hcloud_load_balancer_target":           {regexp.MustCompile(`^([0-9]+)__server__([0-9]+)$`), []string{"load_balancer_id", "server_id"}},
	"hcloud_load_balancer_network":          {regexp.MustCompile(`^([0-9]+)-([0-9]+)$`), []string{"load_balancer_id", "network_id"}},
	"exoscale_nlb":                          {regexp.MustCompile(`^([^@/]+)@([a-z0-9-]+)$`), []string{"id", "zone"}},
	"exoscale_nlb_service":                  {regexp.MustCompile(`^([^@/]+)/([^@/]+)@([a-z0-9-]+)$`), []string{"nlb_id", "id", "zone"}},
	"openstack_lb_members_v2":               {regexp.MustCompile(`^([^/]+)$`), []string{"pool_id"}},
	"oci_network_load_balancer_backend_set": {regexp.MustCompile(`^networkLoadBalancers/([^/]+)/backendSets/([^/]+)$`), []string{"network_load_balancer_id", "name"}},
	"oci_network_load_balancer_listener":    {regexp.MustCompile(`^networkLoadBalancers/([^/]+)/listeners/([^/]+)$`), []string{"network_load_balancer_id", "name"}},
	"google_compute_address":                {regexp.MustCompile(`^(?:projects/[^/]+/regions/|)([^/]+)/(?:addresses/|)([^/]+)$`), []string{"region", "name"}},
}

// importObject returns the stored object an import id names: by the
// type's documented form (importForms), else by id.
func (s *Server) importObject(typeName, id string, t tftypes.Type) (*tfprotov6.DynamicValue, error) {
	if typeName == "openstack_networking_floatingip_associate_v2" {
		// Imported by the floating IP's id: the association of its address.
		addr := stringAttr(s.storedObject("openstack_networking_floatingip_v2", id), "address")
		return s.findStored(typeName, t, id, func(v tftypes.Value) bool { return addr != "" && stringAttr(v, "floating_ip") == addr })
	}
	f, ok := importForms[typeName]
	if !ok {
		return s.load(typeName, id)
	}
	m := f.re.FindStringSubmatch(id)
	if m == nil {
		return nil, fmt.Errorf("%q is not an import id of %s (want the form %s)", id, typeName, f.re)
	}
	return s.findStored(typeName, t, id, func(v tftypes.Value) bool {
		for i, attr := range f.attrs {
			if stringAttr(v, attr) != m[i+1] {
				return false
			}
		}
		return true
	})
}

// findStored returns the one stored object of typeName that match accepts.
func (s *Server) findStored(typeName string, t tftypes.Type, id string, match func(tftypes.Value) bool) (*tfprotov6.DynamicValue, error) {
	files, _ := filepath.Glob(filepath.Join(s.store, typeName, "*.msgpack"))
	var found []*tfprotov6.DynamicValue
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		dv := &tfprotov6.DynamicValue{MsgPack: data}
		v, err := dv.Unmarshal(t)
		if err == nil && match(v) {
			found = append(found, dv)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, fmt.Errorf("no %s with import id %q", typeName, id)
	}
	return nil, fmt.Errorf("%d objects of %s match import id %q", len(found), typeName, strings.TrimSpace(id))
}
