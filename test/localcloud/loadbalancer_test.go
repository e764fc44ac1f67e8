package localcloud

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/testkit"
)

const cluster = "kind"

func node(name, addr string) map[string]any {
	return map[string]any{
		"name": name, "provider_id": "local://" + name,
		"addresses": []map[string]string{{"type": "InternalIP", "address": addr}, {"type": "Hostname", "address": name}},
		"zone":      nil, "region": nil, "instance_type": nil, "labels": map[string]string{},
	}
}

type port struct {
	proto          string
	port, nodePort int
}

// lbVars builds the loadbalancer inputs of templates/CONTRACT.md.
func lbVars(name string, ports []port, mutate func(svc map[string]any)) map[string]any {
	var ps []map[string]any
	for _, p := range ports {
		ps = append(ps, map[string]any{"name": fmt.Sprintf("p%d", p.port), "protocol": p.proto, "port": p.port, "node_port": p.nodePort, "app_protocol": nil})
	}
	svc := map[string]any{
		"uid": "uid-" + name, "namespace": "default", "name": name,
		"annotations": map[string]string{}, "labels": map[string]string{},
		"ports":            ps,
		"load_balancer_ip": nil, "shared_ip": nil, "source_ranges": []string{},
		"external_traffic_policy": "Cluster", "health_check_node_port": nil,
		"ip_families": []string{"IPv4"}, "session_affinity": "None",
		"proxy_protocol": false, "internal": false,
	}
	if mutate != nil {
		mutate(svc)
	}
	// As tfccm renders it: load_balancer_ip is the first of load_balancer_ips.
	if ip, ok := svc["load_balancer_ip"].(string); ok && svc["load_balancer_ips"] == nil {
		svc["load_balancer_ips"] = []string{ip}
	}
	return map[string]any{
		"cluster_name":     cluster,
		"load_balancer_id": name,
		"service":          svc,
		"nodes": []map[string]any{
			node("node-a", shared.Node("node-a").Address),
			node("node-b", shared.Node("node-b").Address),
			node("node-c", shared.Node("node-c").Address),
		},
		"health_check": map[string]any{"protocol": "HTTP", "port": 10256, "path": "/healthz"},
		"settings":     shared.LBSettings(),
	}
}

type ingress struct {
	IP       string  `json:"ip"`
	IPMode   string  `json:"ip_mode"`
	Hostname *string `json:"hostname"`
}

func vipOf(w *workspace) string {
	w.t.Helper()
	var ing []ingress
	w.output("ingress", &ing)
	if len(ing) != 1 || ing[0].IPMode != "VIP" || ing[0].Hostname != nil {
		w.t.Fatalf("ingress = %+v", ing)
	}
	ip, err := netip.ParseAddr(ing[0].IP)
	if err != nil || !netip.MustParsePrefix(shared.VIPPool).Contains(ip) {
		w.t.Fatalf("VIP %q is not in the pool %s", ing[0].IP, shared.VIPPool)
	}
	return ing[0].IP
}

var hostClient = testkit.NewClient(3 * time.Second)

// get fetches url from the host (a new connection each time).
func get(url string) (string, error) { return testkit.Get(context.Background(), hostClient, url) }

// spread GETs url n times and counts the answers.
func spread(t *testing.T, url string, n int) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for range n {
		body, err := get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		seen[body]++
	}
	return seen
}

func waitStatus(t *testing.T, backend string, want map[string]string) {
	t.Helper()
	eventually(t, 15*time.Second, "backend "+backend+" health", func() (bool, string) {
		st, err := serverStatus(shared.StatsSocket, backend)
		if err != nil {
			return false, err.Error()
		}
		for k, v := range want {
			if st[k] != v {
				return false, fmt.Sprint(st)
			}
		}
		return true, ""
	})
}

func vipOnLo(vip string) bool {
	out, _ := exec.Command("ip", "-n", shared.CloudNetns, "addr", "show", "dev", "lo").Output()
	return strings.Contains(string(out), " "+vip+"/32 ")
}

