package templates

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/internal/tfvars"
	"github.com/tfccm/tfccm/workspace"
)

// Route is one route of the cluster's routes workspace.
type Route struct {
	// Name is the route's key (see RouteName); it carries the CIDR.
	Name                string
	DestinationCIDR     string
	TargetNode          string
	TargetNodeAddresses []corev1.NodeAddress
	Blackhole           bool
}

// Addresses are a Service's load balancer addresses as the address book
// (package ipam) decided them: allocated from a pool, chosen by
// annotation, shared, or kept from the Service's status.
type Addresses struct {
	// IPs are one address per family, primary first (none: the template
	// allocates).
	IPs []netip.Addr
	// Shared is the Service's share token, "" if it shares with no one.
	Shared string
	// Segments are the segments of IPs, one per IP (nil: the template's
	// default segment); none: every IP is on the default segment.
	Segments []*config.Segment
	// Standby prepares the load balancer without announcing its
	// addresses (service.announce = false): another controller (MetalLB,
	// during a migration) still announces them. Only a module whose
	// service input declares `announce` can prepare.
	Standby bool
}

// RenderLoadBalancer renders the workspace of svc's load balancer over
// nodes (already filtered by the service controller) with the Service's
// addresses from the address book. It is the one render entry point of a
// load balancer: the controller, `tfccm render` and `tfccm plan` call it.
// Errors are user-facing: they name the annotation or field and what was
// wrong.
func (s *Set) RenderLoadBalancer(cfg *config.Config, svc *corev1.Service, nodes []*corev1.Node, addrs Addresses) (*workspace.Spec, error) {
	r, err := s.renderLoadBalancer(cfg, svc, nodes, addrs)
	if err != nil {
		return nil, err
	}
	r.Spec.Owner = &workspace.Owner{Namespace: svc.Namespace, Name: svc.Name, UID: string(svc.UID)}
	return r.Spec, nil
}

func (s *Set) renderLoadBalancer(cfg *config.Config, svc *corev1.Service, nodes []*corev1.Node, addrs Addresses) (*rendered, error) {
	if svc == nil {
		return nil, fmt.Errorf("render load balancer: no Service")
	}
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	if err := annotations.Check(svc.Annotations); err != nil {
		return nil, err
	}
	m, err := s.loadBalancerModule(svc)
	if err != nil {
		return nil, err
	}
	adopt, err := adoptVal(cfg, m, svc)
	if err != nil {
		return nil, err
	}
	retain, err := retainOnDelete(cfg, svc)
	if err != nil {
		return nil, err
	}
	if addrs.Standby && !declaresAnnounce(m) {
		return nil, fmt.Errorf("template %s cannot prepare a load balancer without announcing it (its service input declares no announce): "+
			"take the Service over (docs/migrate-from-metallb.md) or use a template that declares service.announce", m.Key)
	}
	service := serviceVal(svc, addrs)
	vars, _, _ := annotations.Vars.Get(svc.Annotations)
	if err := checkServiceVars(cfg.LoadBalancer, vars); err != nil {
		return nil, err
	}
	settings, err := settingsVal(m, cfg.LoadBalancer.Settings, "load_balancer.settings", vars, cfg.LoadBalancer.AllowsServiceVar)
	if err != nil {
		return nil, err
	}
	inputs := map[string]cty.Value{
		AdoptVar:             adopt,
		"cluster_name":       str(cfg.ClusterName),
		"load_balancer_name": str(LoadBalancerName(cfg, svc)),
		"load_balancer_id":   str(LoadBalancerID(cfg, svc)),
		"service":            service,
		"nodes":              nodesVal(nodes),
		"health_check":       healthCheckVal(cfg, svc),
		SettingsVar:          settings,
	}
	r, err := s.render(cfg, m, LoadBalancerWorkspaceName(cfg, svc), inputs)
	if err != nil {
		return nil, err
	}
	r.Spec.Adopts, r.Spec.Retain = adopt != cty.NilVal, retain
	return r, nil
}

// RenderRoutes renders the cluster's routes workspace.
func (s *Set) RenderRoutes(cfg *config.Config, routes []Route) (*workspace.Spec, error) {
	r, err := s.renderRoutes(cfg, routes)
	if err != nil {
		return nil, err
	}
	return r.Spec, nil
}

