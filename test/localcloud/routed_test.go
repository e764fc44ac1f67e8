package localcloud

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// serveVIP plays kube-proxy on an API-only node: the VIP on the node's lo
// and an HTTP server on VIP:port answering "<node> saw <client address>".
func serveVIP(t *testing.T, nodeName, vip string, port int) {
	t.Helper()
	n := shared.Node(nodeName)
	if out, err := exec.Command("ip", "-n", n.Netns, "addr", "replace", vip+"/32", "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("VIP on %s: %v: %s", nodeName, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "-n", n.Netns, "addr", "del", vip+"/32", "dev", "lo").Run() })
	l, err := shared.Listen(nodeName, "tcp", fmt.Sprintf("%s:%d", vip, port))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		fmt.Fprintf(w, "%s saw %s", nodeName, host)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
}

// answeredBy makes n connections to vip:80 and returns the nodes answering.
func answeredBy(vip string, n int) (map[string]bool, error) {
	seen := map[string]bool{}
	for range n {
		body, err := get("http://" + vip + "/")
		if err != nil {
			return seen, fmt.Errorf("GET VIP: %w", err)
		}
		node, _, _ := strings.Cut(body, " saw ")
		seen[node] = true
	}
	return seen, nil
}

// routedRoute is the router's kernel route to vip in the cloud netns ("" if none).
func routedRoute(vip string) string {
	out, _ := exec.Command("ip", "-n", shared.CloudNetns, "-4", "route", "show", vip+"/32").Output()
	return strings.Join(strings.Fields(string(out)), " ")
}

// TestRoutedVIP drives the local set's routed variant with API-only nodes:
// the router routes the VIP (ECMP) to the nodes that pass the health check,
// the nodes serve it (as kube-proxy would) and see the client's own
// address; a node failing its check stops getting traffic; destroy removes
// the route, the claim and the router's config.
func TestRoutedVIP(t *testing.T) {
	if !shared.RoutedVIPs {
		t.Fatal("the local cloud runs no routed-VIP service: bin/lbhost-router is missing (make build)")
	}
	w := newWorkspace(t, "loadbalancer.routed")
	w.destroyOnCleanup()
	// node-a and node-b are healthy, node-c is not.
	stopA, err := shared.ServeHealthz("node-a", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stopA()
	stopB, err := shared.ServeHealthz("node-b", 0)
	if err != nil {
		t.Fatal(err)
	}
	w.mustApply(lbVars("routed1", []port{{"TCP", 80, 30080}, {"UDP", 53, 30053}}, nil))
	vip := vipOf(w)
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		serveVIP(t, n, vip, 80)
	}
	a, b, c := shared.Node("node-a").Address, shared.Node("node-b").Address, shared.Node("node-c").Address
	eventually(t, 10*time.Second, "ECMP route to node-a and node-b", func() (bool, string) {
		r := routedRoute(vip)
		return strings.Contains(r, "proto 77") && strings.Contains(r, "via "+a+" ") && strings.Contains(r, "via "+b+" ") && !strings.Contains(r, c), r
	})
	// Flows are spread over the healthy nodes; each sees the host's address.
	seen := map[string]bool{}
	for range 40 {
		body, err := get("http://" + vip + "/")
		if err != nil {
			t.Fatalf("GET VIP: %v", err)
		}
		node, client, _ := strings.Cut(body, " saw ")
		if client != shared.HostAddress {
			t.Errorf("%s saw client %q, want the host's own %s (no proxy, no NAT)", node, client, shared.HostAddress)
		}
		seen[node] = true
	}
	if !seen["node-a"] || !seen["node-b"] || seen["node-c"] {
		t.Errorf("answered by %v, want node-a and node-b (node-c fails its health check)", seen)
	}
	// The health module (tfccm.io/Degraded) reads the same from the router.
	if h := w.health("loadbalancer.routed"); !reflect.DeepEqual(h, map[string]bool{"node-a": true, "node-b": true, "node-c": false}) {
		t.Errorf("health module: %v, want node-a and node-b healthy, node-c not", h)
	}

	// ClientIP affinity (an in-place update): every connection of this
	// client reaches one node; switching it off spreads them again.
	affinity := func(a string) map[string]any {
		return lbVars("routed1", []port{{"TCP", 80, 30080}, {"UDP", 53, 30053}}, func(svc map[string]any) { svc["session_affinity"] = a })
	}
	w.mustApply(affinity("ClientIP"))
	// A connection that spans the switch may move to another node and be
	// reset (lbhost/router/clienthash.go says so): while the switch is
	// under way an error is retried; once switched, none is allowed (the
	// checks below).
	eventually(t, 10*time.Second, "client hashing: every connection reaches one node", func() (bool, string) {
		seen, err := answeredBy(vip, 30)
		if err != nil {
			return false, fmt.Sprintf("while switching to client hashing: %v", err)
		}
		return len(seen) == 1, fmt.Sprint(seen)
	})
	if out, err := exec.Command("ip", "-n", shared.CloudNetns, "-4", "rule", "show", "pref", "7700").CombinedOutput(); err != nil ||
		!strings.Contains(string(out), "lookup") {
		t.Errorf("no policy rules of the router for client hashing: %v: %s", err, out)
	}
	for range 3 { // and it stays that node
		if seen, err := answeredBy(vip, 30); err != nil || len(seen) != 1 {
			t.Fatalf("ClientIP affinity: one client answered by %v (%v)", seen, err)
		}
	}
	w.mustApply(affinity("None"))
	// A connection spanning this switch may be reset (its client-hashed
	// path is gone): retried.
	eventually(t, 10*time.Second, "flow hashing again: connections reach both nodes", func() (bool, string) {
		seen, err := answeredBy(vip, 30)
		return err == nil && seen["node-a"] && seen["node-b"], fmt.Sprint(seen, err)
	})
	eventually(t, 5*time.Second, "client hashing off: the router's policy rules removed", func() (bool, string) {
		out, _ := exec.Command("ip", "-n", shared.CloudNetns, "-4", "rule", "show", "pref", "7700").CombinedOutput()
		return strings.TrimSpace(string(out)) == "", string(out)
	})

	// node-b fails: only node-a gets traffic.
	stopB()
	eventually(t, 10*time.Second, "route to node-a only", func() (bool, string) {
		r := routedRoute(vip)
		return strings.HasPrefix(r, vip+" via "+a+" "), r
	})
	for range 10 {
		if body, err := get("http://" + vip + "/"); err != nil || !strings.HasPrefix(body, "node-a ") {
			t.Fatalf("after node-b failed: %q, %v", body, err)
		}
	}
	if h := w.health("loadbalancer.routed"); !reflect.DeepEqual(h, map[string]bool{"node-a": true, "node-b": false, "node-c": false}) {
		t.Errorf("health module after node-b failed: %v, want node-a alone healthy", h)
	}
	// A node leaving the Service's node set is an in-place update.
	vars := lbVars("routed1", []port{{"TCP", 80, 30080}}, nil)
	vars["nodes"] = vars["nodes"].([]map[string]any)[1:]
	w.mustApply(vars)
	eventually(t, 10*time.Second, "no route once no node is healthy", func() (bool, string) {
		r := routedRoute(vip)
		return r == "", r
	})
	if vipOf(w) != vip {
		t.Errorf("the VIP changed on an update")
	}

	if err := w.destroy(); err != nil {
		t.Fatal(err)
	}
	claims, _ := filepath.Glob(filepath.Join(shared.StateDir, "claims", "*"))
	if slices.Contains(claims, filepath.Join(shared.StateDir, "claims", vip)) {
		t.Errorf("claim on %s left after destroy", vip)
	}
	if _, err := os.Stat(filepath.Join(shared.StateDir, "routed", cluster+"_routed1.json")); err == nil {
		t.Errorf("router config left after destroy")
	}
	if r := routedRoute(vip); r != "" {
		t.Errorf("route left after destroy: %s", r)
	}
}

// TestRoutedVIPBadInput: what a routed VIP cannot do fails at plan, before
// anything is created.
func TestRoutedVIPBadInput(t *testing.T) {
	w := newWorkspace(t, "loadbalancer.routed")
	err := w.apply(lbVars("routed2", []port{{"TCP", 80, 30080}}, func(svc map[string]any) { svc["proxy_protocol"] = true }))
	if err == nil || !strings.Contains(err.Error(), "PROXY protocol") {
		t.Errorf("proxy_protocol: %v", err)
	}
	err = w.apply(lbVars("routed2", []port{{"TCP", 80, 30080}}, func(svc map[string]any) { svc["load_balancer_ip"] = "192.0.2.7" }))
	if err == nil || !strings.Contains(err.Error(), "outside the local cloud's VIP") {
		t.Errorf("load_balancer_ip outside the pool: %v", err)
	}
	if files, _ := filepath.Glob(filepath.Join(shared.StateDir, "routed", cluster+"_routed2.json")); len(files) > 0 {
		t.Errorf("a rejected routed VIP wrote its config: %v", files)
	}
}
