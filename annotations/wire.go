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

// The review mode's wire keys. Every object they mark lives in tfccm's own
// namespace (the cloud config's `namespace`, default kube-system), which
// only the cluster admin and the approvers it names may write: the admin's
// side of the trust boundary (docs/security.md), never a tenant's.
var (
	// PlanHash on a plan ConfigMap is the hash to approve.
	PlanHash = wire(Prefix+"plan-hash", "annotation", "plan ConfigMap and Secret",
		"The sha256 of the saved plan the ConfigMap publishes: the value an approver puts in `"+Prefix+"approved-plan` on that ConfigMap (what `tfccm approve` does).")
	// PlanKind on a plan ConfigMap or Secret says whose plan it is:
	// PlanOfLoadBalancer, PlanOfRoutes or PlanOfPeering. tfccm watches the ConfigMaps of
	// its namespace carrying it.
	PlanKind = wire(Prefix+"plan", "label", "plan ConfigMap and Secret",
		"Admin side (tfccm's namespace): `load-balancer`, `routes` or `bgp-peering`, whose plan the object holds. tfccm watches the ConfigMaps of its namespace with this label for approvals (`kubectl get configmaps -n NAMESPACE -l "+Prefix+"plan`).")
	// PlanServiceUID on a plan ConfigMap is the owning Service's UID.
	PlanServiceUID = wire(Prefix+"service-uid", "label", "plan ConfigMap and Secret",
		"The UID of the Service whose load balancer plan the object holds (absent on the routes plan). A plan whose Service UID no longer exists (and whose load balancer is not being destroyed) is deleted by the orphan sweep.")
	// PlanServiceNamespace on a plan ConfigMap is the Service's namespace.
	PlanServiceNamespace = wire(Prefix+"service-namespace", "label", "plan ConfigMap and Secret",
		"Admin side (tfccm's namespace): the namespace of the Service whose load balancer plan the object holds; an approver's `tfccm approve --namespace N --service S` selects by it and the next label, so an approver needs no access to the Service's namespace.")
	// PlanServiceName on a plan ConfigMap is the Service's name.
	PlanServiceName = wire(Prefix+"service-name", "label", "plan ConfigMap and Secret",
		"Admin side (tfccm's namespace): the name of the Service whose load balancer plan the object holds.")
	// ManagedBy marks the objects tfccm creates (value "tfccm").
	ManagedBy = wire("app.kubernetes.io/managed-by", "label", "plan ConfigMap and Secret",
		"`tfccm` on every object tfccm creates.")
	// PlanConfigMapPrefix starts the name of a plan ConfigMap:
	// PlanConfigMapPrefix + workspace name.
	PlanConfigMapPrefix = wire("tfccm-plan-", "name", "plan ConfigMap and Secret",
		"A pending plan is published in ConfigMap `tfccm-plan-<workspace>` in tfccm's namespace (cloud config `namespace`), for a load balancer (the workspace name derives from the Service UID) as for the routes workspace; an approver approves it by setting `"+Prefix+"approved-plan` on that ConfigMap. The Secret of the same name keeps the saved plan itself, sealed, so that an approval still applies after a controller restart. Both are deleted once the plan is applied, superseded or destroyed, or its Service is gone. Objects of this name in a Service's own namespace (where earlier versions of tfccm published plans, and where a tenant may write anything) are never read.")
	// PlanKeySecret names the Secret (in tfccm's namespace) holding the
	// key that seals the plan Secrets.
	PlanKeySecret = wire("tfccm-plan-key", "name", "Secret in tfccm's namespace",
		"The key (32 random bytes, created by tfccm on first use) that seals review mode's plan Secrets `tfccm-plan-<workspace>` (AES-256-GCM). Deleting it makes the kept plans unreadable: pending plans are then planned again after a restart and need a new approval.")
)

// The values of PlanKind.
const (
	PlanOfLoadBalancer = "load-balancer"
	PlanOfRoutes       = "routes"
	PlanOfPeering      = "bgp-peering"
)

// Incarnations names the ConfigMap (in tfccm's namespace) where every
// leader records the user@host its tofu runs lock state as.
var Incarnations = wire("tfccm-incarnations", "name", "ConfigMap in tfccm's namespace",
	"Each controller that becomes leader adds the `user@host` its tofu runs hold state locks as. A new leader releases a state lock held by an earlier entry (that incarnation no longer leads), so stale locks are recovered without a persistent `work_dir`; locks held by anyone else are only reported.")

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

// LeaderLease is the default name of the leader Lease (in the namespace
// of --leader-elect-resource-namespace, the chart's release namespace):
// tfccm's own, so that another cloud-controller-manager of the cluster,
// which leads through upstream's default Lease PreviousLeaderLease, does
// not share it.
var LeaderLease = wire("tfccm", "name", "Lease in tfccm's namespace",
	"The leader Lease: the replica holding it runs the controllers and tofu. Its holder identity is `<pod>_<uuid>`; `kubectl tfccm status` reads it to name the leader. Releases before this one used upstream's default `"+PreviousLeaderLease+"`; see docs/operations.md#upgrade.")

// PreviousLeaderLease is the leader Lease name of tfccm releases that used
// upstream's default. During an upgrade from one, the new leader waits for
// it to be free and holds it while it leads
// (--leader-elect-previous-lease), so no pod of the earlier release leads
// at the same time.
const PreviousLeaderLease = "cloud-controller-manager"

// The leader Lease's annotations naming the leader's pod. A pod's host
// name is its name, except with host networking (the chart's daemonset
// mode, hostNetwork: true), where it is the node's: the holder identity
// `<host>_<uuid>` then does not name the pod. The leader writes both when
// it starts leading (its pod from the downward API's POD_NAME), and
// `kubectl tfccm` trusts LeaderPod only while LeaderIdentity is the
// Lease's holder.
var (
	LeaderIdentity = wire(Prefix+"leader-identity", "annotation", "Lease in tfccm's namespace",
		"The holder identity of the leader that wrote `"+Prefix+"leader-pod`; a later holder's Lease no longer matches it, so a stale pod name is never shown.")
	LeaderPod = wire(Prefix+"leader-pod", "annotation", "Lease in tfccm's namespace",
		"The pod the leader runs in (the chart passes its name as `POD_NAME`): how `kubectl tfccm status`, `workspaces` and `unlock` find the leader's pod also with host networking, where the holder identity names the node.")
)
