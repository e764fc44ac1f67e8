package tfprovider_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sharedLB is one owner's VIP (sharing with token share, or alone when
// share is "") and a frontend on one port.
func sharedLB(c *cloud, owner, share string, port, nodePort int) string {
	shareAttr := ""
	if share != "" {
		shareAttr = fmt.Sprintf("share = %q", share)
	}
	return fmt.Sprintf(`
resource "lbhost_vip" "vip" {
  owner = %[1]q
  pool  = %[2]q
  %[3]s
}

resource "lbhost_frontend" "lb" {
  name     = %[1]q
  address  = lbhost_vip.vip.address
  ports    = [{ port = %[4]d, node_port = %[5]d }]
  backends = [{ name = "node-a", address = %[6]q }]
  health_check = { protocol = "TCP", interval = "200ms", rise = 1, fall = 1 }
}

output "vip" { value = lbhost_vip.vip.address }
`, owner, c.pool, shareAttr, port, nodePort, c.nodeA)
}

func TestSharedVIP(t *testing.T) {
	c := newCloud(t)
	serve(t, c.nodeA+":30080", "web")
	serve(t, c.nodeA+":30081", "api")
	web := newWorkspace(t, c, sharedLB(c, "c1_web", "s1", 80, 30080))
	web.apply()
	vip := web.output("vip")

	// The second sharer is allocated the address claimed with its token.
	api := newWorkspace(t, c, sharedLB(c, "c1_api", "s1", 8080, 30081))
	api.apply()
	if got := api.output("vip"); got != vip {
		t.Fatalf("second sharer got %s, want the shared %s", got, vip)
	}
	waitFor(t, "http://"+vip+"/", "web")
	waitFor(t, "http://"+vip+":8080/", "api")
	claim := filepath.Join(c.dir, "claims", vip)
	if b := string(mustRead(t, claim)); b != "c1_web share=s1\nc1_api share=s1\n" {
		t.Fatalf("claim file = %q", b)
	}

	// Neither another token nor an owner without one may have it.
	for _, share := range []string{"s2", ""} {
		other := newWorkspace(t, c, strings.Replace(sharedLB(c, "c1_other", share, 9090, 30082), "  pool  =", fmt.Sprintf("  address = %q\n  pool  =", vip), 1))
		if out, code := other.cmd("plan", "-input=false", "-no-color"); code == 0 || !strings.Contains(out, "already used by load balancer c1_api") {
			t.Fatalf("share %q: plan for the shared address: exit %d, want an error naming a sharer\n%s", share, code, out)
		}
	}

	// Destroying one sharer keeps the address and the other's frontend.
	web.ok("destroy", "-auto-approve", "-input=false", "-no-color")
	if b := string(mustRead(t, claim)); b != "c1_api share=s1\n" {
		t.Fatalf("claim after destroying web = %q", b)
	}
	if !strings.Contains(run(t, "ip", "-n", c.netns, "-4", "addr", "show", "dev", "lo"), " "+vip+"/32") {
		t.Fatalf("%s removed while c1_api still shares it", vip)
	}
	waitFor(t, "http://"+vip+":8080/", "api")
	if out, code := api.cmd("plan", "-detailed-exitcode", "-input=false", "-no-color"); code != 0 {
		t.Fatalf("plan of the remaining sharer: exit %d, want 0\n%s", code, out)
	}

	// The last sharer takes the address with it.
	api.ok("destroy", "-auto-approve", "-input=false", "-no-color")
	if _, err := os.Stat(claim); !os.IsNotExist(err) {
		t.Fatalf("claim left after the last sharer: %v", err)
	}
	if strings.Contains(run(t, "ip", "-n", c.netns, "-4", "addr", "show", "dev", "lo"), " "+vip+"/32") {
		t.Fatalf("%s still configured after the last sharer", vip)
	}
}

// With vrrp, the sharers hold the address with one VRRP instance (and one
// virtual router id), kept until the last sharer goes.
func TestSharedVRRPVIP(t *testing.T) {
	c := newCloud(t)
	config, pidFile := startKeepalived(t, c)
	ws := map[string]*workspace{}
	for _, owner := range []string{"c1_dns-tcp", "c1_dns-udp"} {
		body := fmt.Sprintf(`
resource "lbhost_vip" "v" {
  owner     = %q
  pool      = %q
  interface = %q
  share     = "s1"
  vrrp = {
    interface               = %q
    virtual_router_id_range = "10-20"
  }
}
output "vip" { value = lbhost_vip.v.address }
output "vrid" { value = lbhost_vip.v.vrrp.virtual_router_id }
`, owner, c.pool, c.link, c.link)
		w := newWorkspace(t, c, body)
		b := strings.Replace(string(mustRead(t, filepath.Join(w.dir, "main.tf"))), "  config_dir = ", fmt.Sprintf("  keepalived_config   = %q\n  keepalived_pid_file = %q\n  config_dir = ", config, pidFile), 1)
		if err := os.WriteFile(filepath.Join(w.dir, "main.tf"), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
		w.apply()
		ws[owner] = w
	}
	tcp, udp := ws["c1_dns-tcp"], ws["c1_dns-udp"]
	if a, b := tcp.output("vip"), udp.output("vip"); a != b {
		t.Fatalf("sharers got %s and %s", a, b)
	}
	if a, b := tcp.output("vrid"), udp.output("vrid"); a != b {
		t.Fatalf("sharers got virtual router ids %s and %s", a, b)
	}
	frags, _ := filepath.Glob(filepath.Join(c.dir, "keepalived", "*.conf"))
	if len(frags) != 1 || filepath.Base(frags[0]) != "share.s1.conf" {
		t.Fatalf("keepalived fragments = %v, want one share.s1.conf", frags)
	}
	for _, w := range []*workspace{tcp, udp} {
		if out, code := w.cmd("plan", "-detailed-exitcode", "-input=false", "-no-color"); code != 0 {
			t.Fatalf("plan after apply: exit %d, want 0\n%s", code, out)
		}
	}
	tcp.ok("destroy", "-auto-approve", "-input=false", "-no-color")
	if _, err := os.Stat(frags[0]); err != nil {
		t.Fatalf("shared VRRP instance removed while a sharer is left: %v", err)
	}
	udp.ok("destroy", "-auto-approve", "-input=false", "-no-color")
	if _, err := os.Stat(frags[0]); !os.IsNotExist(err) {
		t.Fatalf("shared VRRP instance left after the last sharer: %v", err)
	}
}
