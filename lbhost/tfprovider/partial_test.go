package tfprovider_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPartialFailure: the VIP is claimed and the fragment written and
// checked, but HAProxy cannot be reloaded (its master CLI is away). The
// apply fails saying so, state keeps what was done (the VIP, the
// frontend), and the next apply converges without claiming another VIP.
func TestPartialFailure(t *testing.T) {
	c := newCloud(t)
	serve(t, c.nodeA+":30080", "node-a")
	w := newWorkspace(t, c, lbConfig(c, []string{backend("node-a", c.nodeA)}, ""))
	sock := filepath.Join(c.dir, "master.sock")
	if err := os.Rename(sock, sock+".away"); err != nil {
		t.Fatal(err)
	}
	out, code := w.cmd("apply", "-auto-approve", "-input=false", "-no-color")
	if code == 0 || !strings.Contains(out, "master CLI") || !strings.Contains(out, "the next apply reloads it") {
		t.Fatalf("apply with HAProxy unreachable: exit %d\n%s", code, out)
	}
	state := w.ok("state", "list")
	for _, r := range []string{"lbhost_vip.vip", "lbhost_frontend.web"} {
		if !strings.Contains(state, r) {
			t.Errorf("state lacks %s after a partial failure:\n%s", r, state)
		}
	}
	claims, _ := os.ReadDir(filepath.Join(c.dir, "claims"))
	if len(claims) != 1 {
		t.Fatalf("claims: %v", claims)
	}
	vip := claims[0].Name()

	if err := os.Rename(sock+".away", sock); err != nil {
		t.Fatal(err)
	}
	w.apply()
	if got := w.output("vip"); got != vip {
		t.Errorf("VIP after resuming = %s, want the one claimed before, %s", got, vip)
	}
	if claims, _ := os.ReadDir(filepath.Join(c.dir, "claims")); len(claims) != 1 {
		t.Errorf("claims after resuming: %v, want exactly one", claims)
	}
	waitFor(t, "http://"+vip+"/", "node-a")
	if out, code := w.cmd("plan", "-detailed-exitcode", "-input=false", "-no-color"); code != 0 {
		t.Fatalf("plan after converging: exit %d\n%s", code, out)
	}
}
