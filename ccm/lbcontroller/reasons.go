package lbcontroller

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Reason describes one Event reason tfccm records: declared once here,
// published in docs/events.md (eventsDocument, checked by
// TestEventsDocUpToDate).
type Reason struct {
	// Name is the Event's reason, e.g. "TerraformApplied".
	Name string
	// Type is the Event type: Normal or Warning.
	Type string
	// Doc says when it is recorded and what to do (Markdown, one paragraph).
	Doc string
}

var declaredReasons []Reason

func declareReason(name, typ, doc string) string {
	for _, r := range declaredReasons {
		if r.Name == name {
			panic("event reason " + name + " declared twice")
		}
	}
	declaredReasons = append(declaredReasons, Reason{Name: name, Type: typ, Doc: doc})
	return name
}

// The Event reasons tfccm records on Services. Keep docs short and
// user-facing; they are published.
var (
	ReasonRunnerPoolPending = declareReason("RunnerPoolPending", corev1.EventTypeWarning,
		"Recorded on the runner pool's Deployment (`terraform.job.pool`, in the job namespace), not on a Service: a pooled runner pod stayed unscheduled for a minute; the message names the pods and the scheduler's reason (resources, node selector, taints). Commands wait for a free pod meanwhile; give the pods room or lower the pool (docs/scale.md#runner-pool).")
	ReasonRenderFailed = declareReason("TerraformRenderFailed", corev1.EventTypeWarning,
		"The Service's workspace could not be rendered: an invalid `tfccm.io/` annotation, a setting the template does not declare, an unknown template variant, or a template set without a load balancer module. Nothing is applied; fix the Service (or the cloud config).")
	ReasonTakenOver = declareReason("LoadBalancerTakenOver", corev1.EventTypeNormal,
		"A Service prepared while MetalLB announced it (`compat { metallb_takeover = \"prepare\" }`) was taken over (`tfccm takeover`): the apply that raised its addresses is done, and tfccm announces them now. Stop MetalLB's speakers next (docs/migrate-from-metallb.md).")
	ReasonPeeringFailed = declareReason("BGPPeeringFailed", corev1.EventTypeWarning,
		"Recorded on every Service of the `bgp` variant: the cluster's BGP peering workspace (`bgp-peering`, the LB hosts' and Linux routers' side of the sessions, from `load_balancer.settings.bgp`) failed to render, plan, apply or destroy; the message names the workspace and the step, not the error (it may name the admin's peers and hosts): the CCM's log line `BGP peering failed` carries it. The Service's announcements wait for the peering; tfccm retries with backoff (docs/bgp.md).")
	ReasonPeeringKept = declareReason("BGPPeeringKept", corev1.EventTypeWarning,
		"Recorded on every Service of the `bgp` variant: `bgp` was removed from `load_balancer.settings` but the peering workspace is not destroyed while a Service still announces over it (its VIPs would become unreachable). The message counts these Services (naming none: a tenant sees its own Events); the CCM's log names them. Move or delete them; the peering is destroyed once none is left.")
	ReasonApplied = declareReason("TerraformApplied", corev1.EventTypeNormal,
		"The load balancer's plan was applied (or had no changes), with how long it took.")
	ReasonApplying = declareReason("TerraformApplying", corev1.EventTypeNormal,
		"A plan with changes starts being applied; the message has its summary (\"2 to add, 1 to change, 0 to destroy\"). `TerraformApplied` or `TerraformApplyFailed` follows when it ends.")
	ReasonApplyFailed = declareReason("TerraformApplyFailed", corev1.EventTypeWarning,
		"`tofu init`, `plan` or `apply` failed; the message carries tofu's diagnostic (credentials scrubbed) and the attempt. Retried with exponential backoff; a retry of the same failure is not recorded again.")
	ReasonDestroyed = declareReason("TerraformDestroyed", corev1.EventTypeNormal,
		"The load balancer's workspace was destroyed and its state removed; the Service's finalizer goes next.")
	ReasonDestroyFailed = declareReason("TerraformDestroyFailed", corev1.EventTypeWarning,
		"Destroying the load balancer failed; retried with backoff, and the Service keeps its finalizer until it succeeds.")
	ReasonStateLocked = declareReason("TerraformStateLocked", corev1.EventTypeWarning,
		"The workspace's state is locked by someone tfccm cannot prove gone; tfccm never steals it. `tfccm unlock --workspace NAME` shows the holder and releases the lock once you know it is gone.")
	ReasonInvalidIngress = declareReason("TerraformInvalidIngress", corev1.EventTypeWarning,
		"The template's `ingress` output is not a valid list of `{ip, hostname, ip_mode}`; the Service gets no status until the template is fixed.")
	ReasonBGPSessionDown = declareReason("BGPSessionDown", corev1.EventTypeWarning,
		"Baremetal's bgp variant: a BGP session of an LB host is not Established; the message names the host, the peer (by its name in `settings.bgp`) and the session's state, as `tfccm.io/BGPEstablished` does. The host announces nothing to that peer meanwhile. Recorded once per message on every Service of the variant (docs/bgp.md#troubleshooting).")
	ReasonVIPSplitBrain = declareReason("VIPSplitBrain", corev1.EventTypeWarning,
		"Two or more LB hosts (VRRP) or nodes (node mode: the NodeVIP's `status.contenders`) answer for one of the Service's VIPs at once: they do not hear each other, so clients reach whichever answered ARP/NDP last. The message names them, as `tfccm.io/VIPHeld=False` `SplitBrain` does; recorded once per message (docs/operations.md#tfccmvipsplitbrain, docs/node-mode.md#split-brain).")
	ReasonDriftRepaired = declareReason("TerraformDriftRepaired", corev1.EventTypeWarning,
		"The periodic re-plan (`terraform.drift_interval`) found the infrastructure changed outside tfccm and re-applied the load balancer.")
	ReasonDriftFailed = declareReason("TerraformDriftCheckFailed", corev1.EventTypeWarning,
		"The periodic re-plan of an applied load balancer failed; it is tried again at the next interval.")
	ReasonProviderChecksumMismatch = declareReason("TerraformProviderChecksumMismatch", corev1.EventTypeWarning,
		"A provider's package does not match the checksums of the workspace's dependency lock file (the cluster admin's terraform.provider_lock_file, or the first init's): tofu refused to run it and nothing was applied. The message names the provider; the lock file is kept, and runs go on failing until the package matches (docs/operations.md#provider-integrity).")
	ReasonInvalidInput = declareReason("TerraformInvalidInput", corev1.EventTypeWarning,
		"The template's own validation or a precondition rejected the Service's inputs; nothing is retried until the Service (or its `tfccm.io/vars`) changes.")
	ReasonTemplateRejected = declareReason("TerraformTemplateRejected", corev1.EventTypeWarning,
		"A changed override directory (`override_dir`) is invalid; the last good templates keep serving. Recorded on every served Service.")
	ReasonPlanPendingApproval = declareReason("TerraformPlanPendingApproval", corev1.EventTypeNormal,
		"Review mode: a plan with changes was published (ConfigMap `tfccm-plan-<workspace>` in tfccm's namespace) and waits for an approver to set `tfccm.io/approved-plan` with its hash on that ConfigMap (`tfccm approve`).")
	ReasonPlanNotApproved = declareReason("TerraformPlanApprovalRefused", corev1.EventTypeWarning,
		"Review mode: `tfccm.io/approved-plan` on the plan's ConfigMap names a hash that is not the pending plan's (stale or unknown); nothing is applied.")
	ReasonApprovalIgnored = declareReason("TerraformApprovalIgnored", corev1.EventTypeWarning,
		"The Service carries `tfccm.io/approved-plan`: an annotation on a Service approves nothing, since the Service's namespace tenant writes it and a tenant may not approve their own plan. The message names the plan's ConfigMap in tfccm's namespace, where an approver approves it (`tfccm approve`). Recorded once per annotation value; nothing is applied.")
	ReasonPlanDenied = declareReason("TerraformPlanDenied", corev1.EventTypeWarning,
		"A `policy` rule of the cloud config with `action = \"deny\"` failed on the plan; the message names the rule. Nothing is applied (the old load balancer keeps serving) and nothing is retried until the Service, the templates or the policy change.")
	ReasonPolicyWarning = declareReason("TerraformPlanPolicyWarning", corev1.EventTypeWarning,
		"A `policy` rule with `action = \"warn\"` failed on a plan, which goes on as it would without the rule (applied, or published for approval); the message names the rule.")
	ReasonPlanApprovedByPolicy = declareReason("TerraformPlanApprovedByPolicy", corev1.EventTypeNormal,
		"In review mode, a `policy` rule with `action = \"approve\"` passed on a plan (e.g. `backends-only-without-review`: only backends change), so it was applied without a person's approval; the message names the rule.")
	ReasonChangeWindowClosed = declareReason("TerraformChangeWindowClosed", corev1.EventTypeNormal,
		"A plan with changes was made outside the cloud config's `change_windows` (or during a freeze): it is published like a plan awaiting approval but not applied, and the old load balancer keeps serving. The message says when the next window opens; the plan is made again and applied then.")
	ReasonPlanStale = declareReason("TerraformPlanStale", corev1.EventTypeWarning,
		"Review mode: an approved plan was made against a state that has changed since (another apply, an edit by hand, a plan kept across a controller restart while something else applied): it is not applied, and a new plan is published for approval. The message names both states' lineage and serial.")
	ReasonClassAnnotationIgnored = declareReason("TerraformClassAnnotationIgnored", corev1.EventTypeWarning,
		"The LoadBalancer Service carries `service.kubernetes.io/load-balancer-class`, an annotation only ever proposed and read by nothing; the class is the field `spec.loadBalancerClass`, which can only be set while changing the Service's type (to NodePort, then back to LoadBalancer with the class). Recorded once per annotation value.")
	ReasonNameTaken = declareReason("LoadBalancerNameTaken", corev1.EventTypeWarning,
		"The Service's `tfccm.io/name` is held by another Service, named in the message (in any namespace: the oldest Service by creation time, then UID, holds a name). Nothing is applied for this Service and its running load balancer, if any, is untouched; condition `tfccm.io/Accepted` is False with reason `NameTaken`. It is accepted once the holder is deleted or renamed.")
	ReasonPlanAlreadyApplied = declareReason("TerraformPlanAlreadyApplied", corev1.EventTypeNormal,
		"Review mode: the approval names a plan that was applied already; nothing to do (a new change gets a new plan).")
)

