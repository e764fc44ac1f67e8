package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
	"github.com/tfccm/tfccm/test/standin"
)

// credentialsModule is a load balancer template that needs two secrets: a
// cloud token in its provider block and a TLS private key in a write-only
// argument (google_compute_ssl_certificate.private_key_wo), both from the
// ephemeral credentials variable.
const credentialsModule = `variable "credentials" {
  type      = map(string)
  ephemeral = true
}

variable "load_balancer_name" {
  type = string
}

provider "google" {
  access_token = var.credentials["GOOGLE_OAUTH_ACCESS_TOKEN"]
  project      = "e2e"
}

resource "google_compute_ssl_certificate" "tls" {
  name                   = var.load_balancer_name
  certificate            = "-----BEGIN CERTIFICATE-----\nMIIBe2e\n-----END CERTIFICATE-----\n"
  private_key_wo         = var.credentials["TLS_PRIVATE_KEY"]
  private_key_wo_version = "1"
}

output "ingress" {
  value = [{ ip = "203.0.113.80", hostname = null, ip_mode = "VIP" }]
}
`

// TestCredentialsNeverStored: the secrets a template needs reach the
// provider (the stand-in logs their fingerprints) as ephemeral values, and
// are nowhere else: not in the backend's state, the saved plan (work dir
// and the plan Secret's content), the published plan, Events, the CCM's
// log or the work dir.
func TestCredentialsNeverStored(t *testing.T) {
	const token, key = "ya29.e2e-token-5c1d", "-----BEGIN PRIVATE KEY-----e2e-key-9b7f"
	env := standin.Setup(t, "google")
	env.Only = []string{"google_compute_ssl_certificate"}
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	override := t.TempDir()
	if err := os.MkdirAll(filepath.Join(override, "loadbalancer"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(override, "loadbalancer"), "main.tf", credentialsModule)
	// The override declares the credentials it takes (credentials.hcl):
	// no other configured credential would reach it.
	writeFile(t, filepath.Join(override, "loadbalancer"), "credentials.hcl", `env = ["GOOGLE_OAUTH_ACCESS_TOKEN", "TLS_PRIVATE_KEY"]`+"\n")
	tf := append(standInTerraform(t, env, fmt.Sprintf("GOOGLE_OAUTH_ACCESS_TOKEN = %q", token), fmt.Sprintf("TLS_PRIVATE_KEY = %q", key)), "review = true")
	cfg, workDir := writeCloudConfig(t, t.TempDir(), fmt.Sprintf(`template_set = "google"
override_dir = %q
backend "kubernetes" {
  config_path = %q
  namespace   = "default"
}
`, override, cluster.Kubeconfig()), tf...)

	registerNode(t, client, harness.Node{Name: "node-a", InternalIPs: []string{"192.0.2.10"}})
	ccm := startCCM(t, cluster, cfg, "--leader-elect=false")
	svc := createHTTPService(t, client, "web", 80)
	hash := waitPendingPlan(t, client, svc, "apply plan", "to add")
	secrets := []string{token, key}
	noSecrets := func(when string) {
		t.Helper()
		found, err := testkit.FindSecrets(workDir, secrets...)
		if err != nil {
			t.Fatal(err)
		}
		found = append(found, clusterSecrets(t, client, "default", secrets)...)
		if s := testkit.SecretsIn([]byte(ccm.Log()), secrets...); len(s) != 0 {
			found = append(found, fmt.Sprintf("CCM log: %v", s))
		}
		for _, f := range found {
			t.Errorf("%s: %s", when, f)
		}
	}
	noSecrets("plan awaiting approval")

	approvePlan(t, client, hash)
	if vip := waitVIP(t, client, "web"); vip != "203.0.113.80" {
		t.Fatalf("VIP %s", vip)
	}
	var created []standin.Call
	for _, c := range env.Calls(t) {
		if c.Type == "google_compute_ssl_certificate" && c.Op == "create" {
			created = append(created, c)
		}
	}
	if len(created) != 1 || created[0].WriteOnly["private_key_wo"] != standin.Fingerprint(key) || created[0].Values["private_key_wo"] != nil {
		t.Fatalf("certificate creates %+v: want one that received the key, null in state", created)
	}
	got := false
	for _, c := range env.ProviderConfigs(t) {
		got = got || c["access_token"] == standin.Fingerprint(token)
	}
	if !got {
		t.Error("the provider never received the token")
	}
	if states := backendStates(t, client, "default"); len(states) == 0 {
		t.Error("no state in the backend")
	}
	noSecrets("applied")
}

// clusterSecrets returns where in namespace's objects the secrets are:
// the kubernetes backend's state (gunzipped), Secrets, ConfigMaps (the
// published plan) and Events.
func clusterSecrets(t *testing.T, client kubernetes.Interface, namespace string, secrets []string) []string {
	t.Helper()
	ctx := context.Background()
	var found []string
	for _, st := range backendStates(t, client, namespace) {
		if s := testkit.SecretsIn(st.doc, secrets...); len(s) != 0 {
			found = append(found, fmt.Sprintf("state %s: %v", st.secret.Name, s))
		}
	}
	sl, err := client.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sl.Items {
		for k, v := range s.Data {
			if f := testkit.SecretsIn(v, secrets...); len(f) != 0 {
				found = append(found, fmt.Sprintf("Secret %s/%s: %v", s.Name, k, f))
			}
		}
	}
	cl, err := client.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cl.Items {
		for k, v := range c.Data {
			if f := testkit.SecretsIn([]byte(v), secrets...); len(f) != 0 {
				found = append(found, fmt.Sprintf("ConfigMap %s/%s: %v", c.Name, k, f))
			}
		}
	}
	el, err := client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range el.Items {
		if f := testkit.SecretsIn([]byte(e.Message), secrets...); len(f) != 0 {
			found = append(found, fmt.Sprintf("Event %s: %v", e.Reason, f))
		}
	}
	return found
}

// declaredModule is a load balancer module on the hcloud provider (played
// by the stand-in) that needs nothing but its provider started.
const declaredModule = `terraform {
  required_providers {
    hcloud = { source = "hetznercloud/hcloud" }
  }
}

provider "hcloud" {}

output "ingress" {
  value = [{ ip = "203.0.113.81", hostname = null, ip_mode = "VIP" }]
}
`

// TestCredentialsOnlyToDeclaringTemplates: the CCM, configured with a
// cloud token in terraform.pass_env and another cloud's in terraform.env,
// runs two Services' workspaces on the stand-in hcloud provider: the
// template that declares HCLOUD_TOKEN (credentials.hcl, as the built-in
// hcloud set does) starts its provider with that token and nothing else
// of the configured credentials; the variant that declares none starts
// its provider with neither (the stand-in records each process's
// environment as fingerprints).
func TestCredentialsOnlyToDeclaringTemplates(t *testing.T) {
	const token, other = "marker-hcloud-e2e-41d7", "marker-other-cloud-e2e-9a2c"
	t.Setenv("HCLOUD_TOKEN", token) // the CCM's own environment: pass_env takes it from there
	env := standin.Setup(t, "hcloud")
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	override := t.TempDir()
	for dir, declared := range map[string]string{"loadbalancer": `env = ["HCLOUD_TOKEN"]` + "\n", "loadbalancer.undeclared": ""} {
		if err := os.MkdirAll(filepath.Join(override, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(override, dir), "main.tf", declaredModule)
		if declared != "" {
			writeFile(t, filepath.Join(override, dir), "credentials.hcl", declared)
		}
	}
	tf := append(standInTerraform(t, env, fmt.Sprintf("DIGITALOCEAN_TOKEN = %q", other)), `pass_env = ["HCLOUD_TOKEN"]`)
	cfg, workDir := writeCloudConfig(t, t.TempDir(), fmt.Sprintf(`template_set = "hcloud"
override_dir = %q
backend "kubernetes" {
  config_path = %q
  namespace   = "default"
}
`, override, cluster.Kubeconfig()), tf...)

	registerNode(t, client, harness.Node{Name: "node-a", InternalIPs: []string{"192.0.2.10"}})
	startCCM(t, cluster, cfg, "--leader-elect=false")
	for name, variant := range map[string]string{"declared": "", "undeclared": "undeclared"} {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
		}
		if variant != "" {
			svc.Annotations = map[string]string{"tfccm.io/template": variant}
		}
		if _, err := client.CoreV1().Services("default").Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"declared", "undeclared"} {
		if vip := waitVIP(t, client, name); vip != "203.0.113.81" {
			t.Fatalf("%s: VIP %s", name, vip)
		}
	}

	seen := map[bool]int{} // declares -> provider processes
	for _, e := range env.Environs(t) {
		if !strings.HasPrefix(e.Dir, workDir) {
			continue
		}
		_, err := os.Stat(filepath.Join(e.Dir, "credentials.hcl"))
		declares := err == nil
		seen[declares]++
		got, has := e.Vars["HCLOUD_TOKEN"]
		switch {
		case declares && got != standin.Fingerprint(token):
			t.Errorf("%s: the provider of the declaring template got HCLOUD_TOKEN %q (present %v), want the configured one", e.Dir, got, has)
		case !declares && has:
			t.Errorf("%s: the provider of the template that declares nothing got HCLOUD_TOKEN", e.Dir)
		}
		if _, has := e.Vars["DIGITALOCEAN_TOKEN"]; has {
			t.Errorf("%s: the provider got DIGITALOCEAN_TOKEN, which no template declares", e.Dir)
		}
	}
	if seen[true] == 0 || seen[false] == 0 {
		t.Fatalf("provider processes seen: %d of the declaring template, %d of the other; want some of each", seen[true], seen[false])
	}
}

// TestLocalSetGetsNoCloudToken: with a cloud token in terraform.pass_env
// (HCLOUD_TOKEN, as a cluster that also serves the hcloud set would have),
// a Service on the built-in local set is applied by the CCM while a
// watcher reads /proc/PID/environ of every terraform-provider-lbhost
// process running in the CCM's work dir: none holds the token, since the
// local set's modules declare no credential.
func TestLocalSetGetsNoCloudToken(t *testing.T) {
	const token = "marker-hcloud-local-5e0b"
	t.Setenv("HCLOUD_TOKEN", token)
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	client := cluster.Client()
	cfg, workDir := writeCloudConfig(t, t.TempDir(), harness.Block("load_balancer", cloud.LBSettings()), `pass_env = ["HCLOUD_TOKEN"]`)
	createNode(t, client, cloud, "node-a")

	ctx, stop := context.WithCancel(context.Background())
	seen := make(chan map[int][]string, 1)
	go func() { seen <- watchProviderEnv(ctx, "terraform-provider-lbhost", workDir) }()
	startCCM(t, cluster, cfg)
	createHTTPService(t, client, "web", 80)
	waitVIP(t, client, "web") // applied: HAProxy's frontend and the VIP are in the cloud
	stop()
	envs := <-seen
	if len(envs) == 0 {
		t.Fatal("no terraform-provider-lbhost process was seen running in the work dir")
	}
	for pid, env := range envs {
		for _, kv := range env {
			if strings.HasPrefix(kv, "HCLOUD_TOKEN=") || strings.Contains(kv, token) {
				t.Errorf("lbhost provider (pid %d) has the cloud token in its environment", pid)
			}
		}
	}
	t.Logf("%d lbhost provider processes read", len(envs))
}

// watchProviderEnv reads, every 5 ms until ctx ends, the environment of
// each process whose executable is named name and whose working
// directory is under dir, once per process.
func watchProviderEnv(ctx context.Context, name, dir string) map[int][]string {
	out := map[int][]string{}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		procs, _ := os.ReadDir("/proc")
		for _, p := range procs {
			pid, err := strconv.Atoi(p.Name())
			if err != nil || out[pid] != nil {
				continue
			}
			exe, err := os.Readlink(filepath.Join("/proc", p.Name(), "exe"))
			if err != nil || !strings.HasPrefix(filepath.Base(exe), name) {
				continue
			}
			cwd, err := os.Readlink(filepath.Join("/proc", p.Name(), "cwd"))
			if err != nil || !strings.HasPrefix(cwd, dir) {
				continue
			}
			b, err := os.ReadFile(filepath.Join("/proc", p.Name(), "environ"))
			if err != nil {
				continue
			}
			out[pid] = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		}
		select {
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
	}
}
