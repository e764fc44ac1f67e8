package templates

import (
	"sort"

	"github.com/zclconf/go-cty/cty"

	"github.com/tfccm/tfccm/workspace"
)

// Kind is what a module is for: the one declaration of the workspace
// kinds, which policy rules also see (workspace.kind, through package
// gate).
type Kind string

// Module and workspace kinds.
const (
	KindLoadBalancer Kind = "loadbalancer"
	KindRoutes       Kind = "routes"
	// KindHealth is a load balancer module's health module (its HealthDir
	// subdirectory): it gets the load balancer's inputs.
	KindHealth Kind = "health"
	// KindHostHealth is a set's hosts health module (HostHealthDir): one
	// read of every LB host for all the set's load balancers
	// (hosthealth.go).
	KindHostHealth Kind = "hosthealth"
	// KindPeering is a set's BGP peering module (PeeringDir): the hosts'
	// (and Linux routers') side of the BGP sessions, one cluster
	// workspace (PeeringWorkspaceName) applied by tfccm when the
	// cluster's load_balancer.settings carry a bgp block (peering.go).
	KindPeering Kind = "bgp"
)

// InstancesFile is the name of a set's state-to-instance mapping.
const InstancesFile = "instances.hcl"

// Reserved file names the renderer writes into every workspace; a template
// may not contain them.
const (
	TfvarsFile   = "tfccm.auto.tfvars"
	BackendFile  = "tfccm_backend.tf"
	ManifestFile = workspace.ManifestFile // written by workspace.Spec.WriteDir
)

// SettingsVar is the template-defined input of cluster settings.
const SettingsVar = "settings"

var addressType = cty.Object(map[string]cty.Type{"type": cty.String, "address": cty.String})

// SegmentType is the type of one element of the `service.segments` map
// (by address): the network block of the address's pool.
var SegmentType = cty.Object(map[string]cty.Type{
	"pool":      cty.String,
	"interface": cty.String,
	"hosts":     cty.List(cty.String),
	"subnet":    cty.String,
})

// ServiceType is the full type of the load balancer `service` input.
var ServiceType = cty.Object(map[string]cty.Type{
	"uid":         cty.String,
	"namespace":   cty.String,
	"name":        cty.String,
	"annotations": cty.Map(cty.String),
	"labels":      cty.Map(cty.String),
	"ports": cty.List(cty.Object(map[string]cty.Type{
		"name":         cty.String,
		"protocol":     cty.String,
		"port":         cty.Number,
		"node_port":    cty.Number,
		"app_protocol": cty.String,
	})),
	"load_balancer_ip":        cty.String,
	"load_balancer_ips":       cty.List(cty.String),
	"shared_ip":               cty.String,
	"segments":                cty.Map(SegmentType),
	"source_ranges":           cty.List(cty.String),
	"external_traffic_policy": cty.String,
	"health_check_node_port":  cty.Number,
	"ip_families":             cty.List(cty.String),
	"ip_family_policy":        cty.String,
	"session_affinity":        cty.String,
	"proxy_protocol":          cty.Bool,
	"internal":                cty.Bool,
	"announce":                cty.Bool,
})

// NodeType is the type of one element of the `nodes` input.
var NodeType = cty.Object(map[string]cty.Type{
	"name":          cty.String,
	"provider_id":   cty.String,
	"addresses":     cty.List(addressType),
	"zone":          cty.String,
	"region":        cty.String,
	"instance_type": cty.String,
	"labels":        cty.Map(cty.String),
})

// healthCheckType is the type of the `health_check` input.
var healthCheckType = cty.Object(map[string]cty.Type{"protocol": cty.String, "port": cty.Number, "path": cty.String})

// RouteType is the type of one element of the routes module's `routes` input.
var RouteType = cty.Object(map[string]cty.Type{
	"destination_cidr":      cty.String,
	"target_node":           cty.String,
	"target_node_addresses": cty.List(addressType),
	"blackhole":             cty.Bool,
})

// Inputs are the inputs the engine provides to each kind of module, with
// their exact types. `settings` is template-defined (cty.DynamicPseudoType
// here): it must be an object, a map or `any`.
var Inputs = map[Kind]map[string]cty.Type{
	KindLoadBalancer: {
		"cluster_name":       cty.String,
		"load_balancer_name": cty.String,
		"load_balancer_id":   cty.String,
		"service":            ServiceType,
		"nodes":              cty.List(NodeType),
		"health_check":       healthCheckType,
		SettingsVar:          cty.DynamicPseudoType,
	},
	KindRoutes: {
		"cluster_name": cty.String,
		"routes":       cty.Map(RouteType),
		SettingsVar:    cty.DynamicPseudoType,
	},
}

func init() {
	Inputs[KindHealth] = Inputs[KindLoadBalancer]
	Inputs[KindHostHealth] = map[string]cty.Type{
		"cluster_name":   cty.String,
		HostHealthLBsVar: cty.Map(HostHealthLBType),
		SettingsVar:      cty.DynamicPseudoType,
	}
	// The peering gets the load balancer modules' settings (with their
	// bgp block) and nothing of any Service.
	Inputs[KindPeering] = map[string]cty.Type{
		"cluster_name": cty.String,
		SettingsVar:    cty.DynamicPseudoType,
	}
}

// RequiredOutputs are the outputs each kind of module must declare.
var RequiredOutputs = map[Kind][]string{
	KindLoadBalancer: {"ingress"},
	KindRoutes:       {"routes"},
	KindHealth:       {HealthOutput},
	KindHostHealth:   {HostHealthOutput},
}

func inputNames(k Kind) []string {
	var out []string
	for n := range Inputs[k] {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