// The Event reasons of load balancer addresses (addresses.go,
// docs/address-pools.md).
var (
	ReasonAddressAssigned = declareReason("LoadBalancerIPAssigned", corev1.EventTypeNormal,
		"With address pools: the Service's addresses changed (first assignment included), or tfccm serves it for the first time and keeps the addresses in its status (a Service migrated from MetalLB or another implementation: \"kept from the Service's status\"; a Service tfccm served before a restart gets none); the message names them, their pool and the Services sharing them.")
	ReasonAddressConflict = declareReason("LoadBalancerIPConflict", corev1.EventTypeWarning,
		"An address the Service needs is held by another Service, named in the message, that does not share it with this one (no or another `tfccm.io/allow-shared-ip` key, a port and protocol both use, or `externalTrafficPolicy: Local` with another selector). Nothing is applied; the holder is untouched.")
	ReasonAddressPoolExhausted = declareReason("AddressPoolExhausted", corev1.EventTypeWarning,
		"No pool that may serve the Service has a free address of the family it needs; the message names the pools (metric `tfccm_address_pool_exhausted_total`). Nothing is applied; retried with backoff.")
	ReasonAddressRefused = declareReason("LoadBalancerIPRefused", corev1.EventTypeWarning,
		"The Service's address request cannot be met as it is: an address outside every address pool, an unknown pool, two annotations that disagree, an address of a family the Service lacks, or `tfccm.io/allow-shared-ip` without address pools. Nothing is applied.")
	ReasonLoadBalancerIPDeprecated = declareReason("LoadBalancerIPDeprecated", corev1.EventTypeNormal,
		"The Service requests its address with `spec.loadBalancerIP`, deprecated since Kubernetes 1.24: still honoured; `tfccm.io/load-balancer-ips` replaces it (and takes one address per family).")
)

