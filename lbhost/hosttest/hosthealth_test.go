package hosttest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/lbhost/hosttest"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestBaremetalHostHealth: load balancers of the baremetal set's default
// module on two LB hosts (2; TFCCM_BENCH_HOSTHEALTH_SSH=N in make bench).
// Read by their own health modules (one refresh each, as tfccm's health
// round did) they cost one SSH login per host each; the set's hosts health
// module reads them all with one login per host, and its entry for each
// load balancer equals that load balancer's own health module's outputs
// (backends, hosts, vip_holders): with every backend healthy and with
// node-b's health check failing; in make bench also with lb-b unreachable
// (each read then waits out the SSH dial timeout, 10 s).
func TestBaremetalHostHealth(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	hs := hosttest.ForTest(t, cloud)
	serveNodes(t, cloud, "node-a")
	stopB := serveNodeB(t, cloud)
	service := `{ ports = [{ name = "http", protocol = "TCP", port = %d, node_port = 30080 }], load_balancer_ip = null, shared_ip = null, source_ranges = [], ip_families = ["IPv4"], session_affinity = "None", proxy_protocol = false }`
	n, bench := 2, false
	if v, err := strconv.Atoi(os.Getenv("TFCCM_BENCH_HOSTHEALTH_SSH")); err == nil && v > 0 {
		n, bench = v, true
	}
	lbs := map[string]string{}
	var names []string
	for i := range n {
		name := fmt.Sprintf("web%d", i+1)
		names = append(names, name)
		lbs[name] = fmt.Sprintf(service, 80+i)
	}
	var own []string // each load balancer's own health module, ready to refresh
	for _, name := range names {
		dir, vars, tofu := moduleOf(t, cloud, hs, "loadbalancer", name, lbs[name])
		vars("node-a", "node-b")
		tofu("init", "-input=false", "-no-color")
		tofu("apply", "-auto-approve", "-input=false", "-no-color")
		own = append(own, healthCopy(t, filepath.Join("loadbalancer", "health"), dir, ""))
	}
	var entries []string
	for _, name := range names {
		entries = append(entries, fmt.Sprintf("%s = { module = \"loadbalancer\", service = %s }", name, lbs[name]))
	}
	hostsDir := healthCopy(t, "hosthealth", t.TempDir(), fmt.Sprintf("cluster_name = \"c1\"\nload_balancers = { %s }\nsettings = %s\n",
		strings.Join(entries, ", "), harness.HCLObject(hs.LBSettings())))

	compare := func(when string, reachable int) map[string]map[string]any {
		t.Helper()
		before := logins(t, hs)
		want := map[string]map[string]any{}
		start := time.Now()
		for i, name := range names {
			want[name] = refresh(t, own[i])
		}
		ownTime := time.Since(start)
		perLB := logins(t, hs) - before
		before = logins(t, hs)
		var got map[string]map[string]any
		start = time.Now()
		raw := refresh(t, hostsDir)["load_balancers"]
		hostsTime := time.Since(start)
		data, _ := json.Marshal(raw)
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("%s: output load_balancers %s: %v", when, data, err)
		}
		perHost := logins(t, hs) - before
		t.Logf("FIGURE %s: %d load balancers on %d reachable LB hosts: their own health modules %d tofu runs (one at a time) in %s, %d SSH logins; the hosts health module 1 tofu run in %s, %d SSH logins",
			when, n, reachable, n, ownTime.Round(time.Millisecond), perLB, hostsTime.Round(time.Millisecond), perHost)
		if perLB != n*reachable || perHost != reachable {
			t.Errorf("%s: SSH logins %d through the health modules (want %d), %d through the hosts health module (want %d)", when, perLB, n*reachable, perHost, reachable)
		}
		for name, w := range want {
			g := got[name]
			for k, v := range g {
				if v == nil {
					delete(g, k)
				}
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("%s: %s: the hosts health module says %v, its own health module %v", when, name, g, w)
			}
		}
		return want
	}
	// keepalived elects each VIP's holder a moment after apply returns: the
	// comparison starts once every load balancer's own module sees one, so
	// both reads see the same holders.
	deadline := time.Now().Add(30 * time.Second)
	for i, name := range names {
		for fmt.Sprint(refresh(t, own[i])["vip_holders"]) == "map[IPv4:[]]" {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no LB host holds its VIP 30 s after apply", name)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	compare("all healthy", 2)

	stopB()
	deadline = time.Now().Add(30 * time.Second)
	for i, name := range names { // every load balancer's health check has seen it
		for !strings.Contains(fmt.Sprint(refresh(t, own[i])["backends"]), "healthy:false node:node-b") {
			if time.Now().After(deadline) {
				t.Fatalf("%s: node-b still healthy after 30 s", name)
			}
			time.Sleep(time.Second)
		}
	}
	compare("node-b's check failing", 2)
	if !bench {
		return
	}
	if err := hs.Host("lb-b").SetLink(false); err != nil {
		t.Fatal(err)
	}
	w := compare("lb-b unreachable", 1)
	if fmt.Sprint(w["web1"]["hosts"]) != "map[lb-a:true lb-b:false]" {
		t.Errorf("hosts %v, want lb-b unreachable", w["web1"]["hosts"])
	}
	if err := hs.Host("lb-b").SetLink(true); err != nil {
		t.Fatal(err)
	}
}

// serveNodeB serves node-b as serveNodes does, and returns what stops its
// health endpoint.
func serveNodeB(t *testing.T, cloud *localcloud.Cloud) func() {
	stopHTTP, err := cloud.ServeHTTP("node-b", 30080, "node-b")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopHTTP)
	stop, err := cloud.ServeHealthz("node-b", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return stop
}

// healthCopy copies the baremetal set's module (relative to the set) into
// a new directory with the inputs of workspace dir (or inputs) and runs
// tofu init there.
func healthCopy(t *testing.T, module, dir, inputs string) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	copyDir := t.TempDir()
	if err := localcloud.CopyModule(filepath.Join(root, "templates", "baremetal", module), copyDir); err != nil {
		t.Fatal(err)
	}
	data := []byte(inputs)
	if inputs == "" {
		if data, err = os.ReadFile(filepath.Join(dir, "tfccm.auto.tfvars")); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(copyDir, "tfccm.auto.tfvars"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := localcloud.RunTofu(context.Background(), repo.Tofu(t), copyDir, "init", "-input=false", "-no-color"); err != nil {
		t.Fatalf("init %s: %v\n%s", module, err, out)
	}
	return copyDir
}

// refresh reads the module in dir as tfccm's probes do (one refresh-only
// apply, no lock) and returns its outputs' values.
func refresh(t *testing.T, dir string) map[string]any {
	t.Helper()
	ctx := context.Background()
	if out, err := localcloud.RunTofu(ctx, repo.Tofu(t), dir, "apply", "-refresh-only", "-auto-approve", "-lock=false", "-input=false", "-no-color"); err != nil {
		t.Fatalf("refresh %s: %v\n%s", dir, err, out)
	}
	out, err := localcloud.RunTofu(ctx, repo.Tofu(t), dir, "output", "-json")
	if err != nil {
		t.Fatalf("output: %v\n%s", err, out)
	}
	var outputs map[string]struct {
		Value any `json:"value"`
	}
	if err := json.Unmarshal(out, &outputs); err != nil {
		t.Fatalf("output -json: %v", err)
	}
	got := map[string]any{}
	for k, o := range outputs {
		got[k] = o.Value
	}
	_ = os.Remove(filepath.Join(dir, "terraform.tfstate"))
	return got
}

// logins is the SSH logins of every host so far (sshd writes its log line
// as it accepts: a short wait lets the last ones land).
func logins(t *testing.T, hs *hosttest.Hosts) int {
	t.Helper()
	time.Sleep(200 * time.Millisecond)
	n := 0
	for _, h := range hs.Hosts {
		c, err := h.SSHLogins()
		if err != nil {
			t.Fatal(err)
		}
		n += c
	}
	return n
}
