package frr

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.conf")

func TestRenderGolden(t *testing.T) {
	got, err := Render(good())
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "speaker.conf")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("Render differs from %s (go test ./lbhost/frr -update):\n%s", golden, got)
	}
	again, _ := Render(good())
	if again != got {
		t.Fatal("Render is not deterministic")
	}
}

func TestRenderRefusesBadConfig(t *testing.T) {
	c := good()
	c.Pools[0].Communities = []string{"1:2\nrouter bgp 1"}
	if s, err := Render(c); err == nil {
		t.Fatalf("Render took a community with a newline:\n%s", s)
	}
}

// TestRenderLoadsInFRR checks the file with Debian's vtysh, whose dry run
// parses every line with bgpd's and bfdd's grammar: a line FRR 8.4 does
// not know fails here, not on a host.
func TestRenderLoadsInFRR(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Debian's vtysh (make tools)")
	}
	s, err := Render(good())
	if err != nil {
		t.Fatal(err)
	}
	if err := dryRun(t, s); err != nil {
		t.Fatal(err)
	}
	// The check can fail: a line FRR does not know.
	if err := dryRun(t, strings.Replace(s, " timers 1 3", " timerz 1 3", 1)); err == nil {
		t.Fatal("vtysh -C took an unknown command")
	}
}

func dryRun(t *testing.T, conf string) error {
	t.Helper()
	file := filepath.Join(t.TempDir(), "frr.conf")
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	vtysh, err := exec.LookPath("vtysh")
	if err != nil {
		t.Fatalf("vtysh: %v (Debian's frr: make tools installs it)", err)
	}
	if out, err := exec.Command(vtysh, "-C", "-f", file).CombinedOutput(); err != nil {
		return fmt.Errorf("vtysh -C: %v\n%s", err, out)
	}
	return nil
}

func TestMaskedHidesPasswords(t *testing.T) {
	s, err := Render(good())
	if err != nil {
		t.Fatal(err)
	}
	m := Masked(s)
	if strings.Contains(m, "s3cr3t!") || !strings.Contains(m, " neighbor 10.77.0.1 password <password>\n") {
		t.Fatalf("Masked:\n%s", m)
	}
	if Masked(m) != m || strings.Count(m, "\n") != strings.Count(s, "\n") {
		t.Fatal("Masked changed more than the password")
	}
}
