package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/internal/testkit"
)

// The access matrix: what each ServiceAccount of the chart (and a tenant
// and an approver beside them) may and may not do, declared once.
// TestChartAccessMatrix checks every row against a real apiserver the
// chart was applied to; TestSecurityDocUpToDate publishes it in
// docs/security.md.

// Where the matrix renders the chart: release "tfccm" in a namespace of
// its own, so the state's and the runners' are tfccm-state and
// tfccm-runners.
const (
	accessRelease  = "tfccm"
	releaseNS      = "tfccm-system"
	stateNS        = "tfccm-state"
	runnersNS      = "tfccm-runners"
	tenantNS       = "tenant-a"
	metricsNS      = "monitoring"
	approversGroup = "tfccm-approvers"
)

// valueSet is one set of chart values the matrix is checked with.
type valueSet struct {
	name, doc string
	values    string // YAML over testdata/helm/default.values.yaml
}

var valueSets = []valueSet{
	{"defaults", "the chart's defaults (kubernetes state backend)", ""},
	{"all", "review.enabled, review.approvers (group " + approversGroup + "), runner.enabled, runner.pool=2, uninstall.loadBalancers=delete, monitoring.metricsReaders, nodeAgent.enabled, nodeAgent.bgp (passwordSecrets tfccm-bgp)",
		`nodeAgent:
  enabled: true
  bgp:
    enabled: true
    passwordSecrets: [tfccm-bgp]
review:
  enabled: true
  approvers: [{kind: Group, name: ` + approversGroup + `}]
runner:
  enabled: true
  pool: 2
uninstall:
  loadBalancers: delete
monitoring:
  metricsReaders: [{name: prometheus, namespace: ` + metricsNS + `}]
`},
}

// tenantRules are what the tenant may do in its own namespace.
var tenantRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"services", "configmaps", "secrets", "events", "pods"}, Verbs: []string{"*"}},
	{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"*"}},
	{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"*"}},
}

// principal is who asks: a ServiceAccount, or a user with groups.
type principal struct {
	key, doc    string
	user        string
	groups      []string
	serviceAcct bool
}

