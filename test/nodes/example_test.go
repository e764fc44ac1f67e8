package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/tfccm/tfccm/deploy"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/lbhost/hosttest"
	"github.com/tfccm/tfccm/test/harness"
)

// exampleSudoUser is the LB hosts' unprivileged login (lbhost/hosttest' sudo
// tests use the same system user).
const exampleSudoUser = "tfccm-lbtest"

// TestChartExampleOnRealNodes installs the chart with
// deploy/helm/tfccm/examples/baremetal-proxmox.yaml as its values file, as
// the example's own header says (the SSH key Secret tfccm-ssh, the
// ConfigMap tfccm-infra with the infrastructure's backend), and serves a
// LoadBalancer Service through it. A second values file overrides only
// what differs on this machine:
//   - image: the image `make image` built, imported into the nodes;
//   - mode, replicas, hostNetwork, nodeSelector: one replica on node-a's
//     network (tfccm routes the pod network here, so it cannot run on it);
//   - extraArgs: the route controller's flags (these nodes have no CNI
//     routing: the CCM routes their pod ranges);
//   - cloudConfig.inline: the example's own, with the LB hosts' addresses,
//     host keys, login, config_dir and keepalived paths, vip_pool and
//     vrrp_interface replaced by the test hosts', and a routes block added.
//
// The example's instance mapping (the proxmox set's instances.hcl) reads
// a proxmox_virtual_environment_vm state the test writes for its two
// nodes into the tfccm-infra ConfigMap (a local backend): the nodes get
// the proxmox providerIDs, zone, region, instance type and addresses of
// their VMs.
func TestChartExampleOnRealNodes(t *testing.T) {
	needNodes(t)
	ctx := context.Background()
	archive := imageArchive(t)
	// No HostRoute: nothing here needs the apiserver to reach the kubelets
	// but the CCM pod's log on a failure.
	c := ForTest(t, Options{Nodes: 2})
	client := c.Client()
	ref, _, err := c.ImportImage(ctx, archive)
	if err != nil {
		t.Fatal(err)
	}
	hosts, err := hosttest.Start(ctx, hosttest.Options{Cloud: c.Cloud, Dir: t.TempDir(), SudoUser: exampleSudoUser})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hosts.Stop(); err != nil {
			t.Errorf("lbhosts: %v", err)
		}
	})
	if err := hosts.StartRouter(); err != nil {
		t.Fatal(err)
	}

	// What the example's header has the user create.
	key, err := os.ReadFile(hosts.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Secrets("kube-system").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "tfccm-ssh"},
		Data:       map[string][]byte{"id_ed25519": key},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vms, err := proxmoxState(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "tfccm-infra"},
		Data: map[string]string{
			"backend.tf":        "terraform {\n  backend \"local\" {}\n}\n",
			"terraform.tfstate": vms,
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	example := filepath.Join(root, deploy.Chart, "examples", "baremetal-proxmox.yaml")
	values, err := exampleOverrides(example, hosts, ref)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := harness.InstallChart(c.Kubeconfig(), "kube-system", "tfccm", values, t.TempDir(), example)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rel.Uninstall(2 * time.Minute); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("CCM pod log, last 80 lines:\n%s", ccmPodLogs(client, 80))
		}
	})
	ccmLog := func() string { return ccmPodLogs(client, 40) }
	waitCCMPod(t, client)

	// The nodes as the example's proxmox mapping reports their VMs.
	if err := harness.WaitNodesInitialized(ctx, client, 2*time.Minute); err != nil {
		t.Fatalf("%v\nCCM log:\n%s", err, ccmLog())
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		vmID := map[string]int{"node-a": 101, "node-b": 102}[n.Name]
		if want := fmt.Sprintf("proxmox://lab/%d", vmID); n.Spec.ProviderID != want {
			t.Errorf("node %s: providerID %q, want %q", n.Name, n.Spec.ProviderID, want)
		}
		for label, want := range map[string]string{
			corev1.LabelTopologyZone: "pve1", corev1.LabelTopologyRegion: "lab", corev1.LabelInstanceTypeStable: "2VCPU-4GB",
		} {
			if got := n.Labels[label]; got != want {
				t.Errorf("node %s: label %s = %q, want %q", n.Name, label, got, want)
			}
		}
		if want := c.Cloud.Node(n.Name).Address; !hasAddress(n, want) {
			t.Errorf("node %s: addresses %v, want InternalIP %s", n.Name, n.Status.Addresses, want)
		}
	}
	waitNodesReady(t, client)
	waitPodRoutes(t, c, nodes.Items)

	// A LoadBalancer Service served by the example's LB hosts (their sudo
	// login, the example's virtual_router_ids).
	podNames := runNetexecDeployment(t, client, 2)
	vip := createLBService(t, client, "web", ccmLog)
	waitServes(t, vip, podNames)
	if hosts.Master(vip) == nil {
		t.Errorf("no LB host holds the VIP %s", vip)
	}
	deleteLBService(t, client, hosts, "web", vip, ccmLog)
}