// allReasons returns every declared Event reason, sorted by name.
func allReasons() []Reason {
	out := append([]Reason(nil), declaredReasons...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// eventsDocument renders docs/events.md from the declarations.
func eventsDocument() string {
	var b strings.Builder
	b.WriteString("# Events\n\n")
	b.WriteString("Generated from the declarations in package `lbcontroller` (reasons.go); do not edit by hand\n")
	b.WriteString("(`go generate ./ccm/lbcontroller`). tfccm records these Events on Services (`kubectl describe service`,\n")
	b.WriteString("`kubectl get events --field-selector involvedObject.name=NAME`); the service controller adds its own\n")
	b.WriteString("(`EnsuringLoadBalancer`, `SyncLoadBalancerFailed`, ...), which tfccm's class loop records the same way on\n")
	b.WriteString("Services of its `load_balancer_class`. Messages never carry a secret.\n\n")
	b.WriteString("An input tfccm refuses (`TerraformRenderFailed`, `LoadBalancerIPRefused`, `TerraformInvalidInput`)\n")
	b.WriteString("is one Warning, tfccm's, naming the problem, with `tfccm.io/Accepted=False`: the service controller\n")
	b.WriteString("records every error EnsureLoadBalancer returns as `SyncLoadBalancerFailed` and retries it, so tfccm\n")
	b.WriteString("answers it the no-op `cloudprovider.ImplementedElsewhere` (no Event, no status write, no retry): an\n")
	b.WriteString("edit of the Service makes it ask again, and a template change (`override_dir`) that accepts the inputs\n")
	b.WriteString("is applied by tfccm, which then writes the Service's address itself. Other failures (a failed apply, a taken address, an exhausted\n")
	b.WriteString("pool, a denied plan) are errors the service controller retries, each with its `SyncLoadBalancerFailed`.\n\n")
	b.WriteString("| Reason | Type | When |\n|---|---|---|\n")
	for _, r := range allReasons() {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.Name, r.Type, strings.ReplaceAll(r.Doc, "|", `\|`))
	}
	return b.String()
}
