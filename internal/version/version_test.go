package version_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/internal/version"
)

func TestUnstamped(t *testing.T) {
	if got := version.Version(); got != version.Unstamped {
		t.Errorf("Version() = %q in a test binary, want %q", got, version.Unstamped)
	}
	if s := version.String("tfccm"); !strings.HasPrefix(s, "tfccm "+version.Unstamped+" (commit ") {
		t.Errorf("String() = %q", s)
	}
}

// TestStamped builds the tfccm CLI with the -X flags the Makefile's
// VERSION_LDFLAGS uses and checks `tfccm version` reports them: the
// variable names in the flags are the ones this package reads.
func TestStamped(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "tfccm")
	flags := "-X github.com/tfccm/tfccm/internal/version.version=v9.8.7-2-gabc1234 -X github.com/tfccm/tfccm/internal/version.commit=abc1234def"
	build := exec.Command("go", "build", "-ldflags", flags, "-o", bin, "github.com/tfccm/tfccm/cmd/tfccm")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("tfccm version: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "tfccm v9.8.7-2-gabc1234 (commit abc1234def, go") {
		t.Errorf("tfccm version = %q", out)
	}
	out, err = exec.Command(bin, "version", "-short").CombinedOutput()
	if err != nil || string(out) != "v9.8.7-2-gabc1234\n" {
		t.Errorf("tfccm version -short = %q, %v", out, err)
	}
}