// exampleOverrides is the values file over the example: see
// TestChartExampleOnRealNodes for what it overrides and why. It fails when
// the example's inline config no longer has what it replaces.
func exampleOverrides(example string, hosts *hosttest.Hosts, ref string) (string, error) {
	b, err := os.ReadFile(example)
	if err != nil {
		return "", err
	}
	var ex struct {
		CloudConfig struct {
			Inline string `json:"inline"`
		} `json:"cloudConfig"`
	}
	if err := yaml.Unmarshal(b, &ex); err != nil {
		return "", fmt.Errorf("%s: %w", example, err)
	}
	inline := ex.CloudConfig.Inline
	settings := hosts.LBSettings()
	// with may refer to re's groups (${1}).
	replace := func(re, with string) error {
		r := regexp.MustCompile(re)
		if !r.MatchString(inline) {
			return fmt.Errorf("%s: the inline cloud config has no match of %s", example, re)
		}
		inline = r.ReplaceAllString(inline, with)
		return nil
	}
	for _, h := range hosts.Hosts {
		host := settings["hosts"].(map[string]any)[h.Name].(map[string]any)
		if err := replace(`(?m)^(\s*)`+regexp.QuoteMeta(h.Name)+` = \{.*\}$`, "${1}"+h.Name+" = "+harness.HCLObject(host)); err != nil {
			return "", err
		}
	}
	for _, k := range []string{"vip_pool", "vrrp_interface"} {
		if err := replace(`(?m)\b`+k+`(\s*)= "[^"]*"`, fmt.Sprintf("%s = %q", k, settings[k])); err != nil {
			return "", err
		}
	}
	routes := hosts.RoutesSettings()
	routes["ssh_private_key_file"] = podKey
	inline += "routes {\n  batch_window = \"1s\"\n  settings     = " + harness.HCLObject(routes) + "\n}\n"

	return fmt.Sprintf(`%s%sextraArgs: [%s]
cloudConfig:
  inline: |
%s
`, imageValues(ref), uninstallLayout, strings.Join(CCMFlags, ", "), indent(inline, "    ")), nil
}

// proxmoxState is a state of the bpg/proxmox provider with one
// proxmox_virtual_environment_vm per node of c (vm_id 101, 102, ... on
// Proxmox node pve1, tagged region-lab), the node's address from the
// guest agent.
func proxmoxState(c *Cluster) (string, error) {
	var instances []map[string]any
	for i, name := range []string{"node-a", "node-b"} {
		instances = append(instances, map[string]any{
			"index_key": name, "schema_version": 0, "sensitive_attributes": []any{},
			"attributes": map[string]any{
				"id": fmt.Sprint(101 + i), "vm_id": 101 + i, "name": name, "node_name": "pve1",
				"started": true, "template": false, "tags": []string{"region-lab"},
				"cpu":            []any{map[string]any{"cores": 2, "sockets": 1}},
				"memory":         []any{map[string]any{"dedicated": 4096}},
				"ipv4_addresses": [][]string{{"127.0.0.1"}, {c.Cloud.Node(name).Address}},
				"ipv6_addresses": [][]string{{"::1"}},
			},
		})
	}
	b, err := json.MarshalIndent(map[string]any{
		"version": 4, "terraform_version": "1.9.0", "serial": 1, "lineage": "6d1e0c2a-1b7e-4c55-9a57-3f0d2b9c1e11",
		"outputs": map[string]any{},
		"resources": []any{map[string]any{
			"mode": "managed", "type": "proxmox_virtual_environment_vm", "name": "node",
			"provider": `provider["registry.opentofu.org/bpg/proxmox"]`, "instances": instances,
		}},
	}, "", "  ")
	return string(b), err
}
