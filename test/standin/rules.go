package standin

import (
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// What OpenTofu does not check from a provider's schema, and the real
// providers do at plan time, is checked here so that a template set whose
// own precondition is reached only after a provider error fails its tests:
//
//   - OpenTofu checks that a required argument is written in the
//     configuration, not that its value is not null: `vcn_id =
//     var.settings.vcn_id` with a null setting passes OpenTofu and fails
//     the real provider's ValidateResourceConfig ("Missing required
//     argument") when the plan evaluates the resource, before any
//     precondition of a resource that depends on it. checkRequired does
//     what the providers' SDK does for every required attribute, nested
//     blocks included.
//   - Conflicts (ConflictsWith), ExactlyOneOf, AtLeastOneOf and value
//     rules (ValidateFunc, enum validators) live in the provider's code, not
//     in `tofu providers schema -json`: resourceRules restates the
//     documented ones for the resources the built-in sets use, each naming
//     the provider rule it restates.
//   - A data source read at plan time is an API call: lookupRules restates
//     what the cloud's API refuses for the lookups the sets make.
//   - Attributes the real provider marks deprecated whose mark the schema
//     file lost: deprecatedAttributes (OpenTofu then warns about values
//     derived from them, as with the real plugin).
//
// Unknown values (at `tofu validate`, or computed ones) are never refused,
// as the providers' SDKs skip them.

// ruleKind is what a rule checks.
type ruleKind int

const (
	// conflicts: at most one of attrs is set (SDK ConflictsWith).
	conflicts ruleKind = iota
	// exactlyOne: exactly one of attrs is set (SDK ExactlyOneOf).
	exactlyOne
	// atLeastOne: one or more of attrs are set (SDK AtLeastOneOf).
	atLeastOne
	// oneOf: attrs[0], when set, is one of values (validation.StringInSlice).
	oneOf
	// between: attrs[0], when set, is from min to max (validation.IntBetween).
	between
	// ipv4: attrs[0], when set, is an IPv4 address.
	ipv4
)

// rule is one documented provider (or API) rule.
type rule struct {
	kind ruleKind
	// block is the path of the nested block the attributes are in, block
	// type names joined by dots; "" for the resource itself. Every
	// element of the block is checked.
	block string
	// attrs are attribute or block type names within block; a block is set
	// when it has one or more elements.
	attrs    []string
	values   []string
	min, max int64
	// doc names the provider's rule (its source file or documentation
	// page), so the rule can be checked against it.
	doc string
}

// at splits a dotted path into its block path and last name.
func at(path string) (block, name string) {
	if i := strings.LastIndex(path, "."); i >= 0 {
		return path[:i], path[i+1:]
	}
	return "", path
}

func exactlyOneOf(doc string, paths ...string) rule  { return group(exactlyOne, doc, paths) }
func atLeastOneOf(doc string, paths ...string) rule  { return group(atLeastOne, doc, paths) }
func conflictsWith(doc string, paths ...string) rule { return group(conflicts, doc, paths) }
func valueOneOf(doc, path string, values ...string) rule {
	b, n := at(path)
	return rule{kind: oneOf, block: b, attrs: []string{n}, values: values, doc: doc}
}
func intBetween(doc, path string, lo, hi int64) rule {
	b, n := at(path)
	return rule{kind: between, block: b, attrs: []string{n}, min: lo, max: hi, doc: doc}
}
func ipv4Address(doc, path string) rule {
	b, n := at(path)
	return rule{kind: ipv4, block: b, attrs: []string{n}, doc: doc}
}

func group(kind ruleKind, doc string, paths []string) rule {
	r := rule{kind: kind, doc: doc}
	for _, p := range paths {
		b, n := at(p)
		r.block = b
		r.attrs = append(r.attrs, n)
	}
	return r
}

// resourceRules are the documented rules of the resources the built-in
// sets use that the schema does not carry, by resource type.
var resourceRules = map[string][]rule{
	// terraform-provider-hcloud: docs/resources/load_balancer_network.md
	// ("network_id ... Required if subnet_id is not set", and the reverse).
	"hcloud_load_balancer_network": {
		exactlyOneOf("hcloud load_balancer_network: network_id or subnet_id", "network_id", "subnet_id"),
	},
	// terraform-provider-hcloud: docs/resources/load_balancer_target.md (type).
	"hcloud_load_balancer_target": {
		valueOneOf("hcloud load_balancer_target: type", "type", "server", "label_selector", "ip"),
	},
	// terraform-provider-hcloud: docs/resources/load_balancer_service.md.
	"hcloud_load_balancer_service": {
		valueOneOf("hcloud load_balancer_service: protocol", "protocol", "http", "https", "tcp"),
		valueOneOf("hcloud load_balancer_service: health_check.protocol", "health_check.protocol", "http", "tcp"),
	},
	// terraform-provider-digitalocean: digitalocean/loadbalancer/resource_loadbalancer.go
	// (size ConflictsWith size_unit, droplet_ids ConflictsWith droplet_tag,
	// protocol StringInSlice validators).
	"digitalocean_loadbalancer": {
		conflictsWith("digitalocean_loadbalancer: size ConflictsWith size_unit", "size", "size_unit"),
		conflictsWith("digitalocean_loadbalancer: droplet_ids ConflictsWith droplet_tag", "droplet_ids", "droplet_tag"),
		valueOneOf("digitalocean_loadbalancer: forwarding_rule.entry_protocol", "forwarding_rule.entry_protocol", "http", "https", "http2", "http3", "tcp", "udp"),
		valueOneOf("digitalocean_loadbalancer: forwarding_rule.target_protocol", "forwarding_rule.target_protocol", "http", "https", "http2", "tcp", "udp"),
		valueOneOf("digitalocean_loadbalancer: healthcheck.protocol", "healthcheck.protocol", "http", "https", "tcp"),
		valueOneOf("digitalocean_loadbalancer: network", "network", "EXTERNAL", "INTERNAL"),
	},
	// terraform-provider-exoscale: docs/resources/nlb_service.md.
	"exoscale_nlb_service": {
		valueOneOf("exoscale_nlb_service: protocol", "protocol", "tcp", "udp"),
		valueOneOf("exoscale_nlb_service: strategy", "strategy", "round-robin", "source-hash", "maglev-hash"),
		valueOneOf("exoscale_nlb_service: healthcheck.mode", "healthcheck.mode", "tcp", "http", "https"),
	},
	// terraform-provider-openstack: openstack/resource_openstack_lb_loadbalancer_v2.go
	// (AtLeastOneOf on vip_network_id, vip_subnet_id, vip_port_id).
	"openstack_lb_loadbalancer_v2": {
		atLeastOneOf("openstack_lb_loadbalancer_v2: vip_network_id, vip_subnet_id or vip_port_id", "vip_network_id", "vip_subnet_id", "vip_port_id"),
	},
	// terraform-provider-openstack: openstack/resource_openstack_lb_listener_v2.go (protocol).
	"openstack_lb_listener_v2": {
		valueOneOf("openstack_lb_listener_v2: protocol", "protocol", "TCP", "UDP", "SCTP", "HTTP", "HTTPS", "TERMINATED_HTTPS", "PROMETHEUS"),
		intBetween("openstack_lb_listener_v2: protocol_port", "protocol_port", 1, 65535),
	},
	// terraform-provider-openstack: openstack/resource_openstack_lb_pool_v2.go
	// ("One of loadbalancer_id or listener_id must be provided"; protocol,
	// lb_method and persistence.type validators).
	"openstack_lb_pool_v2": {
		exactlyOneOf("openstack_lb_pool_v2: loadbalancer_id or listener_id", "loadbalancer_id", "listener_id"),
		valueOneOf("openstack_lb_pool_v2: protocol", "protocol", "TCP", "UDP", "SCTP", "HTTP", "HTTPS", "PROXY", "PROXYV2"),
		valueOneOf("openstack_lb_pool_v2: lb_method", "lb_method", "ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP", "SOURCE_IP_PORT"),
		valueOneOf("openstack_lb_pool_v2: persistence.type", "persistence.type", "SOURCE_IP", "HTTP_COOKIE", "APP_COOKIE"),
	},
	// terraform-provider-openstack: openstack/resource_openstack_lb_members_v2.go
	// (validation.IntBetween on protocol_port, monitor_port and weight).
	"openstack_lb_members_v2": {
		intBetween("openstack_lb_members_v2: member.protocol_port", "member.protocol_port", 1, 65535),
		intBetween("openstack_lb_members_v2: member.monitor_port", "member.monitor_port", 1, 65535),
		intBetween("openstack_lb_members_v2: member.weight", "member.weight", 0, 256),
	},
	// terraform-provider-openstack: docs/resources/lb_monitor_v2.md (type).
	"openstack_lb_monitor_v2": {
		valueOneOf("openstack_lb_monitor_v2: type", "type", "TCP", "UDP-CONNECT", "HTTP", "HTTPS", "TLS-HELLO", "PING", "SCTP"),
	},
	// terraform-provider-oci: docs for core_network_security_group_security_rule
	// (direction, source_type, destination_type). The OCI provider leaves
	// enums to the API, which refuses other values at apply; checked here at
	// plan so a test sees them.
	"oci_core_network_security_group_security_rule": {
		valueOneOf("oci_core_network_security_group_security_rule: direction", "direction", "INGRESS", "EGRESS"),
		valueOneOf("oci_core_network_security_group_security_rule: source_type", "source_type", "CIDR_BLOCK", "SERVICE_CIDR_BLOCK", "NETWORK_SECURITY_GROUP"),
		valueOneOf("oci_core_network_security_group_security_rule: destination_type", "destination_type", "CIDR_BLOCK", "SERVICE_CIDR_BLOCK", "NETWORK_SECURITY_GROUP"),
	},
	// terraform-provider-oci: docs for network_load_balancer_* (protocol,
	// policy, ip_version enums of the Network Load Balancer API).
	"oci_network_load_balancer_listener": {
		valueOneOf("oci_network_load_balancer_listener: protocol", "protocol", "ANY", "TCP", "UDP", "TCP_AND_UDP", "L3IP"),
		valueOneOf("oci_network_load_balancer_listener: ip_version", "ip_version", "IPV4", "IPV6"),
	},
	"oci_network_load_balancer_backend_set": {
		valueOneOf("oci_network_load_balancer_backend_set: policy", "policy", "TWO_TUPLE", "THREE_TUPLE", "FIVE_TUPLE"),
		valueOneOf("oci_network_load_balancer_backend_set: health_checker.protocol", "health_checker.protocol", "HTTP", "HTTPS", "TCP", "UDP", "DNS"),
	},
	"oci_network_load_balancer_network_load_balancer": {
		valueOneOf("oci_network_load_balancer_network_load_balancer: nlb_ip_version", "nlb_ip_version", "IPV4", "IPV4_AND_IPV6", "IPV6"),
	},
	// terraform-provider-google: google/services/compute/resource_compute_region_health_check.go
	// (ExactlyOneOf over the *_health_check blocks).
	"google_compute_region_health_check": {
		exactlyOneOf("google_compute_region_health_check: exactly one of the *_health_check blocks",
			"http_health_check", "https_health_check", "http2_health_check", "tcp_health_check", "ssl_health_check", "grpc_health_check", "grpc_tls_health_check"),
	},
	// terraform-provider-google: resource_compute_firewall.go (ExactlyOneOf
	// allow, deny; direction validator).
	"google_compute_firewall": {
		exactlyOneOf("google_compute_firewall: allow or deny", "allow", "deny"),
		valueOneOf("google_compute_firewall: direction", "direction", "INGRESS", "EGRESS"),
	},
	// terraform-provider-google: resource_compute_address.go (address_type,
	// network_tier validators).
	"google_compute_address": {
		valueOneOf("google_compute_address: address_type", "address_type", "INTERNAL", "EXTERNAL"),
		valueOneOf("google_compute_address: network_tier", "network_tier", "PREMIUM", "STANDARD"),
	},
	// terraform-provider-google: resource_compute_forwarding_rule.go
	// (ip_protocol, load_balancing_scheme, network_tier validators; ports
	// ConflictsWith port_range and all_ports).
	"google_compute_forwarding_rule": {
		valueOneOf("google_compute_forwarding_rule: ip_protocol", "ip_protocol", "TCP", "UDP", "ESP", "AH", "SCTP", "ICMP", "L3_DEFAULT"),
		valueOneOf("google_compute_forwarding_rule: load_balancing_scheme", "load_balancing_scheme", "EXTERNAL", "EXTERNAL_MANAGED", "INTERNAL", "INTERNAL_MANAGED"),
		valueOneOf("google_compute_forwarding_rule: network_tier", "network_tier", "PREMIUM", "STANDARD"),
		conflictsWith("google_compute_forwarding_rule: ports, port_range, all_ports", "ports", "port_range", "all_ports"),
	},
	// terraform-provider-google: resource_compute_region_backend_service.go.
	"google_compute_region_backend_service": {
		valueOneOf("google_compute_region_backend_service: load_balancing_scheme", "load_balancing_scheme", "EXTERNAL", "EXTERNAL_MANAGED", "INTERNAL", "INTERNAL_MANAGED"),
		valueOneOf("google_compute_region_backend_service: protocol", "protocol", "HTTP", "HTTPS", "HTTP2", "SSL", "TCP", "UDP", "GRPC", "UNSPECIFIED", "H2C"),
		valueOneOf("google_compute_region_backend_service: backend.balancing_mode", "backend.balancing_mode", "UTILIZATION", "RATE", "CONNECTION", "CUSTOM_METRICS"),
	},
	// terraform-provider-google: resource_compute_route.go (ExactlyOneOf over
	// the next_hop_* arguments).
	"google_compute_route": {
		exactlyOneOf("google_compute_route: exactly one next_hop_*", "next_hop_gateway", "next_hop_instance", "next_hop_ip", "next_hop_vpn_tunnel", "next_hop_ilb"),
	},
}

// lookupRules are what the clouds' APIs refuse for the data sources the
// sets read at plan time, by data source type.
var lookupRules = map[string][]rule{
	// OCI API GetPublicIpByIpAddress: public IPs are IPv4 objects (IPv6
	// addresses are Ipv6 objects, oci_core_ipv6); an IPv6 address is an
	// error from the API, not an empty result.
	"oci_core_public_ip": {ipv4Address("OCI API GetPublicIpByIpAddress: a public IP is an IPv4 address", "ip_address")},
}

// deprecatedAttributes are attributes the real provider marks deprecated
// whose mark the schema file does not carry, by resource type; paths as in
// rules.
var deprecatedAttributes = map[string][]string{
	// terraform-provider-oci: core route_table route_rules.cidr_block
	// ("Deprecated. Instead use destination and destination_type").
	"oci_core_route_table": {"route_rules.cidr_block"},
}

// markDeprecated sets the Deprecated flag of deprecatedAttributes in s.
func markDeprecated(s *ProviderSchema) {
	for typ, paths := range deprecatedAttributes {
		r, ok := s.Resources[typ]
		if !ok {
			continue
		}
		for _, p := range paths {
			block, name := at(p)
			b := r.Block
			for _, bn := range strings.Split(block, ".") {
				if bn == "" {
					continue
				}
				if b = nestedBlock(b, bn); b == nil {
					break
				}
			}
			if b == nil {
				continue
			}
			for _, a := range b.Attributes {
				if a.Name == name {
					a.Deprecated = true
				}
			}
		}
	}
}

func nestedBlock(b *tfprotov6.SchemaBlock, name string) *tfprotov6.SchemaBlock {
	for _, bt := range b.BlockTypes {
		if bt.TypeName == name {
			return bt.Block
		}
	}
	return nil
}

// validateConfig returns the diagnostics the real provider would give for
// a resource's (or data source's) configuration: required arguments with
// null values, then the rules.
func validateConfig(b *tfprotov6.SchemaBlock, rules []rule, v tftypes.Value) []*tfprotov6.Diagnostic {
	diags := checkRequired(b, v, tftypes.NewAttributePath(), "")
	for _, r := range rules {
		diags = append(diags, r.check(b, v)...)
	}
	return diags
}

// checkRequired reports every required attribute whose value is known to
// be null, in the block and its nested blocks. prefix names the nested
// block for the message.
func checkRequired(b *tfprotov6.SchemaBlock, v tftypes.Value, path *tftypes.AttributePath, prefix string) []*tfprotov6.Diagnostic {
	m, ok := objectOf(v)
	if !ok {
		return nil
	}
	var diags []*tfprotov6.Diagnostic
	for _, a := range b.Attributes {
		if av, ok := m[a.Name]; ok && a.Required && av.IsKnown() && av.IsNull() {
			d := &tfprotov6.Diagnostic{
				Severity: tfprotov6.DiagnosticSeverityError,
				Summary:  "Missing required argument",
				Detail:   fmt.Sprintf("The argument %q is required, but no definition was found.", prefix+a.Name),
			}
			if path != nil {
				d.Attribute = path.WithAttributeName(a.Name)
			}
			diags = append(diags, d)
		}
	}
	for _, bt := range b.BlockTypes {
		for _, e := range elements(m[bt.TypeName]) {
			// Paths into nested blocks would need element keys; the
			// message names the block instead.
			diags = append(diags, checkRequired(bt.Block, e, nil, prefix+bt.TypeName+".")...)
		}
	}
	return diags
}

// objectOf returns the attributes of a known, non-null object value.
func objectOf(v tftypes.Value) (map[string]tftypes.Value, bool) {
	if v.IsNull() || !v.IsKnown() || !v.Type().Is(tftypes.Object{}) {
		return nil, false
	}
	var m map[string]tftypes.Value
	if err := v.As(&m); err != nil {
		return nil, false
	}
	return m, true
}

// elements returns the known elements of a nested block value (a single
// block is one element).
func elements(v tftypes.Value) []tftypes.Value {
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	t := v.Type()
	switch {
	case t.Is(tftypes.List{}) || t.Is(tftypes.Set{}) || t.Is(tftypes.Tuple{}):
		var l []tftypes.Value
		if err := v.As(&l); err != nil {
			return nil
		}
		return l
	case t.Is(tftypes.Map{}):
		var m map[string]tftypes.Value
		if err := v.As(&m); err != nil {
			return nil
		}
		out := make([]tftypes.Value, 0, len(m))
		for _, k := range sortedNames(m) {
			out = append(out, m[k])
		}
		return out
	case t.Is(tftypes.Object{}):
		return []tftypes.Value{v}
	}
	return nil
}

// objectsAt returns the objects of the nested block at path (dots between
// block type names) in v; v itself for "".
func objectsAt(v tftypes.Value, path string) []tftypes.Value {
	objs := []tftypes.Value{v}
	if path == "" {
		return objs
	}
	for _, name := range strings.Split(path, ".") {
		var next []tftypes.Value
		for _, o := range objs {
			if m, ok := objectOf(o); ok {
				next = append(next, elements(m[name])...)
			}
		}
		objs = next
	}
	return objs
}

// setState is whether a configured value is set: null is not, an unknown
// value may be, and a block is set when it has an element.
type setState int

const (
	unset setState = iota
	set
	unknown
)

func stateOf(v tftypes.Value, ok bool) setState {
	switch {
	case !ok || v.IsNull():
		return unset
	case !v.IsKnown():
		return unknown
	}
	t := v.Type()
	if t.Is(tftypes.List{}) || t.Is(tftypes.Set{}) || t.Is(tftypes.Tuple{}) || t.Is(tftypes.Map{}) {
		if !v.IsFullyKnown() && len(elements(v)) == 0 {
			return unknown
		}
		if len(elements(v)) == 0 {
			return unset
		}
	}
	return set
}

func (r rule) check(b *tfprotov6.SchemaBlock, v tftypes.Value) []*tfprotov6.Diagnostic {
	var diags []*tfprotov6.Diagnostic
	where := ""
	if r.block != "" {
		where = r.block + "."
	}
	for _, obj := range objectsAt(v, r.block) {
		m, ok := objectOf(obj)
		if !ok {
			continue
		}
		if msg := r.checkObject(m, where); msg != "" {
			diags = append(diags, &tfprotov6.Diagnostic{
				Severity: tfprotov6.DiagnosticSeverityError,
				Summary:  "Invalid combination of arguments",
				Detail:   msg + " (" + r.doc + ")",
			})
			if r.kind == oneOf || r.kind == between || r.kind == ipv4 {
				diags[len(diags)-1].Summary = "Invalid value"
			}
		}
	}
	return diags
}

// checkObject returns the error message for one object, or "".
func (r rule) checkObject(m map[string]tftypes.Value, where string) string {
	var setNames []string
	anyUnknown := false
	for _, a := range r.attrs {
		av, ok := m[a]
		switch stateOf(av, ok) {
		case set:
			setNames = append(setNames, where+a)
		case unknown:
			anyUnknown = true
		}
	}
	names := func() string {
		var q []string
		for _, a := range r.attrs {
			q = append(q, fmt.Sprintf("%q", where+a))
		}
		return strings.Join(q, ", ")
	}
	switch r.kind {
	case conflicts:
		if len(setNames) > 1 {
			return fmt.Sprintf("only one of %s can be specified, but %s were specified", names(), strings.Join(setNames, ", "))
		}
	case exactlyOne:
		if len(setNames) > 1 {
			return fmt.Sprintf("only one of %s can be specified, but %s were specified", names(), strings.Join(setNames, ", "))
		}
		if len(setNames) == 0 && !anyUnknown {
			return fmt.Sprintf("one of %s must be specified", names())
		}
	case atLeastOne:
		if len(setNames) == 0 && !anyUnknown {
			return fmt.Sprintf("one of %s must be specified", names())
		}
	case oneOf, between, ipv4:
		av, ok := m[r.attrs[0]]
		if stateOf(av, ok) != set {
			return ""
		}
		return r.checkValue(where+r.attrs[0], av)
	}
	return ""
}

func (r rule) checkValue(name string, v tftypes.Value) string {
	switch r.kind {
	case oneOf:
		var s string
		if err := v.As(&s); err != nil {
			return ""
		}
		if !slices.Contains(r.values, s) {
			return fmt.Sprintf("expected %s to be one of %q, got %s", name, r.values, s)
		}
	case between:
		var n *big.Float
		if err := v.As(&n); err != nil || n == nil {
			return ""
		}
		i, _ := n.Int64()
		if !n.IsInt() || i < r.min || i > r.max {
			return fmt.Sprintf("expected %s to be in the range (%d - %d), got %s", name, r.min, r.max, n.String())
		}
	case ipv4:
		var s string
		if err := v.As(&s); err != nil {
			return ""
		}
		if a, err := netip.ParseAddr(s); err != nil || !a.Is4() {
			return fmt.Sprintf("%s %q is not an IPv4 address", name, s)
		}
	}
	return ""
}
