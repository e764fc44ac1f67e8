// The node agents' credentials for --set nodes: the chart's agent
// ServiceAccount with the chart's RBAC, so the run proves the shipped
// RBAC suffices.

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/tfccm/tfccm/test/nodes"
)

// agentAccount is the chart's node-agent ServiceAccount for release
// "tfccm" (deploy/helm/tfccm/templates/nodeagent.yaml: <fullname>-node-agent).
const agentAccount = "tfccm-node-agent"

// agentRBACKinds are the kinds of the chart's node-agent template that
// give the agents their access (its gossip key Secret and DaemonSet are
// left out: the run starts the agents itself, with its own key).
var agentRBACKinds = []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}

// agentKubeconfig renders the chart's node-agent RBAC (helm template,
// nodeAgent.enabled, release tfccm in nodeModeNamespace), applies it, and
// writes dir/agents/node-agent.kubeconfig: a token of the agents'
// ServiceAccount, the apiserver at the host's address in the cloud (as the
// kubelets reach it).
func agentKubeconfig(ctx context.Context, c *nodes.Cluster, root, bin, dir string) (string, error) {
	out, err := renderAgentTemplate(root, bin)
	if err != nil {
		return "", err
	}
	rbac, err := rbacDocs(out)
	if err != nil {
		return "", err
	}
	kubectl := exec.Command(filepath.Join(bin, "kubectl"), "--kubeconfig", c.Kubeconfig(), "apply", "-f", "-")
	kubectl.Stdin = bytes.NewReader(rbac)
	if out, err := kubectl.CombinedOutput(); err != nil {
		return "", fmt.Errorf("apply the chart's node-agent RBAC: %v: %s", err, out)
	}
	expiry := int64(48 * 3600)
	tok, err := c.Client().CoreV1().ServiceAccounts(nodeModeNamespace).CreateToken(ctx, agentAccount,
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("a token of ServiceAccount %s/%s: %w", nodeModeNamespace, agentAccount, err)
	}
	u, err := url.Parse(c.Server())
	if err != nil {
		return "", err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = &clientcmdapi.Cluster{Server: "https://" + net.JoinHostPort(c.Cloud.HostAddress, u.Port()), CertificateAuthority: c.CACert()}
	cfg.AuthInfos[agentAccount] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["agent"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: agentAccount, Namespace: nodeModeNamespace}
	cfg.CurrentContext = "agent"
	path := filepath.Join(dir, "agents", "node-agent.kubeconfig")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("the agents' kubeconfig: %w", err)
	}
	return path, nil
}

// renderAgentTemplate is the chart's node-agent template rendered for
// release tfccm in nodeModeNamespace with nodeAgent.enabled (bin/helm).
func renderAgentTemplate(root, bin string) ([]byte, error) {
	out, err := exec.Command(filepath.Join(bin, "helm"), "template", "tfccm", filepath.Join(root, "deploy", "helm", "tfccm"),
		"--namespace", nodeModeNamespace, "--set", "nodeAgent.enabled=true",
		"--set", "cloudConfig.templateSet=nodes", "--set", "cloudConfig.clusterName=conformance",
		"--show-only", "templates/nodeagent.yaml").Output()
	if err != nil {
		return nil, fmt.Errorf("helm template (the chart's node-agent RBAC): %w", exitStderr(err))
	}
	return out, nil
}

// rbacDocs keeps, of a rendered template's documents, those of
// agentRBACKinds (as YAML documents), and checks every one is there.
func rbacDocs(rendered []byte) ([]byte, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(rendered), 4096)
	var docs [][]byte
	var kinds []string
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("the chart's node-agent template: %w", err)
		}
		kind, _ := obj["kind"].(string)
		if !slices.Contains(agentRBACKinds, kind) {
			continue
		}
		b, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		docs, kinds = append(docs, b), append(kinds, kind)
	}
	for _, k := range agentRBACKinds {
		if !slices.Contains(kinds, k) {
			return nil, fmt.Errorf("the chart's node-agent template has no %s (it has %s)", k, strings.Join(kinds, ", "))
		}
	}
	return bytes.Join(docs, []byte("---\n")), nil
}

// exitStderr adds a command's standard error to its exit error.
func exitStderr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
	}
	return err
}