func (s *Set) renderRoutes(cfg *config.Config, routes []Route) (*rendered, error) {
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	m, ok := s.modules[string(KindRoutes)]
	if !ok {
		return nil, fmt.Errorf("render routes: the template set has no routes module; add one with override_dir or turn the facet off with routes { enabled = false }")
	}
	vals := map[string]cty.Value{}
	for _, r := range routes {
		if r.Name == "" {
			return nil, fmt.Errorf("render routes: route to %s has no name", r.DestinationCIDR)
		}
		if _, dup := vals[r.Name]; dup {
			return nil, fmt.Errorf("render routes: route %q appears twice", r.Name)
		}
		if _, err := netip.ParsePrefix(r.DestinationCIDR); err != nil {
			return nil, fmt.Errorf("render routes: route %q: destination %q is not a CIDR", r.Name, r.DestinationCIDR)
		}
		if r.TargetNode == "" && !r.Blackhole {
			return nil, fmt.Errorf("render routes: route %q has no target node", r.Name)
		}
		vals[strings.ToValidUTF8(r.Name, "\uFFFD")] = cty.ObjectVal(map[string]cty.Value{
			"destination_cidr":      str(r.DestinationCIDR),
			"target_node":           optStr(r.TargetNode),
			"target_node_addresses": addressesVal(r.TargetNodeAddresses),
			"blackhole":             cty.BoolVal(r.Blackhole),
		})
	}
	routesVal := cty.MapValEmpty(RouteType)
	if len(vals) > 0 {
		routesVal = cty.MapVal(vals)
	}
	settings, err := settingsVal(m, cfg.Routes.Settings, "routes.settings", nil, nil)
	if err != nil {
		return nil, err
	}
	inputs := map[string]cty.Value{
		"cluster_name": str(cfg.ClusterName),
		"routes":       routesVal,
		SettingsVar:    settings,
	}
	return s.render(cfg, m, RoutesWorkspaceName, inputs)
}

// checkConfig rejects a config that did not come from config.Parse/Load,
// which fills in the defaults rendering relies on.
func checkConfig(cfg *config.Config) error {
	if cfg == nil || cfg.LoadBalancer == nil || cfg.LoadBalancer.HealthCheck == nil || cfg.Routes == nil || cfg.Backend == nil {
		return fmt.Errorf("render: the cloud config must be loaded with config.Load or config.Parse (defaults missing)")
	}
	return nil
}

