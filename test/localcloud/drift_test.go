package localcloud

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// masterCLI sends one command to the local cloud's HAProxy master CLI.
func masterCLI(t *testing.T, cmd string) string {
	t.Helper()
	conn, err := net.Dial("unix", filepath.Join(shared.StateDir, "master.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, cmd+"\n"); err != nil {
		t.Fatal(err)
	}
	conn.(*net.UnixConn).CloseWrite()
	out, _ := io.ReadAll(conn)
	return string(out)
}

// plan runs tofu plan -detailed-exitcode and returns its text and whether
// it has changes.
func (w *workspace) plan() (string, bool) {
	w.t.Helper()
	out, err := RunTofu(context.Background(), shared.Tofu, w.dir, "plan", "-detailed-exitcode", "-input=false", "-no-color")
	if err != nil {
		if strings.Contains(err.Error(), "exit status 2") {
			return err.Error(), true
		}
		w.t.Fatal(err)
	}
	return string(out), false
}

// TestLoadBalancerDrift: what is removed behind tfccm's back (the HAProxy
// fragment, the VIP on lo, a route) is a diff in the next plan, and the
// next apply restores it. A node joining is an in-place update that
// reads as one added backend.
func TestLoadBalancerDrift(t *testing.T) {
	c := shared
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		stop, err := c.ServeHTTP(n, 30090, n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}
	w := newWorkspace(t, "loadbalancer")
	w.destroyOnCleanup()
	two := lbVars("drift", []port{{"TCP", 80, 30090}}, nil)
	two["nodes"] = two["nodes"].([]map[string]any)[:2]
	two["health_check"] = map[string]any{"protocol": "TCP", "port": 30090, "path": nil}
	w.mustApply(two)
	vip := vipOf(w)
	url := "http://" + vip + "/"
	owner := cluster + "_drift"
	waitStatus(t, "be_"+owner+"_80", map[string]string{"node-a": "UP", "node-b": "UP"})

	t.Run("node joining is one added backend, updated in place", func(t *testing.T) {
		three := lbVars("drift", []port{{"TCP", 80, 30090}}, nil)
		three["health_check"] = two["health_check"]
		b, _ := jsonVars(three)
		if err := os.WriteFile(filepath.Join(w.dir, "tfccm.auto.tfvars.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		text, changes := w.plan()
		if !changes {
			t.Fatal("no changes planned for a joining node")
		}
		// The reviewer's view, whitespace-normalized: one server added.
		want := []string{
			`# lbhost_frontend.lb["IPv4"] will be updated in-place`,
			`~ backends = [ + { + address = "` + c.Node("node-c").Address + `" + name = "node-c" }, # (2 unchanged elements hidden) ]`,
			`Plan: 0 to add, 1 to change, 0 to destroy.`,
		}
		flat := strings.Join(strings.Fields(text), " ")
		for _, s := range want {
			if !strings.Contains(flat, s) {
				t.Errorf("plan lacks %q:\n%s", s, text)
			}
		}
		w.mustApply(three)
		waitStatus(t, "be_"+owner+"_80", map[string]string{"node-c": "UP"})
		if got := vipOf(w); got != vip {
			t.Fatalf("VIP changed from %s to %s", vip, got)
		}
	})

	t.Run("fragment removed and reloaded is restored", func(t *testing.T) {
		if err := os.Remove(filepath.Join(c.StateDir, "fragments", owner+".cfg")); err != nil {
			t.Fatal(err)
		}
		masterCLI(t, "reload")
		eventually(t, 10*time.Second, "LB gone after the reload", func() (bool, string) {
			_, err := get(url)
			return err != nil, "still answers"
		})
		if _, changes := w.plan(); !changes {
			t.Fatal("plan shows no changes after the fragment was removed")
		}
		w.mustApply(lbVarsThree())
		waitStatus(t, "be_"+owner+"_80", map[string]string{"node-a": "UP"})
		if _, err := get(url); err != nil {
			t.Fatalf("not restored: %v", err)
		}
	})

	t.Run("VIP removed from the cloud namespace is restored", func(t *testing.T) {
		if out, err := exec.Command("ip", "-n", c.CloudNetns, "addr", "del", vip+"/32", "dev", "lo").CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if _, changes := w.plan(); !changes {
			t.Fatal("plan shows no changes after the VIP was removed")
		}
		w.mustApply(lbVarsThree())
		if !vipOnLo(vip) {
			t.Fatalf("VIP %s not restored", vip)
		}
		if got := vipOf(w); got != vip {
			t.Fatalf("VIP changed from %s to %s", vip, got)
		}
		if _, err := get(url); err != nil {
			t.Fatalf("not answering after repair: %v", err)
		}
	})
}

func lbVarsThree() map[string]any {
	v := lbVars("drift", []port{{"TCP", 80, 30090}}, nil)
	v["health_check"] = map[string]any{"protocol": "TCP", "port": 30090, "path": nil}
	return v
}

// jsonVars is the tfvars file apply writes.
func jsonVars(vars map[string]any) ([]byte, error) { return json.MarshalIndent(vars, "", "  ") }

// TestRoutesDrift: a route deleted or retargeted behind tfccm's back is a
// diff and the next apply restores it.
func TestRoutesDrift(t *testing.T) {
	w := newWorkspace(t, "routes")
	w.destroyOnCleanup()
	vars := routeVars(map[string]any{"node-a-10.244.31.0-24": route("10.244.31.0/24", "node-a", false)})
	w.mustApply(vars)
	want := "10.244.31.0/24 via " + shared.Node("node-a").Address + " "
	if !strings.Contains(cloudRoutes(t, "-4"), want) {
		t.Fatalf("route missing:\n%s", cloudRoutes(t, "-4"))
	}
	for _, sabotage := range [][]string{
		{"ip", "-n", shared.CloudNetns, "route", "del", "10.244.31.0/24"},
		{"ip", "-n", shared.CloudNetns, "route", "replace", "10.244.31.0/24", "via", shared.Node("node-b").Address},
	} {
		if out, err := exec.Command(sabotage[0], sabotage[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v %s", sabotage, err, out)
		}
		if _, changes := w.plan(); !changes {
			t.Fatalf("after %v: plan shows no changes", sabotage[3:])
		}
		w.mustApply(vars)
		if !strings.Contains(cloudRoutes(t, "-4"), want) {
			t.Fatalf("after %v: not restored:\n%s", sabotage[3:], cloudRoutes(t, "-4"))
		}
	}
}
