package nodes

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/docs"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/lbhost/hosttest"
	"github.com/tfccm/tfccm/test/harness"
)

// quickstartPage is the page TestQuickstart runs.
const quickstartPage = "docs/quickstart-baremetal.md"

// The page's example addresses, replaced by the test hosts'.
const (
	exampleHostA   = "192.168.10.2"
	exampleHostB   = "192.168.10.3"
	exampleVIPPool = "192.168.10.128/25"
)

// TestQuickstart runs docs/quickstart-baremetal.md's own command blocks in
// order, as a user types them, from two fresh Debian hosts (lbhost/hosttest
// Fresh: sshd with root's admin key, nothing else) and a cluster of two
// real nodes to the curl through the VIP: once with the sudo login, once
// with root. It counts the commands the page has the user type and times
// them. What the test itself adds (the page says it too): the example
// addresses replaced by the hosts', ssh with the admin key, systemd's part
// on the hosts (StartServices after the script's systemctl restart), and
// a second values file for helm install (the image, the host network of
// node-a, the pod-range routes these nodes need, and their inventory: their
// kubelets run with --cloud-provider=external, so tfccm initializes them).
func TestQuickstart(t *testing.T) {
	needNodes(t)
	for _, variant := range []string{"sudo", "root"} {
		t.Run(variant, func(t *testing.T) { runQuickstart(t, variant) })
	}
}

func runQuickstart(t *testing.T, variant string) {
	ctx := context.Background()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, quickstartPage))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := docs.BlocksRunBy(quickstartPage, string(src), "TestQuickstart", variant)
	if err != nil {
		t.Fatal(err)
	}
	archive := imageArchive(t)
	c := ForTest(t, Options{Nodes: 2})
	ref, _, err := c.ImportImage(ctx, archive)
	if err != nil {
		t.Fatal(err)
	}
	hosts, err := hosttest.Start(ctx, hosttest.Options{Cloud: c.Cloud, Dir: t.TempDir(), Fresh: true})
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
	work := t.TempDir()
	env, err := quickstartEnv(root, work, c, hosts, ref)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { quickstartCleanup(t, root, work, env) })
	replace := strings.NewReplacer(exampleHostA, hosts.Hosts[0].Address, exampleHostB, hosts.Hosts[1].Address, exampleVIPPool, hosts.VIPPool)
	commands, total, last := 0, time.Duration(0), ""
	for i, b := range blocks {
		n := countCommands(b)
		start := time.Now()
		out, err := runBlock(work, env, replace.Replace(b))
		took := time.Since(start)
		commands, total, last = commands+n, total+took, out
		t.Logf("block %d (%d commands, %s):\n%s\n%s", i+1, n, took.Round(time.Second), strings.TrimSpace(b), out)
		if err != nil {
			t.Fatalf("block %d: %v\nCCM log:\n%s", i+1, err, ccmPodLogs(c.Client(), 60))
		}
		if err := afterBlock(ctx, work, hosts); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("QUICKSTART %s: %d commands typed, %s for the page's commands", variant, commands, total.Round(time.Second))
	list, err := c.Client().CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	var pods []string
	for _, p := range list.Items {
		pods = append(pods, p.Name)
	}
	lines := strings.Split(strings.TrimSpace(last), "\n")
	if answer := lines[len(lines)-1]; !slices.Contains(pods, answer) {
		t.Errorf("the curl answered %q, not one of the pods %v", answer, pods)
	}
	svc, err := c.Client().CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || len(svc.Status.LoadBalancer.Ingress) == 0 {
		t.Fatalf("the Service web: %v %v", err, svc.Status)
	}
	if vip := svc.Status.LoadBalancer.Ingress[0].IP; hosts.Master(vip) == nil {
		t.Errorf("no LB host holds the VIP %s", vip)
	}
	if commands > 15 {
		t.Errorf("the page has the user type %d commands, more than 15", commands)
	}
}

// quickstartEnv is the page's environment: tfccm, kubectl and helm from
// bin/ (helm with the machine's values file after install's), ssh with the
// hosts' admin key, the cluster's kubeconfig, a checkout's deploy/ in the
// working directory.
func quickstartEnv(root, work string, c *Cluster, hosts *hosttest.Hosts, ref string) ([]string, error) {
	if err := os.Symlink(filepath.Join(root, "deploy"), filepath.Join(work, "deploy")); err != nil {
		return nil, err
	}
	wrap := filepath.Join(work, ".wrappers")
	if err := os.MkdirAll(wrap, 0o755); err != nil {
		return nil, err
	}
	sshConfig := fmt.Sprintf("Host *\n  IdentityFile %s\n  IdentitiesOnly yes\n  BatchMode yes\n  StrictHostKeyChecking accept-new\n  UserKnownHostsFile %s\n",
		hosts.AdminKey, filepath.Join(work, ".known_hosts"))
	overrides := filepath.Join(work, ".machine-values.yaml")
	values, err := machineValues(root, c, hosts, ref, "", "")
	if err != nil {
		return nil, err
	}
	files := map[string]string{
		filepath.Join(work, ".ssh_config"): sshConfig,
		overrides:                          values,
		filepath.Join(wrap, "ssh"):         fmt.Sprintf("#!/bin/sh\nexec /usr/bin/ssh -F %s \"$@\"\n", filepath.Join(work, ".ssh_config")),
		filepath.Join(wrap, "helm"):        helmWrapper(root, overrides),
	}
	for p, content := range files {
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			return nil, err
		}
	}
	return append(os.Environ(), "PATH="+wrap+":"+filepath.Join(root, "bin")+":"+os.Getenv("PATH"), "KUBECONFIG="+c.Kubeconfig(), "HOME="+work), nil
}