func serviceAccount(key, doc, ns, name string) principal {
	return principal{key: key, doc: doc, user: "system:serviceaccount:" + ns + ":" + name, serviceAcct: true,
		groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
}

var principals = []principal{
	serviceAccount("ccm", "the CCM (`"+releaseNS+"/tfccm`)", releaseNS, "tfccm"),
	serviceAccount("runner", "runner pods (`"+runnersNS+"/tfccm-runner`)", runnersNS, "tfccm-runner"),
	serviceAccount("uninstall", "the uninstall hook (`"+releaseNS+"/tfccm-uninstall`)", releaseNS, "tfccm-uninstall"),
	serviceAccount("agent", "node mode's agents (`"+releaseNS+"/tfccm-node-agent`, nodeAgent.enabled)", releaseNS, "tfccm-node-agent"),
	serviceAccount("metrics", "a metrics reader (`"+metricsNS+"/prometheus`, monitoring.metricsReaders)", metricsNS, "prometheus"),
	{key: "tenant", doc: "a tenant (user `tenant`, every verb on Services, ConfigMaps, Secrets, Events, Pods, Deployments and Jobs in `" + tenantNS + "`, as `edit` gives)", user: "tenant", groups: []string{"system:authenticated"}},
	{key: "approver", doc: "an approver (user `alice` in group `" + approversGroup + "`)", user: "alice", groups: []string{approversGroup, "system:authenticated"}},
}

func principalByKey(key string) principal {
	for _, p := range principals {
		if p.key == key {
			return p
		}
	}
	panic("no principal " + key)
}

// access is one row: who may (or may not) do verb on resource in
// namespace ("" cluster-wide), optionally on one object (name) or a
// non-resource URL (path), with each value set's answer.
type access struct {
	who                       string
	verb, resource, sub, name string
	group                     string
	namespace                 string
	path                      string
	allowed                   map[string]bool // value set -> allowed
	// admission: RBAC allows it where allowed says so, but the approvers'
	// admission policy refuses the write (TestChartAccessMatrix patches
	// the object as the principal).
	admission bool
	why       string
}

// both and neither: the same answer with every value set.
var (
	both    = map[string]bool{"defaults": true, "all": true}
	neither = map[string]bool{"defaults": false, "all": false}
	allOnly = map[string]bool{"defaults": false, "all": true}
)

var accessMatrix = []access{
	// The CCM.
	{who: "ccm", verb: "get", resource: "secrets", allowed: neither, why: "no Secret rights cluster-wide"},
	{who: "ccm", verb: "create", resource: "secrets", namespace: "kube-system", allowed: neither, why: "cannot mint a token for a kube-system ServiceAccount"},
	{who: "ccm", verb: "get", resource: "secrets", namespace: "kube-system", name: "bootstrap-token-abcdef", allowed: neither, why: "reads no control-plane Secret"},
	{who: "ccm", verb: "create", resource: "secrets", namespace: tenantNS, allowed: neither, why: "writes nothing in a tenant's namespace"},
	{who: "ccm", verb: "create", resource: "configmaps", namespace: tenantNS, allowed: neither, why: "writes nothing in a tenant's namespace"},
	{who: "ccm", verb: "update", resource: "configmaps", namespace: "kube-system", name: "coredns", allowed: neither, why: "no ConfigMap writes outside its namespace"},
	{who: "ccm", verb: "get", resource: "configmaps", namespace: "kube-system", name: "extension-apiserver-authentication", allowed: both, why: "delegated authentication of /metrics and /healthz callers"},
	{who: "ccm", verb: "update", resource: "configmaps", namespace: releaseNS, name: "tfccm-incarnations", allowed: both, why: "every leader records itself (stale-lock recovery)"},
	{who: "ccm", verb: "get", resource: "configmaps", namespace: releaseNS, name: "tfccm-takeover", allowed: both, why: "compat { metallb_takeover = \"prepare\" }: reads which Services the admin took over from MetalLB"},
	{who: "ccm", verb: "get", resource: "configmaps", namespace: tenantNS, name: "tfccm-takeover", allowed: neither, why: "a take-over list in a tenant's namespace is not read"},
	{who: "ccm", verb: "update", resource: "configmaps", namespace: releaseNS, name: "tfccm-cloud-config", allowed: allOnly, why: "review: published plans are ConfigMaps of its namespace"},
	{who: "ccm", verb: "update", resource: "leases", group: "coordination.k8s.io", namespace: releaseNS, name: annotations.LeaderLease, allowed: both, why: "leader election, in its own namespace"},
	{who: "ccm", verb: "update", resource: "leases", group: "coordination.k8s.io", namespace: releaseNS, name: annotations.PreviousLeaderLease, allowed: both, why: "upgrades: held while leading so no pod of an earlier release leads"},
	{who: "ccm", verb: "update", resource: "leases", group: "coordination.k8s.io", namespace: "kube-system", name: "kube-controller-manager", allowed: neither, why: "no Lease outside its namespaces"},
	{who: "ccm", verb: "create", resource: "secrets", namespace: releaseNS, allowed: allOnly, why: "review: each plan sealed in a Secret, and the plan key"},
	{who: "ccm", verb: "get", resource: "secrets", namespace: releaseNS, name: "tfccm-plan-key", allowed: allOnly, why: "review: the plan key"},
	{who: "ccm", verb: "list", resource: "secrets", namespace: releaseNS, allowed: neither, why: "reads only Secrets it names"},
	{who: "ccm", verb: "list", resource: "secrets", namespace: stateNS, allowed: both, why: "kubernetes backend: state Secrets"},
	{who: "ccm", verb: "update", resource: "leases", group: "coordination.k8s.io", namespace: stateNS, name: "lock-tfstate-default-x", allowed: both, why: "kubernetes backend: state locks"},
	{who: "ccm", verb: "create", resource: "jobs", group: "batch", namespace: runnersNS, allowed: allOnly, why: "runner: starts runner Jobs"},
	{who: "ccm", verb: "get", resource: "secrets", namespace: runnersNS, name: "tfccm-run-x-out-0", allowed: allOnly, why: "runner: reads a run's result"},
	{who: "ccm", verb: "create", resource: "jobs", group: "batch", namespace: "kube-system", allowed: neither, why: "starts no Job in kube-system"},
	{who: "ccm", verb: "create", resource: "pods", namespace: runnersNS, allowed: neither, why: "runs no pod of its own"},
	{who: "ccm", verb: "list", resource: "events", namespace: runnersNS, allowed: allOnly, why: "runner: reads why a runner pod was refused (FailedCreate)"},
	{who: "ccm", verb: "create", resource: "pods", sub: "exec", namespace: runnersNS, name: "tfccm-runners-x-y-z", allowed: allOnly, why: "runner.pool: sends each tofu command to a pooled runner pod"},
	{who: "ccm", verb: "create", resource: "deployments", group: "apps", namespace: runnersNS, allowed: allOnly, why: "runner.pool: keeps the pool's Deployment"},
	{who: "ccm", verb: "delete", resource: "pods", namespace: runnersNS, name: "tfccm-runners-x-y-z", allowed: allOnly, why: "runner.pool: replaces a pooled pod that failed a request, spreads the pool"},
	{who: "ccm", verb: "create", resource: "pods", sub: "exec", namespace: releaseNS, name: "tfccm-x", allowed: neither, why: "execs into no pod outside the runners' namespace"},
	{who: "ccm", verb: "create", resource: "pods", sub: "exec", namespace: tenantNS, name: "web-x", allowed: neither, why: "execs into no tenant's pod"},
	{who: "ccm", verb: "create", resource: "deployments", group: "apps", namespace: "kube-system", allowed: neither, why: "creates no Deployment outside the runners' namespace"},
	{who: "ccm", verb: "create", resource: "serviceaccounts", sub: "token", namespace: "kube-system", name: "default", allowed: neither, why: "mints no token"},
	{who: "ccm", verb: "patch", resource: "services", sub: "status", namespace: tenantNS, allowed: both, why: "service controller: load balancer status"},
	{who: "ccm", verb: "delete", resource: "services", namespace: tenantNS, allowed: neither, why: "never deletes a Service"},
	{who: "ccm", verb: "delete", resource: "nodes", allowed: both, why: "cloud-node-lifecycle: Nodes whose instance is gone"},

	// Runner pods: untrusted code.
	{who: "runner", verb: "create", resource: "secrets", namespace: runnersNS, allowed: allOnly, why: "writes its result"},
	{who: "runner", verb: "get", resource: "secrets", namespace: runnersNS, name: "tfccm-run-x-in", allowed: neither, why: "cannot read another run's inputs (the kubelet mounts its own)"},
	{who: "runner", verb: "list", resource: "secrets", namespace: runnersNS, allowed: neither, why: "cannot list the runners' Secrets"},
	{who: "runner", verb: "update", resource: "secrets", namespace: stateNS, name: "tfstate-default-x", allowed: allOnly, why: "kubernetes backend: writes state"},
	{who: "runner", verb: "update", resource: "leases", group: "coordination.k8s.io", namespace: stateNS, name: "lock-tfstate-default-x", allowed: allOnly, why: "kubernetes backend: takes the state lock"},
	{who: "runner", verb: "get", resource: "secrets", namespace: releaseNS, name: "tfccm-plan-key", allowed: neither, why: "cannot read the plan key"},
	{who: "runner", verb: "get", resource: "secrets", namespace: "kube-system", allowed: neither, why: "reads no control-plane Secret"},
	{who: "runner", verb: "get", resource: "configmaps", namespace: releaseNS, name: "tfccm-plan-routes", allowed: neither, why: "cannot read or approve plans"},
	{who: "runner", verb: "create", resource: "jobs", group: "batch", namespace: runnersNS, allowed: neither, why: "starts no Job"},

	// The uninstall hook.
	{who: "uninstall", verb: "list", resource: "services", allowed: both, why: "`tfccm services`: the load balancers left"},
	{who: "uninstall", verb: "delete", resource: "services", namespace: tenantNS, allowed: allOnly, why: "uninstall.loadBalancers=delete only"},
	{who: "uninstall", verb: "get", resource: "secrets", namespace: releaseNS, allowed: neither, why: "nothing else"},

	// Node mode's agents (nodeAgent.enabled) and the CCM's side of it.
	{who: "agent", verb: "watch", resource: "nodes", allowed: allOnly, why: "node mode: which nodes may hold a VIP"},
	{who: "agent", verb: "watch", resource: "endpointslices", group: "discovery.k8s.io", allowed: allOnly, why: "node mode: ready endpoints per node (externalTrafficPolicy: Local)"},
	{who: "agent", verb: "watch", resource: "nodevips", group: "tfccm.io", namespace: releaseNS, allowed: allOnly, why: "node mode: the VIPs to serve"},
	{who: "agent", verb: "update", resource: "nodevips", group: "tfccm.io", sub: "status", namespace: releaseNS, name: "c-1a2b-4", allowed: allOnly, why: "node mode: reports the holder"},
	{who: "agent", verb: "update", resource: "nodevips", group: "tfccm.io", namespace: releaseNS, name: "c-1a2b-4", allowed: neither, why: "never changes a VIP's spec"},
	{who: "agent", verb: "update", resource: "nodes", name: "node-a", allowed: neither, why: "changes no Node"},
	{who: "agent", verb: "get", resource: "secrets", namespace: releaseNS, name: "tfccm-plan-key", allowed: neither, why: "reads no Secret (the kubelet mounts its gossip key)"},
	{who: "agent", verb: "watch", resource: "nodebgps", group: "tfccm.io", namespace: releaseNS, allowed: allOnly, why: "BGP mode: the nodes' peering"},
	{who: "agent", verb: "update", resource: "nodebgps", group: "tfccm.io", sub: "status", namespace: releaseNS, name: "nodes", allowed: allOnly, why: "BGP mode: reports its node's FRR"},
	{who: "agent", verb: "update", resource: "nodebgps", group: "tfccm.io", namespace: releaseNS, name: "nodes", allowed: neither, why: "never changes the peering"},
	{who: "agent", verb: "get", resource: "secrets", namespace: releaseNS, name: "tfccm-bgp", allowed: allOnly, why: "BGP mode: the peers' passwords, from the Secrets nodeAgent.bgp.passwordSecrets names only"},
	{who: "agent", verb: "list", resource: "secrets", namespace: releaseNS, allowed: neither, why: "lists no Secret"},
	{who: "agent", verb: "list", resource: "pods", allowed: neither, why: "nothing else"},
	{who: "ccm", verb: "create", resource: "nodevips", group: "tfccm.io", namespace: releaseNS, allowed: allOnly, why: "node mode: tofu's lbhost_node_vip writes the NodeVIPs"},
	{who: "ccm", verb: "create", resource: "nodevips", group: "tfccm.io", namespace: tenantNS, allowed: neither, why: "NodeVIPs only in its namespace"},
	{who: "runner", verb: "update", resource: "nodevips", group: "tfccm.io", namespace: releaseNS, name: "c-1a2b-4", allowed: allOnly, why: "node mode with runners: tofu's lbhost_node_vip writes the NodeVIPs"},
	{who: "runner", verb: "update", resource: "nodevips", group: "tfccm.io", sub: "status", namespace: releaseNS, name: "c-1a2b-4", allowed: neither, why: "never writes a VIP's status (the agents' report)"},
	{who: "tenant", verb: "create", resource: "nodevips", group: "tfccm.io", namespace: releaseNS, allowed: neither, why: "a VIP on the nodes is the admin's"},
	{who: "tenant", verb: "create", resource: "nodevips", group: "tfccm.io", namespace: tenantNS, allowed: neither, why: "no NodeVIP in its own namespace either"},
	{who: "ccm", verb: "update", resource: "nodebgps", group: "tfccm.io", namespace: releaseNS, name: "nodes", allowed: allOnly, why: "BGP mode: tofu's lbhost_node_bgp writes the nodes' peering"},
	{who: "tenant", verb: "update", resource: "nodebgps", group: "tfccm.io", namespace: releaseNS, name: "nodes", allowed: neither, why: "the nodes' peering is the admin's"},
	{who: "tenant", verb: "create", resource: "nodebgps", group: "tfccm.io", namespace: tenantNS, allowed: neither, why: "no NodeBGP in its own namespace either"},

	// A metrics reader.
	{who: "metrics", verb: "get", path: "/metrics", allowed: allOnly, why: "monitoring.metricsReaders"},
	{who: "metrics", verb: "list", resource: "services", allowed: neither, why: "nothing else"},

	// A tenant: edit in its own namespace.
	{who: "tenant", verb: "create", resource: "services", namespace: tenantNS, allowed: both, why: "owns its Services"},
	{who: "tenant", verb: "get", resource: "secrets", namespace: releaseNS, name: "tfccm-plan-key", allowed: neither, why: "cannot read tfccm's Secrets"},
	{who: "tenant", verb: "patch", resource: "configmaps", namespace: releaseNS, name: "tfccm-plan-lb-x", allowed: neither, why: "cannot approve a plan"},
	{who: "tenant", verb: "update", resource: "configmaps", namespace: releaseNS, name: "tfccm-cloud-config", allowed: neither, why: "cannot change an admin setting"},
	{who: "tenant", verb: "patch", resource: "configmaps", namespace: releaseNS, name: "tfccm-takeover", allowed: neither, why: "cannot take a Service over from MetalLB (the admin's tfccm takeover)"},
	{who: "tenant", verb: "get", resource: "secrets", namespace: stateNS, allowed: neither, why: "cannot read state"},
	{who: "tenant", verb: "create", resource: "jobs", group: "batch", namespace: runnersNS, allowed: neither, why: "cannot run in the runners' namespace"},
	{who: "tenant", verb: "create", resource: "pods", sub: "exec", namespace: runnersNS, name: "tfccm-runners-x-y-z", allowed: neither, why: "cannot exec into a pooled runner pod (its requests carry credentials)"},
	{who: "tenant", verb: "update", resource: "deployments", group: "apps", namespace: runnersNS, name: "tfccm-runners-x", allowed: neither, why: "cannot change the runner pool"},
	{who: "tenant", verb: "create", resource: "addresspools", group: "tfccm.io", allowed: neither, why: "an address pool is the admin's (docs/address-pools.md)"},
	{who: "tenant", verb: "update", resource: "addresspools", group: "tfccm.io", name: "web", allowed: neither, why: "cannot widen a pool or open it to its namespace"},
	{who: "ccm", verb: "watch", resource: "addresspools", group: "tfccm.io", allowed: both, why: "reads the AddressPool objects into its address book"},
	{who: "ccm", verb: "update", resource: "addresspools", group: "tfccm.io", sub: "status", name: "web", allowed: both, why: "the one writer of a pool's status (counts, conditions)"},
	{who: "ccm", verb: "update", resource: "addresspools", group: "tfccm.io", name: "web", allowed: neither, why: "never edits a pool's spec"},
	{who: "ccm", verb: "create", resource: "addresspools", group: "tfccm.io", allowed: neither, why: "never creates a pool"},
	{who: "ccm", verb: "watch", resource: "ipaddresspools", group: "metallb.io", allowed: both, why: "compat { metallb = true }: reads MetalLB's pools as they are"},
	{who: "ccm", verb: "update", resource: "ipaddresspools", group: "metallb.io", namespace: "metallb-system", name: "web", allowed: neither, why: "never edits MetalLB's pools (their status is MetalLB's)"},
	{who: "tenant", verb: "create", resource: "ipaddresspools", group: "metallb.io", namespace: "metallb-system", allowed: neither, why: "a MetalLB pool is the admin's too"},

	// An approver.
	{who: "approver", verb: "patch", resource: "configmaps", namespace: releaseNS, name: "tfccm-plan-lb-x", allowed: allOnly, why: "approves plans (review.approvers): annotations only, not a plan's data or labels (admission policy)"},
	{who: "approver", verb: "patch", resource: "configmaps", namespace: releaseNS, name: "tfccm-cloud-config", allowed: allOnly, admission: true, why: "cannot change an admin setting: the approvers' admission policy refuses any ConfigMap but a plan"},
	{who: "approver", verb: "get", resource: "secrets", namespace: releaseNS, name: "tfccm-plan-key", allowed: neither, why: "reads no Secret"},
	{who: "approver", verb: "patch", resource: "configmaps", namespace: "kube-system", allowed: neither, why: "nothing outside tfccm's namespace"},
	{who: "approver", verb: "patch", resource: "configmaps", namespace: tenantNS, allowed: neither, why: "nothing in a tenant's namespace"},
	{who: "approver", verb: "update", resource: "services", namespace: tenantNS, allowed: neither, why: "changes no Service"},
}

// what is the row's action as the doc shows it: "verb resource[/sub]
// [name]" or "verb /path".
func (a access) what() string {
	if a.path != "" {
		return a.verb + " `" + a.path + "`"
	}
	r := a.resource
	if a.sub != "" {
		r += "/" + a.sub
	}
	if a.group != "" {
		r += "." + a.group
	}
	s := a.verb + " " + r
	if a.name != "" {
		s += " `" + a.name + "`"
	}
	return s
}

func (a access) where() string {
	if a.path != "" {
		return "–"
	}
	if a.namespace == "" {
		return "all namespaces"
	}
	return "`" + a.namespace + "`"
}

// Markers of the generated section of docs/security.md.
const (
	accessBegin = "<!-- BEGIN GENERATED access matrix (go test ./deploy -run TestSecurityDocUpToDate -update) -->"
	accessEnd   = "<!-- END GENERATED access matrix -->"
)

// accessSection renders the matrix and what it was checked with,
// between its markers.
func accessSection() string {
	var b strings.Builder
	b.WriteString(accessBegin + "\n")
	b.WriteString("The Helm chart's RBAC, checked row by row against a real kube-apiserver the chart was applied to\n")
	b.WriteString("(SubjectAccessReviews; `TestChartAccessMatrix` in `deploy/`), as release `" + accessRelease + "` in `" + releaseNS + "`\n")
	b.WriteString("(the state in `" + stateNS + "`, runner Jobs in `" + runnersNS + "`), with two sets of values:\n\n")
	for _, v := range valueSets {
		fmt.Fprintf(&b, "- **%s**: %s\n", v.name, v.doc)
	}
	b.WriteString("\nWho asks:\n\n")
	for _, p := range principals {
		fmt.Fprintf(&b, "- **%s**: %s\n", p.key, p.doc)
	}
	b.WriteString("\n| Who | May they | Where | " + valueSets[0].name + " | " + valueSets[1].name + " | Why |\n|---|---|---|---|---|---|\n")
	answer := func(a access, set string) string {
		switch {
		case a.allowed[set] && a.admission:
			return "no (admission)"
		case a.allowed[set]:
			return "**yes**"
		}
		return "no"
	}
	for _, a := range accessMatrix {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", a.who, a.what(), a.where(), answer(a, valueSets[0].name), answer(a, valueSets[1].name), a.why)
	}
	b.WriteString(accessEnd + "\n")
	return b.String()
}

// securityDocument is docs/security.md when it does not exist yet: the
// section, rewritten between the markers from then on (the rest of the
// file is written by hand).
func securityDocument() string {
	return "# Security\n\n## What each ServiceAccount may do\n\n" + accessSection()
}

// spliceAccess replaces the table between the markers in doc; false if doc
// has no markers.
func spliceAccess(doc string) (string, bool) {
	i := strings.Index(doc, accessBegin)
	j := strings.Index(doc, accessEnd)
	if i < 0 || j < i {
		return doc, false
	}
	rest := strings.TrimPrefix(doc[j+len(accessEnd):], "\n")
	return doc[:i] + accessSection() + rest, true
}

// TestSecurityDocUpToDate fails when the matrix in docs/security.md is not
// the declaration's; -update rewrites it between its markers (or writes
// the file when it does not exist).
func TestSecurityDocUpToDate(t *testing.T) {
	path := filepath.Join("..", "docs", "security.md")
	want := securityDocument()
	if src, err := os.ReadFile(path); err == nil {
		if spliced, ok := spliceAccess(string(src)); ok {
			want = spliced
		}
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}
	testkit.Golden(t, path, []byte(want))
}

func TestSpliceAccess(t *testing.T) {
	in := "# Security\n\nintro\n" + accessBegin + "\nold\n" + accessEnd + "\n## Later\n"
	out, ok := spliceAccess(in)
	if !ok || !strings.HasPrefix(out, "# Security\n\nintro\n"+accessBegin) || !strings.HasSuffix(out, accessEnd+"\n## Later\n") || strings.Contains(out, "\nold\n") {
		t.Fatalf("spliceAccess = %q", out)
	}
	if _, ok := spliceAccess("no markers"); ok {
		t.Fatal("spliceAccess without markers reported ok")
	}
}

// TestAccessMatrixDeclared: every row names a declared principal and an
// answer for every value set (a missing one would read as "no").
func TestAccessMatrixDeclared(t *testing.T) {
	for _, a := range accessMatrix {
		principalByKey(a.who)
		for _, v := range valueSets {
			if _, ok := a.allowed[v.name]; !ok {
				t.Errorf("%s %s: no answer for %s", a.who, a.what(), v.name)
			}
		}
		if a.why == "" {
			t.Errorf("%s %s: no why", a.who, a.what())
		}
	}
}
