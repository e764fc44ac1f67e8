// Node mode as the default load balancer (--set nodes): the nodes set with
// a pool on the nodes' network, the NodeVIP CRD, and a node agent on each
// real node.

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/nodes"
)

// Node mode's namespace (the chart's default) and its pool: the upper
// part of the nodes' network (nodes.NodeNetwork), which the host reaches
// through the cloud's router (it ARPs for the VIPs there).
const (
	nodeModeNamespace = "tfccm-system"
	nodeModePool      = "10.250.0.200-10.250.0.250"
)

// nodeModeConfig is the CCM's cloud config for --set nodes: the nodes set
// for load balancers (its health module reads the holders into VIPHeld
// every 5 s); the pod-range routes and the instance inventory stay the
// local cloud's (its routes module and instances.hcl, through
// override_dir), as the other runs have them.
func nodeModeConfig(c *nodes.Cluster, root, bin, dir string) (harness.CloudConfig, error) {
	overrides := filepath.Join(dir, "templates")
	if err := os.CopyFS(filepath.Join(overrides, "routes"), os.DirFS(filepath.Join(root, "templates", "local", "routes"))); err != nil {
		return harness.CloudConfig{}, err
	}
	mapping, err := os.ReadFile(filepath.Join(root, "templates", "local", "instances.hcl"))
	if err != nil {
		return harness.CloudConfig{}, err
	}
	if err := os.WriteFile(filepath.Join(overrides, "instances.hcl"), mapping, 0o644); err != nil {
		return harness.CloudConfig{}, err
	}
	blocks := fmt.Sprintf("override_dir = %q\n", overrides) +
		fmt.Sprintf("load_balancer {\n  health_interval = \"5s\"\n  settings = {\n    namespace = %q\n  }\n  address_pool \"nodes\" {\n    addresses = [%q]\n  }\n}\n", nodeModeNamespace, nodeModePool) +
		"routes {\n  batch_window = \"1s\"\n  settings = " + harness.HCLObject(c.Cloud.RoutesSettings()) + "\n}\n" +
		fmt.Sprintf("instances {\n  ttl = \"5s\"\n  source \"infra\" {\n    dir = %q\n  }\n}\n", c.Cloud.InfraDir())
	return harness.CloudConfig{
		ClusterName: "conformance",
		WorkDir:     filepath.Join(dir, "tfccm"),
		TemplateSet: "nodes",
		Tofu:        filepath.Join(bin, "tofu"),
		Terraform:   []string{fmt.Sprintf("cli_config_file = %q", filepath.Join(bin, "lbhost.tfrc"))},
		Blocks:      blocks,
	}, nil
}

// kubeHome is a HOME for the CCM whose .kube/config is the cluster's
// admin kubeconfig.
func kubeHome(c *nodes.Cluster, dir string) (string, error) {
	home := filepath.Join(dir, "home")
	raw, err := os.ReadFile(c.Kubeconfig())
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		return "", err
	}
	return home, os.WriteFile(filepath.Join(home, ".kube", "config"), raw, 0o600)
}

// agents are the node agents --set nodes runs, one per real node.
type agents struct{ cmds []*exec.Cmd }

// startNodeAgents installs the chart's NodeVIP CRD and namespace and runs
// `tfccm node-agent` (bin/tfccm) on each real node: in the node's network
// namespace, beside its kubelet (whose /healthz it checks) and kube-proxy,
// gossiping on the node's address, as the chart's DaemonSet runs it
// (host network), with the credentials the chart gives it (a token of its
// ServiceAccount, bound by its RBAC: agentKubeconfig). Their logs are
// dir/agents/<node>.log.
func startNodeAgents(ctx context.Context, c *nodes.Cluster, root, bin, dir string) (*agents, error) {
	crd := filepath.Join(root, "deploy", "helm", "tfccm", "crds", "tfccm.io_nodevips.yaml")
	if out, err := exec.Command(filepath.Join(bin, "kubectl"), "--kubeconfig", c.Kubeconfig(), "apply", "-f", crd).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("the NodeVIP CRD: %v: %s", err, out)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nodeModeNamespace}}
	if _, err := c.Client().CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	// The agents reach the apiserver as the kubelets do (the host's
	// address in the cloud), as the chart's ServiceAccount with the
	// chart's RBAC and nothing more.
	kc, err := agentKubeconfig(ctx, c, root, bin, dir)
	if err != nil {
		return nil, err
	}
	key := filepath.Join(dir, "agents", "gossip.key")
	if err := os.MkdirAll(filepath.Dir(key), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(key, []byte(strings.Repeat("k", 32)), 0o600); err != nil {
		return nil, err
	}
	a := &agents{}
	for _, n := range c.Nodes {
		logf, err := os.Create(filepath.Join(dir, "agents", n.Name+".log"))
		if err != nil {
			a.stop()
			return nil, err
		}
		cmd := exec.Command("ip", "netns", "exec", n.Netns, filepath.Join(bin, "tfccm"), "node-agent",
			"--kubeconfig", kc, "--node-name", n.Name, "--namespace", nodeModeNamespace,
			"--gossip-address", n.Address, "--gossip-key-file", key, "--v", "2")
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			logf.Close()
			a.stop()
			return nil, fmt.Errorf("node agent on %s: %w", n.Name, err)
		}
		logf.Close()
		a.cmds = append(a.cmds, cmd)
	}
	return a, nil
}

// stop ends the agents (SIGTERM: they leave the gossip) and waits for them.
func (a *agents) stop() {
	for _, cmd := range a.cmds {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, cmd := range a.cmds {
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
}

// errNoSet is --set naming no template set the run knows.
var errNoSet = errors.New(`--set must be "local" (its --module the default) or "nodes" (node mode)`)