// RoutesFromNodes derives one route per pod CIDR of each node (dual-stack
// nodes get two), named with RouteName, sorted by name.
func RoutesFromNodes(nodes []*corev1.Node) []Route {
	var out []Route
	for _, n := range nodes {
		cidrs := n.Spec.PodCIDRs
		if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
			cidrs = []string{n.Spec.PodCIDR}
		}
		for _, c := range cidrs {
			out = append(out, Route{Name: RouteName(n.Name, c), DestinationCIDR: c, TargetNode: n.Name,
				TargetNodeAddresses: n.Status.Addresses})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (s *Set) loadBalancerModule(svc *corev1.Service) (*Module, error) {
	variant, set, _ := annotations.Template.Get(svc.Annotations) // validated by Check
	key := string(KindLoadBalancer)
	if set && variant != "default" {
		key += "." + variant
	}
	m, ok := s.modules[key]
	if !ok {
		installed := strings.Join(s.Variants(), ", ")
		if installed == "" {
			// An instances-only set (proxmox, vsphere: clouds without a
			// load balancer product).
			return nil, fmt.Errorf("the template set has no load balancer module (its cloud has no load balancer product): " +
				"add one with override_dir (e.g. the baremetal set's loadbalancer/ for HAProxy/keepalived hosts), " +
				"or turn the facet off with load_balancer { enabled = false } and use another controller for Services of type LoadBalancer")
		}
		if !set {
			return nil, fmt.Errorf("the template set has no default load balancer module (installed variants: %s; pick one with annotation %s)", installed, annotations.Template.Name)
		}
		return nil, fmt.Errorf("annotation %s: variant %s is not installed (installed: %s)", annotations.Template.Name, annotations.Quote(variant), installed)
	}
	return m, nil
}

func serviceVal(svc *corev1.Service, addrs Addresses) cty.Value {
	a := svc.Annotations
	proxy, _, _ := annotations.ProxyProtocol.Get(a)
	internal, _, _ := annotations.Internal.Get(a)
	ips, shared := addrs.IPs, optStr(addrs.Shared)
	lbIP, lbIPs := cty.NullVal(cty.String), cty.ListValEmpty(cty.String)
	if len(ips) > 0 {
		lbIP = str(ips[0].String())
		vals := make([]cty.Value, len(ips))
		for i, ip := range ips {
			vals[i] = str(ip.String())
		}
		lbIPs = cty.ListVal(vals)
	}
	etp := string(svc.Spec.ExternalTrafficPolicy)
	if etp == "" {
		etp = string(corev1.ServiceExternalTrafficPolicyCluster)
	}
	hcPort := cty.NullVal(cty.Number)
	if etp == string(corev1.ServiceExternalTrafficPolicyLocal) {
		hcPort = optNum(svc.Spec.HealthCheckNodePort)
	}
	families := make([]string, 0, len(svc.Spec.IPFamilies))
	for _, f := range svc.Spec.IPFamilies {
		families = append(families, string(f))
	}
	if len(families) == 0 {
		families = []string{string(corev1.IPv4Protocol)}
	}
	policy := string(corev1.IPFamilyPolicySingleStack)
	if svc.Spec.IPFamilyPolicy != nil {
		policy = string(*svc.Spec.IPFamilyPolicy)
	}
	affinity := string(svc.Spec.SessionAffinity)
	if affinity == "" {
		affinity = string(corev1.ServiceAffinityNone)
	}
	return cty.ObjectVal(map[string]cty.Value{
		"uid":                     str(string(svc.UID)),
		"namespace":               str(svc.Namespace),
		"name":                    str(svc.Name),
		"annotations":             strMap(svc.Annotations, droppedAnnotations),
		"labels":                  strMap(svc.Labels, nil),
		"ports":                   portsVal(svc.Spec.Ports),
		"load_balancer_ip":        lbIP,
		"load_balancer_ips":       lbIPs,
		"shared_ip":               shared,
		"segments":                segmentsVal(ips, addrs.Segments),
		"source_ranges":           strList(svc.Spec.LoadBalancerSourceRanges),
		"external_traffic_policy": str(etp),
		"health_check_node_port":  hcPort,
		"ip_families":             strList(families),
		"ip_family_policy":        str(policy),
		"session_affinity":        str(affinity),
		"proxy_protocol":          cty.BoolVal(proxy),
		"internal":                cty.BoolVal(internal),
		"announce":                cty.BoolVal(!addrs.Standby),
	})
}

// declaresAnnounce reports whether m's service input has `announce`: the
// template can prepare a load balancer without announcing it.
func declaresAnnounce(m *Module) bool {
	v, ok := m.Variables["service"]
	return ok && v.Type.IsObjectType() && v.Type.HasAttribute("announce")
}

// segmentsVal is the service.segments map: by address, the segment of
// each address not on the template's default one.
func segmentsVal(ips []netip.Addr, segs []*config.Segment) cty.Value {
	out := map[string]cty.Value{}
	for i, ip := range ips {
		if i >= len(segs) || segs[i] == nil {
			continue
		}
		n := segs[i].Network
		hosts, subnet := strList(n.Hosts), n.Subnet
		if ip.Is6() {
			subnet = n.Subnet6
		}
		out[ip.String()] = cty.ObjectVal(map[string]cty.Value{
			"pool":      str(segs[i].Pool),
			"interface": optStr(n.Interface),
			"hosts":     hosts,
			"subnet":    optStr(subnet),
		})
	}
	if len(out) == 0 {
		return cty.MapValEmpty(SegmentType)
	}
	return cty.MapVal(out)
}

// healthCheckVal: ETP=Local checks kube-proxy's per-Service health check
// node port; otherwise the cloud config's default.
func healthCheckVal(cfg *config.Config, svc *corev1.Service) cty.Value {
	if svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal && svc.Spec.HealthCheckNodePort != 0 {
		return cty.ObjectVal(map[string]cty.Value{"protocol": str(config.DefaultHealthCheckProtocol), "port": cty.NumberIntVal(int64(svc.Spec.HealthCheckNodePort)), "path": str(config.DefaultHealthCheckPath)})
	}
	hc := cfg.LoadBalancer.HealthCheck
	return cty.ObjectVal(map[string]cty.Value{"protocol": str(hc.Protocol), "port": cty.NumberIntVal(int64(hc.Port)), "path": optStr(hc.Path)})
}

// settingsVal merges the cluster settings (from field of the cloud config)
// with per-Service vars (already checked against perService: whether
// load_balancer.service_vars allows a key; nil for none) and checks every key against the type
// the module declares for settings. Keys of the cluster settings the
// template does not declare are dropped (settings are shared by all
// variants); unknown keys in tfccm.io/vars are errors.
func settingsVal(m *Module, cluster cty.Value, field string, vars map[string]json.RawMessage, perService func(key string) bool) (cty.Value, error) {
	v, declared := m.Variables[SettingsVar]
	if !declared {
		if len(vars) > 0 {
			return cty.NilVal, fmt.Errorf("annotation %s: template %s declares no settings, so it takes no vars", annotations.Vars.Name, m.Key)
		}
		return cty.NilVal, nil
	}
	merged, err := mergeSettings(cluster, field, vars)
	if err != nil {
		return cty.NilVal, err
	}
	fromVars := func(k string) bool { _, ok := vars[k]; return ok }
	conv := func(e setting, t cty.Type) (cty.Value, error) {
		out, err := convert.Convert(e.val, t)
		if err != nil {
			return cty.NilVal, fmt.Errorf("%s: want %s: %v", e.from, typeString(t), err)
		}
		return out, nil
	}
	t := v.Type
	switch {
	case t == cty.DynamicPseudoType:
		out := map[string]cty.Value{}
		for k, e := range merged {
			out[k] = e.val
		}
		return cty.ObjectVal(out), nil
	case t.IsMapType():
		out := map[string]cty.Value{}
		for _, k := range sortedKeys(merged) {
			cv, err := conv(merged[k], t.ElementType())
			if err != nil {
				return cty.NilVal, err
			}
			out[k] = cv
		}
		if len(out) == 0 {
			return cty.MapValEmpty(t.ElementType()), nil
		}
		return cty.MapVal(out), nil
	case t.IsObjectType():
		out := map[string]cty.Value{}
		for _, k := range sortedKeys(merged) {
			if !t.HasAttribute(k) {
				if fromVars(k) {
					return cty.NilVal, fmt.Errorf("annotation %s: unknown key %s (template %s accepts: %s)", annotations.Vars.Name, annotations.Quote(k), m.Key, strings.Join(sortedKeys(t.AttributeTypes()), ", "))
				}
				continue
			}
			cv, err := conv(merged[k], t.AttributeType(k))
			if err != nil {
				return cty.NilVal, err
			}
			out[k] = cv
		}
		for _, a := range sortedKeys(t.AttributeTypes()) {
			if _, ok := out[a]; ok {
				continue
			}
			if !t.AttributeOptional(a) {
				return cty.NilVal, fmt.Errorf("settings: template %s requires key %q; set it in %s of the cloud config%s", m.Key, a, field, orPerService(a, perService))
			}
			out[a] = cty.NullVal(t.AttributeType(a))
		}
		return cty.ObjectVal(out), nil
	}
	return cty.NilVal, fmt.Errorf("template %s: settings must be an object, a map or any", m.Key)
}

// setting is one settings key's value and where it came from, for errors.
type setting struct {
	val  cty.Value
	from string
}

// mergeSettings overlays the Service's tfccm.io/vars on the cluster's
// settings (the cloud config's field).
func mergeSettings(cluster cty.Value, field string, vars map[string]json.RawMessage) (map[string]setting, error) {
	merged := map[string]setting{}
	if cluster != cty.NilVal && !cluster.IsNull() && cluster.CanIterateElements() {
		for it := cluster.ElementIterator(); it.Next(); {
			k, val := it.Element()
			merged[k.AsString()] = setting{val, fmt.Sprintf("%s.%s in the cloud config", field, k.AsString())}
		}
	}
	for _, k := range sortedKeys(vars) {
		raw := vars[k]
		t, err := ctyjson.ImpliedType(raw)
		if err != nil {
			return nil, fmt.Errorf("annotation %s: key %s: %v", annotations.Vars.Name, annotations.Quote(k), err)
		}
		val, err := ctyjson.Unmarshal(raw, t)
		if err != nil {
			return nil, fmt.Errorf("annotation %s: key %s: %v", annotations.Vars.Name, annotations.Quote(k), err)
		}
		merged[k] = setting{val, fmt.Sprintf("annotation %s: key %q", annotations.Vars.Name, k)}
	}
	return merged, nil
}

// render converts each input the module declares to its declared type and
// assembles the workspace.
func (s *Set) render(cfg *config.Config, m *Module, name string, inputs map[string]cty.Value) (*rendered, error) {
	p := tfvars.NewPrinter("# Generated by tfccm; do not edit. Inputs of template " + m.Key + ".\n")
	written := map[string]cty.Value{}
	for _, vn := range sortedKeys(m.Variables) {
		val, ok := inputs[vn]
		if !ok || val == cty.NilVal {
			continue // not an engine input: the template's default applies
		}
		decl := m.Variables[vn]
		cv, err := convert.Convert(val, decl.Type)
		if err != nil {
			return nil, fmt.Errorf("render %s: input %s does not fit the declared type %s: %v", m.Key, vn, typeString(decl.Type), err)
		}
		if err := p.Attribute(vn, cv); err != nil {
			if errors.Is(err, tfvars.ErrNotKnown) {
				return nil, fmt.Errorf("render %s: input %s is not fully known", m.Key, vn)
			}
			return nil, fmt.Errorf("render %s: input %s: %w", m.Key, vn, err)
		}
		written[vn] = cv
	}
	ws := newSpec(name)
	for _, mf := range m.Files {
		addFile(ws, mf.Path, mf.Data, mf.Exec)
	}
	addFile(ws, TfvarsFile, p.Bytes(), false) // formatted as hclwrite does (tofu fmt clean)
	if err := addBackend(ws, cfg); err != nil {
		return nil, err
	}
	ws.Module = m.Key
	ws.Coalesce = m.Kind == KindLoadBalancer
	ws.Hash = ws.ContentHash()
	return &rendered{Spec: ws, inputs: written}, nil
}
