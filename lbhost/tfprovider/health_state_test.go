package tfprovider_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serveHealth answers /healthz with code and everything else with name.
func serveHealth(t *testing.T, addr, name string, code int) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			w.WriteHeader(code)
			return
		}
		fmt.Fprint(w, name)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}

// serverState is the running worker's "show servers state" for backend:
// server name → fields.
func serverState(t *testing.T, c *cloud, backend string) map[string][]string {
	t.Helper()
	conn, err := net.Dial("unix", filepath.Join(c.dir, "master.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(conn, "@1 show servers state %s\n", backend)
	conn.(*net.UnixConn).CloseWrite()
	out, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 21 && f[1] == backend {
			m[f[3]] = f
		}
	}
	return m
}

// Field indexes of "show servers state" (format 1).
const (
	opState   = 5  // 0 stopped, 2 running
	checkPort = 21 // srv_check_port
)

func TestHealthStateAcrossReload(t *testing.T) {
	c := newCloud(t)
	serveHealth(t, c.nodeA+":30080", "node-a", 200)
	serveHealth(t, c.nodeB+":30080", "node-b", 503) // node-b fails its check
	serveHealth(t, c.nodeA+":31000", "node-a", 200) // the ETP=Local health port
	serveHealth(t, c.nodeB+":31000", "node-b", 200)
	cfg := func(hc, extra string) string {
		return fmt.Sprintf(`
resource "lbhost_frontend" "web" {
  name    = "c1_etp"
  address = %q
  ports = [{ port = 80, node_port = 30080 }]
  backends = [{ name = "node-a", address = %q }, { name = "node-b", address = %q }]
  health_check = %s
%s
}
`, strings.TrimSuffix(c.pool, ".0/24")+".10", c.nodeA, c.nodeB, hc, extra)
	}
	run(t, "ip", "-n", c.netns, "addr", "add", strings.TrimSuffix(c.pool, ".0/24")+".10/32", "dev", "lo")
	// A long interval: a server whose state is not restored stays "up" for
	// seconds after a reload, which the assertions below would see.
	slow := `{ protocol = "HTTP", path = "/healthz", interval = "4s", rise = 1, fall = 1 }`
	w := newWorkspace(t, c, cfg(slow, ""))
	w.apply()
	const be = "be_c1_etp_80"
	deadline := time.Now().Add(15 * time.Second)
	for serverState(t, c, be)["node-b"][opState] != "0" {
		if time.Now().After(deadline) {
			t.Fatalf("node-b never went down: %v", serverState(t, c, be))
		}
		time.Sleep(200 * time.Millisecond)
	}

	// An unrelated change reloads HAProxy; node-b's check is unchanged, so
	// its "down" survives the reload.
	w.write(c, cfg(slow, `  timeouts = { client = "30s" }`))
	w.apply()
	st := serverState(t, c, be)
	if st["node-b"][opState] != "0" {
		t.Fatalf("node-b's down state was lost across a reload with an unchanged check: %v", st["node-b"])
	}
	if st["node-a"][opState] != "2" {
		t.Fatalf("node-a not up after reload: %v", st["node-a"])
	}

	// The check moves to port 31000 (externalTrafficPolicy: Local): no
	// saved state may carry the old check port over.
	w.write(c, cfg(`{ protocol = "HTTP", port = 31000, path = "/healthz", interval = "4s", rise = 1, fall = 1 }`, `  timeouts = { client = "30s" }`))
	w.apply()
	st = serverState(t, c, be)
	for _, s := range []string{"node-a", "node-b"} {
		if st[s][checkPort] != "31000" {
			t.Errorf("%s checks port %s after the check changed, want 31000: %v", s, st[s][checkPort], st[s])
		}
	}
	if st["node-b"][opState] != "2" {
		t.Errorf("node-b (healthy on 31000) kept its old down state: %v", st["node-b"])
	}
}

// TestBackendHealthDataSource: lbhost_backend_health reads, from another
// root module and without a lock, what the running HAProxy thinks of each
// server: node-b's check fails (503) and it is reported unhealthy, node-a
// healthy; once node-b answers 200 it is healthy too.
func TestBackendHealthDataSource(t *testing.T) {
	c := newCloud(t)
	serveHealth(t, c.nodeA+":30180", "node-a", 200)
	run(t, "ip", "-n", c.netns, "addr", "add", strings.TrimSuffix(c.pool, ".0/24")+".11/32", "dev", "lo")
	lb := newWorkspace(t, c, fmt.Sprintf(`
resource "lbhost_frontend" "web" {
  name     = "c1_health"
  address  = %q
  ports    = [{ port = 80, node_port = 30080 }]
  backends = [{ name = "node-a", address = %q }, { name = "node-b", address = %q }]
  health_check = { protocol = "HTTP", port = 30180, path = "/healthz", interval = "500ms", rise = 1, fall = 1 }
}
`, strings.TrimSuffix(c.pool, ".0/24")+".11", c.nodeA, c.nodeB))
	lb.apply()

	health := newWorkspace(t, c, `
data "lbhost_backend_health" "h" {
  frontend = "c1_health"
}

output "backends" {
  value = jsonencode(data.lbhost_backend_health.h.backends)
}
`)
	want := func(what, state string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			health.ok("plan", "-input=false", "-no-color", "-lock=false", "-out=p.bin")
			js := health.ok("show", "-json", "p.bin")
			if strings.Contains(js, state) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: plan never showed %s:\n%s", what, state, js)
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	want("node-b's check fails", fmt.Sprintf(`[{\"address\":\"%s\",\"healthy\":true,\"name\":\"node-a\"},{\"address\":\"%s\",\"healthy\":false,\"name\":\"node-b\"}]`, c.nodeA, c.nodeB))
	serveHealth(t, c.nodeB+":30180", "node-b", 200)
	want("node-b answers", fmt.Sprintf(`[{\"address\":\"%s\",\"healthy\":true,\"name\":\"node-a\"},{\"address\":\"%s\",\"healthy\":true,\"name\":\"node-b\"}]`, c.nodeA, c.nodeB))
}
