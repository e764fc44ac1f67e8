package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/internal/repo"
)

const renderedAgent = `---
# Source: tfccm/templates/nodeagent.yaml
apiVersion: v1
kind: ServiceAccount
metadata: {name: tfccm-node-agent, namespace: tfccm-system}
---
apiVersion: v1
kind: Secret
metadata: {name: tfccm-node-agent-gossip}
data: {key: c2VjcmV0}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: tfccm-node-agent}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: tfccm-node-agent}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: tfccm-node-agent}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tfccm-node-agent}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: tfccm-node-agent}
`

// The agents get the chart's RBAC objects, and only those: not its gossip
// key Secret or DaemonSet; a template missing one is an error.
func TestRBACDocs(t *testing.T) {
	got, err := rbacDocs([]byte(renderedAgent))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range agentRBACKinds {
		if !strings.Contains(string(got), "kind: "+k+"\n") {
			t.Errorf("no %s in:\n%s", k, got)
		}
	}
	for _, not := range []string{"Secret", "DaemonSet", "c2VjcmV0"} {
		if strings.Contains(string(got), not) {
			t.Errorf("%s kept:\n%s", not, got)
		}
	}
	noRole := strings.Replace(renderedAgent, "kind: Role\n", "kind: Other\n", 1)
	if _, err := rbacDocs([]byte(noRole)); err == nil || !strings.Contains(err.Error(), "has no Role") {
		t.Errorf("a template without its Role: %v", err)
	}
}

// The chart as shipped renders every RBAC object the run applies.
func TestRBACDocsOfTheChart(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	out, err := renderAgentTemplate(root, filepath.Join(root, "bin"))
	if err != nil {
		t.Skipf("%v (make tools installs bin/helm)", err)
	}
	got, err := rbacDocs(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "name: "+agentAccount+"\n") {
		t.Errorf("the chart's agent RBAC does not name %s:\n%s", agentAccount, got)
	}
}