// runBlock runs one block as the user's shell would (bash, stopping at
// the first failing command) in dir.
func runBlock(dir string, env []string, body string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", body)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// afterBlock plays what the machine does for the user between blocks:
// systemd starts HAProxy and keepalived on a host the script restarted
// them on, and the router authorizes the key the user made (the CCM's
// routes use it).
func afterBlock(ctx context.Context, work string, hosts *hosttest.Hosts) error {
	for _, h := range hosts.Hosts {
		if len(h.HAProxyArgs()) == 0 && strings.Contains(h.SystemctlLog(), "systemctl restart haproxy keepalived") {
			if err := h.StartServices(ctx); err != nil {
				return fmt.Errorf("%s: %w", h.Name, err)
			}
		}
	}
	pub := filepath.Join(work, "tfccm_ed25519.pub")
	marker := filepath.Join(work, ".router-authorized")
	if _, err := os.Stat(pub); err != nil {
		return nil
	}
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	if err := hosts.AuthorizeOnRouter(pub); err != nil {
		return err
	}
	return os.WriteFile(marker, nil, 0o644)
}

// quickstartCleanup deletes the Service (its load balancer goes) and
// uninstalls the chart, as a user would.
func quickstartCleanup(t *testing.T, root, work string, env []string) {
	for _, cmd := range []string{
		"kubectl delete service web --ignore-not-found --wait --timeout=2m",
		"helm uninstall tfccm -n kube-system --wait --timeout 2m || true",
	} {
		if out, err := runBlock(work, env, cmd); err != nil {
			t.Errorf("cleanup %q: %v: %s", cmd, err, out)
		}
	}
}

// countCommands counts the commands a block has the user type: its lines
// but blank lines, comments, the lines of a here-document and the lines a
// trailing backslash or pipe continues.
func countCommands(block string) int {
	n, heredoc, cont := 0, "", false
	sc := bufio.NewScanner(strings.NewReader(block))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case heredoc != "":
			if line == heredoc {
				heredoc = ""
			}
			continue
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		}
		if !cont {
			n++
		}
		cont = strings.HasSuffix(line, "\\") || strings.HasSuffix(line, "|") || strings.HasSuffix(line, "&&")
		if _, tag, ok := strings.Cut(line, "<<"); ok {
			heredoc = strings.Trim(strings.Fields(strings.TrimPrefix(tag, "-"))[0], `'"`)
		}
	}
	return n
}

// machineValues are the chart values a quickstart test adds after the
// page's (helm install -f): the image, the CCM's layout on node-a, the
// pod-range routes these nodes need through the cloud's router and their
// inventory (their kubelets run with --cloud-provider=external) appended to
// the page's inline cloud config pageInline, and extra values.
func machineValues(root string, c *Cluster, hosts *hosttest.Hosts, ref, pageInline, extra string) (string, error) {
	mapping, err := os.ReadFile(filepath.Join(root, "templates", "local", "instances.hcl"))
	if err != nil {
		return "", err
	}
	// The pod's user (65532) reads the inventory through a read-only hostPath.
	if err := worldReadable(c.Cloud.InfraDir()); err != nil {
		return "", err
	}
	routes := hosts.RoutesSettings()
	routes["ssh_private_key_file"] = podKey
	inline := pageInline + fmt.Sprintf(`routes {
  batch_window = "1s"
  settings     = %s
}
instances {
  ttl = "5s"
  source "infra" {
    dir = %q
  }
}
`, harness.HCLObject(routes), podInventory)
	return fmt.Sprintf(`%s%sextraArgs: %s
cloudConfig:
  inline: |
%s
templates:
  files:
    instances.hcl: |
%s
%sextraVolumes:
  - name: inventory
    hostPath: {path: %q, type: Directory}
extraVolumeMounts:
  - {name: inventory, mountPath: %q, readOnly: true}
`, imageValues(ref), uninstallLayout, flowList(c.CCMFlags()), indent(inline, "    "), indent(string(mapping), "      "),
		extra, c.Cloud.InfraDir(), podInventory), nil
}

// flowList is items as a YAML flow sequence of quoted strings (a dual-stack
// --cluster-cidr holds a comma).
func flowList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = jsonString(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// helmWrapper is a helm that adds the values file overrides to helm install.
func helmWrapper(root, overrides string) string {
	return fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = install ]; then exec %[1]s \"$@\" -f %[2]s; fi\nexec %[1]s \"$@\"\n",
		filepath.Join(root, "bin", "helm"), overrides)
}
