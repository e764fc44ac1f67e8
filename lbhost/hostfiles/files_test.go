package hostfiles

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/internal/repo"
)

// TestDocsShowTheFiles: docs/install-baremetal.md shows the exact sudoers
// lines and names every file it installs, where Check expects it.
func TestDocsShowTheFiles(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "install-baremetal.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(File("sudoers.d/tfccm"), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") && !strings.Contains(string(doc), line+"\n") {
			t.Errorf("docs/install-baremetal.md lacks the sudoers line %q", line)
		}
	}
	for _, p := range []string{HAProxyDropIn, KeepalivedConfig, SysctlFile, SudoersFile, DefaultConfigDir + "/base.cfg"} {
		if !strings.Contains(string(doc), p) {
			t.Errorf("docs/install-baremetal.md does not say where %s goes", p)
		}
	}
	if !strings.Contains(string(doc), "apt-get install "+strings.Join(Packages(), " ")) {
		t.Errorf("docs/install-baremetal.md does not install the packages %v", Packages())
	}
}

func TestFilesForOtherPaths(t *testing.T) {
	args := HAProxyArgs(DropIn("/srv/lb"))
	want := []string{"-f", "/srv/lb/base.cfg", "-S", "/srv/lb/master.sock,mode,660,group," + SocketGroup, "-f", "/srv/lb/fragments"}
	if !slices.Equal(args, want) {
		t.Errorf("HAProxyArgs: %q, want %q", args, want)
	}
	if got := KeepalivedMain("lb-b", "/srv/lb"); !strings.Contains(got, "router_id lb-b\n") || !strings.Contains(got, "\n"+IncludeLine("/srv/lb")+"\n") {
		t.Errorf("KeepalivedMain:\n%s", got)
	}
	if got := HAProxyBase("/srv/lb"); strings.Contains(got, DefaultConfigDir) || !strings.Contains(got, "server-state-file /srv/lb/server-state") {
		t.Errorf("HAProxyBase:\n%s", got)
	}
	if got := Sudoers("ops"); !strings.Contains(got, "\nops ALL=(root) NOPASSWD: TFCCM_LBHOST\n") {
		t.Errorf("Sudoers:\n%s", got)
	}
	if c := SudoCommands(); len(c) < 10 || !slices.Contains(c, "/usr/sbin/haproxy") {
		t.Errorf("SudoCommands: %v", c)
	}
	if s := Sysctls(); s["net.ipv4.ip_nonlocal_bind"] != "1" {
		t.Errorf("Sysctls: %v", s)
	}
}