func fragments(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(shared.StateDir, "fragments", "*.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	return m
}

// serveProxyEcho answers HTTP requests on node:port with the source
// address from the PROXY protocol v2 header, or "no proxy header".
func serveProxyEcho(t *testing.T, nodeName string, port int) {
	l, err := shared.Listen(nodeName, "tcp", fmt.Sprintf(":%d", port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
				r := bufio.NewReader(conn)
				body := "no proxy header"
				sig, err := r.Peek(16)
				if err == nil && string(sig[:12]) == "\r\n\r\n\x00\r\nQUIT\n" {
					hdr := make([]byte, 16+int(binary.BigEndian.Uint16(sig[14:16])))
					if _, err := io.ReadFull(r, hdr); err != nil {
						return
					}
					if hdr[13] == 0x11 && len(hdr) >= 28 { // TCP over IPv4
						src := netip.AddrFrom4([4]byte(hdr[16:20]))
						dst := netip.AddrFrom4([4]byte(hdr[20:24]))
						body = fmt.Sprintf("proxy v2 from %s to %s:%d via %s", src, dst, binary.BigEndian.Uint16(hdr[26:28]), nodeName)
					}
				}
				req, err := http.ReadRequest(r)
				if err != nil {
					return
				}
				req.Body.Close()
				fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
			}()
		}
	}()
}

