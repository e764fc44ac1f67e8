package annotations

import "sort"

// Wire is a key tfccm writes on objects of its own (the review mode's plan
// ConfigMaps), not on Services: users and tools read them, tfccm's CLI
// matches on them. They are declared here with the Service annotations so
// every tfccm.io/ key lives in one place and is documented from it; a
// Service carrying one of them is still refused as unknown by Check.
type Wire struct {
	// Name is the full key (or, for PlanConfigMapPrefix, the name prefix).
	Name string
	// Kind is "annotation", "label" or "name".
	Kind string
	// On is the object it is written on.
	On string
	// Doc describes it (Markdown, one paragraph).
	Doc string
}

var wireRegistry []Wire

func wire(name, kind, on, doc string) string {
	wireRegistry = append(wireRegistry, Wire{Name: name, Kind: kind, On: on, Doc: doc})
	return name
}

// WireKeys returns every declared wire key, sorted by name.
func WireKeys() []Wire {
	out := append([]Wire(nil), wireRegistry...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// The review mode's wire keys.
var (
	// PlanHash on a plan ConfigMap is the hash to approve.
	PlanHash = wire(Prefix+"plan-hash", "annotation", "plan ConfigMap",
		"The sha256 of the saved plan the ConfigMap publishes: the value to put in `"+Prefix+"approved-plan` (or pass to `tfccm approve`).")
	// PlanServiceUID on a plan ConfigMap is the owning Service's UID.
	PlanServiceUID = wire(Prefix+"service-uid", "label", "plan ConfigMap",
		"The UID of the Service whose load balancer plan the ConfigMap publishes (absent on the routes plan); `tfccm approve` selects by it.")
	// ManagedBy marks the objects tfccm creates (value "tfccm").
	ManagedBy = wire("app.kubernetes.io/managed-by", "label", "plan ConfigMap",
		"`tfccm` on every object tfccm creates.")
	// PlanConfigMapPrefix starts the name of a plan ConfigMap:
	// PlanConfigMapPrefix + workspace name.
	PlanConfigMapPrefix = wire("tfccm-plan-", "name", "plan ConfigMap",
		"A pending plan is published in ConfigMap `tfccm-plan-<workspace>`: in the Service's namespace for a load balancer, in `"+RoutesPlanNamespace+"` for the routes workspace.")
)

// Incarnations names the ConfigMap (in RoutesPlanNamespace) where every
// leader records the user@host its tofu runs lock state as.
var Incarnations = wire("tfccm-incarnations", "name", "ConfigMap in kube-system",
	"Each controller that becomes leader adds the `user@host` its tofu runs hold state locks as. A new leader releases a state lock held by an earlier entry (that incarnation no longer leads), so stale locks are recovered without a persistent `work_dir`; locks held by anyone else are only reported.")

// RoutesPlanNamespace is where the routes workspace's plan is published.
const RoutesPlanNamespace = "kube-system"

// PlanConfigMapName is the ConfigMap that publishes workspace's pending plan.
func PlanConfigMapName(workspaceName string) string { return PlanConfigMapPrefix + workspaceName }

// ClassFinalizer guards the load balancer of a Service of tfccm's load
// balancer class (config load_balancer_class): tfccm's class loop adds it
// before applying and removes it once the load balancer is destroyed.
// Class-less Services keep the service controller's own finalizer, which
// that controller acts on for any Service carrying it (so a classed
// Service must not).
var ClassFinalizer = wire(Prefix+"load-balancer-cleanup", "finalizer", "Service of tfccm's load balancer class",
	"tfccm's counterpart of `service.kubernetes.io/load-balancer-cleanup` on Services whose `spec.loadBalancerClass` is tfccm's: the Service is deleted only after its load balancer is destroyed; a type change away from LoadBalancer destroys it and removes the finalizer.")
