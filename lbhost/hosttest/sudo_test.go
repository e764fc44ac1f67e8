package hosttest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/lbhost/hosttest"
	"github.com/tfccm/tfccm/test/localcloud"
)

// sudoUser is the unprivileged login of the sudo tests (a system user of
// this machine, created once).
const sudoUser = "tfccm-lbtest"

// TestBaremetalModuleWithSudo applies and destroys the baremetal set's
// loadbalancer module on hosts whose SSH login is an unprivileged user
// with exactly lbhost/hostfiles' sudoers rules (sudo = true): VIP claims,
// VRRP instances, frontends, the lock, HAProxy's check and reload all work
// through `sudo -n`. Without the rules the apply fails at once, naming sudo.
func TestBaremetalModuleWithSudo(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	hs, err := hosttest.Start(context.Background(), hosttest.Options{Cloud: cloud, Dir: t.TempDir(), SudoUser: sudoUser})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hs.Stop(); err != nil {
			t.Errorf("lbhosts: %v", err)
		}
	})
	dir, vars, tofu := baremetalModule(t, cloud, hs)
	vars("node-a", "node-b")
	tofu("init", "-input=false", "-no-color")

	if err := hs.RemoveSudoers(); err != nil {
		t.Fatal(err)
	}
	_, err = localcloud.RunTofu(context.Background(), repo.Tofu(t), dir, "apply", "-auto-approve", "-input=false", "-no-color")
	if err == nil || !strings.Contains(err.Error(), "sudo") {
		t.Fatalf("apply without the sudoers rules: %v, want an error naming sudo", err)
	}
	if err := hs.InstallSudoers(); err != nil {
		t.Fatal(err)
	}

	tofu("apply", "-auto-approve", "-input=false", "-no-color")
	for _, h := range hs.Hosts {
		data, err := os.ReadFile(filepath.Join(h.ConfigDir, "fragments", "c1_web.cfg"))
		if err != nil || !strings.Contains(string(data), cloud.Node("node-b").Address+":30080") {
			t.Errorf("%s: frontend %q, %v", h.Name, data, err)
		}
		st, err := os.Stat(filepath.Join(h.ConfigDir, "fragments", "c1_web.cfg"))
		if err == nil && st.Sys() != nil && fileUID(st) != 0 {
			t.Errorf("%s: the fragment is owned by uid %d, not root (written without sudo?)", h.Name, fileUID(st))
		}
	}
	if out := tofu("plan", "-detailed-exitcode", "-input=false", "-no-color"); !strings.Contains(out, "No changes") {
		t.Errorf("plan after apply (Read through sudo) is not clean:\n%s", out)
	}
	tofu("destroy", "-auto-approve", "-input=false", "-no-color")
	for _, h := range hs.Hosts {
		if objs := h.Objects(); len(objs) != 0 {
			t.Errorf("%s: objects left after destroy: %v", h.Name, objs)
		}
	}
}

// fileUID is the owner of a file.
func fileUID(st os.FileInfo) uint32 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return s.Uid
	}
	return 0
}