func TestLoadBalancer(t *testing.T) {
	c := shared
	// Every node serves its name on 30080; only node-a and node-b pass the
	// kube-proxy health check, node-c has no /healthz.
	healthz := map[string]func(){}
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		stop, err := c.ServeHTTP(n, 30080, n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		if n != "node-c" {
			if healthz[n], err = c.ServeHealthz(n, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() {
		for _, stop := range healthz {
			stop()
		}
	})
	serveProxyEcho(t, "node-a", 30081)
	serveProxyEcho(t, "node-b", 30081)

	web := newWorkspace(t, "loadbalancer")
	web.destroyOnCleanup()
	web.mustApply(lbVars("web", []port{{"TCP", 80, 30080}}, nil))
	vip := vipOf(web)
	owner := cluster + "_web"
	if !vipOnLo(vip) {
		t.Fatalf("VIP %s is not on lo in %s", vip, c.CloudNetns)
	}
	if b, err := os.ReadFile(filepath.Join(c.StateDir, "claims", vip)); err != nil || strings.TrimSpace(string(b)) != owner {
		t.Fatalf("claim of %s: %q %v", vip, b, err)
	}
	url := "http://" + vip + ":80/"

	t.Run("traffic reaches healthy nodes only", func(t *testing.T) {
		waitStatus(t, "be_"+owner+"_80", map[string]string{"node-a": "UP", "node-b": "UP", "node-c": "DOWN"})
		seen := spread(t, url, 30)
		if seen["node-c"] > 0 || seen["node-a"] == 0 || seen["node-b"] == 0 {
			t.Fatalf("answers %v: want node-a and node-b only", seen)
		}
		// node-b's health check starts failing: it gets no more traffic.
		healthz["node-b"]()
		delete(healthz, "node-b")
		waitStatus(t, "be_"+owner+"_80", map[string]string{"node-a": "UP", "node-b": "DOWN"})
		if seen := spread(t, url, 10); seen["node-a"] != 10 {
			t.Fatalf("answers %v after node-b failed: want node-a only", seen)
		}
		var err error
		if healthz["node-b"], err = c.ServeHealthz("node-b", 0); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, "be_"+owner+"_80", map[string]string{"node-b": "UP"})
	})

	t.Run("source ranges", func(t *testing.T) {
		web.mustApply(lbVars("web", []port{{"TCP", 80, 30080}}, func(s map[string]any) {
			s["source_ranges"] = []string{"192.0.2.0/24", "2001:db8::/32"}
		}))
		if _, err := get(url); err == nil {
			t.Fatalf("host %s reached the LB although only 192.0.2.0/24 may", c.HostAddress)
		}
		web.mustApply(lbVars("web", []port{{"TCP", 80, 30080}}, func(s map[string]any) {
			s["source_ranges"] = []string{"192.0.2.0/24", c.HostAddress + "/32"}
		}))
		if _, err := get(url); err != nil {
			t.Fatalf("host in the source ranges was refused: %v", err)
		}
		if got := vipOf(web); got != vip {
			t.Fatalf("VIP changed from %s to %s on update", vip, got)
		}
	})

	t.Run("proxy protocol", func(t *testing.T) {
		web.mustApply(lbVars("web", []port{{"TCP", 80, 30081}}, func(s map[string]any) { s["proxy_protocol"] = true }))
		waitStatus(t, "be_"+owner+"_80", map[string]string{"node-a": "UP", "node-b": "UP"})
		body, err := get(url)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("proxy v2 from %s to %s:80 via ", c.HostAddress, vip)
		if !strings.HasPrefix(body, want) {
			frag, _ := os.ReadFile(filepath.Join(c.StateDir, "fragments", owner+".cfg"))
			t.Logf("fragment:\n%s", frag)
			t.Fatalf("backend saw %q, want prefix %q", body, want)
		}
		// HAProxy adds the header: kube-proxy must send in-cluster
		// clients through it too (ip_mode Proxy), as the openstack set does.
		var ing []ingress
		web.output("ingress", &ing)
		if len(ing) != 1 || ing[0].IP != vip || ing[0].IPMode != "Proxy" {
			t.Fatalf("with PROXY protocol the ingress is %+v, want ip_mode Proxy on %s", ing, vip)
		}
		web.mustApply(lbVars("web", []port{{"TCP", 80, 30081}}, nil))
		if body, err := get(url); err != nil || body != "no proxy header" {
			t.Fatalf("without proxy protocol the backend saw %q (%v)", body, err)
		}
		if got := vipOf(web); got != vip {
			t.Fatalf("VIP changed from %s to %s", vip, got)
		}
	})

	t.Run("ports change", func(t *testing.T) {
		web.mustApply(lbVars("web", []port{{"TCP", 8080, 30080}, {"TCP", 8443, 30080}}, nil))
		for _, p := range []int{8080, 8443} {
			waitStatus(t, fmt.Sprintf("be_%s_%d", owner, p), map[string]string{"node-a": "UP"})
			if body, err := get(fmt.Sprintf("http://%s:%d/", vip, p)); err != nil || body == "node-c" {
				t.Fatalf("port %d: %q %v", p, body, err)
			}
		}
		if _, err := get(url); err == nil {
			t.Fatal("the removed port 80 still answers")
		}
		if got := vipOf(web); got != vip {
			t.Fatalf("VIP changed from %s to %s", vip, got)
		}
	})

	t.Run("UDP is refused at plan time and changes nothing", func(t *testing.T) {
		before, _ := os.ReadFile(filepath.Join(c.StateDir, "fragments", owner+".cfg"))
		err := web.apply(lbVars("web", []port{{"TCP", 8080, 30080}, {"UDP", 53, 30053}}, nil))
		if !errContains(err, "port 53/UDP") {
			t.Fatalf("apply with a UDP port = %v, want an error naming port 53/UDP", err)
		}
		after, _ := os.ReadFile(filepath.Join(c.StateDir, "fragments", owner+".cfg"))
		if string(before) != string(after) || len(after) == 0 {
			t.Fatal("a refused apply changed the fragment")
		}
	})

	t.Run("requested IP", func(t *testing.T) {
		fixedIP := netip.MustParsePrefix(c.VIPPool).Addr().Next().Next().Next().Next().Next().String() // .5
		fixed := newWorkspace(t, "loadbalancer")
		fixed.destroyOnCleanup()
		fixed.mustApply(lbVars("fixed", []port{{"TCP", 80, 30080}}, func(s map[string]any) { s["load_balancer_ip"] = fixedIP }))
		if got := vipOf(fixed); got != fixedIP {
			t.Fatalf("VIP %s, want the requested %s", got, fixedIP)
		}
		clash := newWorkspace(t, "loadbalancer")
		err := clash.apply(lbVars("clash", []port{{"TCP", 80, 30080}}, func(s map[string]any) { s["load_balancer_ip"] = fixedIP }))
		if !errContains(err, "already used by load balancer kind_fixed") {
			t.Fatalf("requesting a taken IP = %v", err)
		}
		err = clash.apply(lbVars("clash", []port{{"TCP", 80, 30080}}, func(s map[string]any) { s["load_balancer_ip"] = "192.0.2.77" }))
		if !errContains(err, "outside the local cloud's VIP pool") {
			t.Fatalf("requesting an IP outside the pool = %v", err)
		}
		if slices.Contains(fragments(t), "kind_clash.cfg") {
			t.Fatal("a refused LB wrote a fragment")
		}
	})

	t.Run("second LB, then destroy the first", func(t *testing.T) {
		api := newWorkspace(t, "loadbalancer")
		api.destroyOnCleanup()
		api.mustApply(lbVars("api", []port{{"TCP", 80, 30080}}, nil))
		vip2 := vipOf(api)
		if vip2 == vip {
			t.Fatalf("two LBs got the same VIP %s", vip)
		}
		waitStatus(t, "be_kind_api_80", map[string]string{"node-a": "UP"})
		if _, err := get("http://" + vip2 + "/"); err != nil {
			t.Fatal(err)
		}
		if err := web.destroy(); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(fragments(t), owner+".cfg") {
			t.Error("destroyed LB's fragment is still there")
		}
		if _, err := os.Stat(filepath.Join(c.StateDir, "claims", vip)); !os.IsNotExist(err) {
			t.Errorf("destroyed LB's claim: %v", err)
		}
		if vipOnLo(vip) {
			t.Errorf("destroyed LB's VIP %s is still on lo", vip)
		}
		if _, err := get(fmt.Sprintf("http://%s:8080/", vip)); err == nil {
			t.Error("destroyed LB still answers")
		}
		if !vipOnLo(vip2) || !slices.Contains(fragments(t), "kind_api.cfg") {
			t.Error("destroying one LB touched another")
		}
		if _, err := get("http://" + vip2 + "/"); err != nil {
			t.Errorf("other LB stopped answering: %v", err)
		}
	})
}

func TestLoadBalancerBadInput(t *testing.T) {
	w := newWorkspace(t, "loadbalancer")
	for _, tc := range []struct {
		name   string
		mutate func(v map[string]any)
		want   string
	}{
		{"name", func(v map[string]any) { v["load_balancer_id"] = "Bad Name; rm -rf /" }, "load_balancer_id must be"},
		{"source range", func(v map[string]any) {
			v["service"].(map[string]any)["source_ranges"] = []string{"10.0.0.0/8 } || true"}
		}, "must be a CIDR"},
		{"health path", func(v map[string]any) {
			v["health_check"] = map[string]any{"protocol": "HTTP", "port": 10256, "path": "/x\nlisten evil"}
		}, "health_check.path"},
		{"settings", func(v map[string]any) {
			v["settings"] = map[string]any{"state_dir": "relative", "cloud_netns": shared.CloudNetns, "vip_pool": shared.VIPPool}
		}, "settings.state_dir"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := lbVars("bad", []port{{"TCP", 80, 30080}}, nil)
			tc.mutate(v)
			err := w.apply(v)
			if !errContains(err, tc.want) {
				t.Fatalf("apply = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if slices.ContainsFunc(fragments(t), func(s string) bool { return strings.Contains(s, "bad") }) {
		t.Fatal("bad input wrote a fragment")
	}
}

// BenchmarkLoadBalancerUpdate measures one LB update end to end: tofu
// plan+apply, fragment rewrite, config check, HAProxy reload until the new
// worker listens.
func BenchmarkLoadBalancerUpdate(b *testing.B) {
	dir := b.TempDir()
	if err := CopyModule(filepath.Join(shared.RepoRoot, "templates", "local", "loadbalancer"), dir); err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	if _, err := RunTofu(ctx, shared.Tofu, dir, "init", "-input=false"); err != nil {
		b.Fatal(err)
	}
	defer func() {
		if _, err := RunTofu(ctx, shared.Tofu, dir, "destroy", "-auto-approve", "-input=false"); err != nil {
			b.Error(err)
		}
	}()
	for i := 0; b.Loop(); i++ {
		v, err := json.Marshal(lbVars("bench", []port{{"TCP", 9000 + i%2, 30080}}, nil))
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "tfccm.auto.tfvars.json"), v, 0o600); err != nil {
			b.Fatal(err)
		}
		if _, err := RunTofu(ctx, shared.Tofu, dir, "apply", "-auto-approve", "-input=false"); err != nil {
			b.Fatal(err)
		}
	}
}
