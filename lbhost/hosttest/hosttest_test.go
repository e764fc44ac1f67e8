package hosttest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/lbhost/hosttest"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestBaremetalModule applies the baremetal set's loadbalancer module with
// OpenTofu (no CCM) on the two hosts: a node joins while lb-b is
// unreachable (the apply succeeds, lb-a is updated, lb-b's change is
// recorded as pending with a warning naming it), then lb-b converges at
// the next apply, then destroy leaves nothing on either host.
func TestBaremetalModule(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	hs := hosttest.ForTest(t, cloud)
	dir, vars, tofu := baremetalModule(t, cloud, hs)
	vars("node-a")
	tofu("init", "-input=false", "-no-color")
	tofu("apply", "-auto-approve", "-input=false", "-no-color")
	if err := hs.Host("lb-b").SetLink(false); err != nil {
		t.Fatal(err)
	}
	vars("node-a", "node-b")
	out, err := localcloud.RunTofu(context.Background(), repo.Tofu(t), dir, "apply", "-auto-approve", "-input=false", "-no-color")
	if err != nil || !strings.Contains(string(out), "ssh root@"+hs.Host("lb-b").Address+":22 is unreachable") || !strings.Contains(string(out), "change pending") {
		t.Fatalf("apply with lb-b unreachable: %v\n%s", err, out)
	}
	nodeB := cloud.Node("node-b").Address + ":30080"
	serves := func(h string) bool {
		data, _ := os.ReadFile(filepath.Join(hs.Host(h).ConfigDir, "fragments", "c1_web.cfg"))
		return strings.Contains(string(data), nodeB)
	}
	if !serves("lb-a") || serves("lb-b") {
		t.Fatalf("with lb-b unreachable: lb-a serves node-b %v (want true), lb-b %v (want false)", serves("lb-a"), serves("lb-b"))
	}
	if err := hs.Host("lb-b").SetLink(true); err != nil {
		t.Fatal(err)
	}
	tofu("apply", "-auto-approve", "-input=false", "-no-color")
	if !serves("lb-b") {
		t.Fatal("lb-b did not converge")
	}
	tofu("destroy", "-auto-approve", "-input=false", "-no-color")
	for _, h := range hs.Hosts {
		if objs := h.Objects(); len(objs) != 0 {
			t.Errorf("%s: objects left after destroy: %v", h.Name, objs)
		}
	}
}

// serveNodes runs, on each of nodes until the test ends, kube-proxy's
// health endpoint and an HTTP server on NodePort 30080 answering the
// node's name.
func serveNodes(t *testing.T, cloud *localcloud.Cloud, nodes ...string) {
	t.Helper()
	for _, n := range nodes {
		for _, serve := range []func() (func(), error){
			func() (func(), error) { return cloud.ServeHealthz(n, 0) },
			func() (func(), error) { return cloud.ServeHTTP(n, 30080, n) },
		} {
			stop, err := serve()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(stop)
		}
	}
}

// baremetalModule copies the baremetal set's loadbalancer module into a
// new directory and returns it, a function writing its inputs for the
// given nodes on hs, and one running tofu in it (failing the test).
func baremetalModule(t *testing.T, cloud *localcloud.Cloud, hs *hosttest.Hosts) (string, func(nodes ...string), func(args ...string) string) {
	t.Helper()
	return moduleOf(t, cloud, hs, "loadbalancer", "web",
		`{ ports = [{ name = "http", protocol = "TCP", port = 80, node_port = 30080 }], load_balancer_ip = null, shared_ip = null, source_ranges = [], ip_families = ["IPv4"], session_affinity = "None", proxy_protocol = false }`)
}

// moduleOf is baremetalModule for any module of the set, load balancer
// name and service (HCL).
func moduleOf(t testing.TB, cloud *localcloud.Cloud, hs *hosttest.Hosts, module, name, service string) (string, func(nodes ...string), func(args ...string) string) {
	t.Helper()
	dir := t.TempDir()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(root, "templates", "baremetal", module)
	files, _ := filepath.Glob(filepath.Join(src, "*.tf"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	vars := func(nodes ...string) {
		var ns []string
		for _, n := range nodes {
			ns = append(ns, fmt.Sprintf(`{ name = %q, addresses = [{ type = "InternalIP", address = %q }] }`, n, cloud.Node(n).Address))
		}
		body := fmt.Sprintf(`cluster_name = "c1"
load_balancer_id = %q
service = %s
nodes = [%s]
health_check = { protocol = "HTTP", port = 10256, path = "/healthz" }
settings = %s
`, name, service, strings.Join(ns, ", "), harness.HCLObject(hs.LBSettings()))
		if err := os.WriteFile(filepath.Join(dir, "tfccm.auto.tfvars"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tofu := func(args ...string) string {
		t.Helper()
		start := time.Now()
		out, err := localcloud.RunTofu(context.Background(), repo.Tofu(t), dir, args...)
		t.Logf("tofu %s: %s", args[0], time.Since(start))
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	return dir, vars, tofu
}
