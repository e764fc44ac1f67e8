// A node-mode cluster on a segment: control plane, CRD, Nodes and their agents.

package l2seg

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
)

// Namespace is where the NodeVIPs live in these tests (the chart's default).
const Namespace = "tfccm-system"

// NodeMode is a control plane the segment's nodes reach, with the NodeVIP
// CRD, namespace Namespace, a Ready Node per segment node and an agent on
// each.
type NodeMode struct {
	Cluster *devcluster.Cluster
	Agents  map[string]*Agent
	// AgentKubeconfig is the agents' (reaching the host's segment address).
	AgentKubeconfig string
	bin, logs       string
	seg             *Segment
}

// StartNodeMode starts it; the segment needs Options.Host. Agents' logs are
// printed when the test fails.
func (s *Segment) StartNodeMode(t testing.TB, agentFlags ...string) *NodeMode {
	t.Helper()
	cluster := devcluster.ForTestWith(t, devcluster.Options{Address: s.HostAddr()})
	InstallNodeVIPCRD(t, cluster.RESTConfig())
	ctx := context.Background()
	client := cluster.Client()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range s.opts.Nodes {
		if _, err := harness.RegisterNode(ctx, client, harness.Node{Name: n, InternalIPs: []string{s.NodeAddr(n)}}); err != nil {
			t.Fatal(err)
		}
	}
	kc, err := cluster.UserKubeconfig("agent", s.HostAddr(), "agent", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	m := &NodeMode{Cluster: cluster, Agents: map[string]*Agent{}, AgentKubeconfig: kc, bin: Tfccm(t), logs: t.TempDir(), seg: s}
	for _, n := range s.opts.Nodes {
		m.Agents[n] = s.StartAgent(t, m.bin, n, kc, Namespace, m.logs, agentFlags...)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range s.opts.Nodes {
				raw, _ := os.ReadFile(filepath.Join(m.logs, "agent-"+n+".log"))
				t.Logf("agent %s:\n%s", n, raw)
			}
		}
	})
	return m
}

// Restart starts node's agent again (after Kill).
func (m *NodeMode) Restart(t testing.TB, node string, agentFlags ...string) {
	t.Helper()
	m.Agents[node] = m.seg.StartAgent(t, m.bin, node, m.AgentKubeconfig, Namespace, m.logs, agentFlags...)
}
