package hostfiles

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/internal/testkit"
)

const testKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFn3B0tNsg4UhmJRQbcVPMsXWe9J6fuk1Ip3nRGY4r5u"

// TestPrepareScript: the script for a root and a sudo login, as golden
// files, valid sh (sh -n); the key is written back without its comment
// and options. Running it is TestPrepareHost's (lbhost/hosttest).
func TestPrepareScript(t *testing.T) {
	for _, tc := range []struct {
		golden string
		p      Preparation
	}{
		{"prepare-root.sh", Preparation{Name: "lb-a", User: "root", AuthorizedKey: []byte(testKey + " me@laptop\n")}},
		{"prepare-sudo.sh", Preparation{Name: "lb-b", User: "tfccm", AuthorizedKey: []byte(`command="$(id)" ` + testKey + " it's $(reboot)\n")}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			s, err := tc.p.Script()
			if err != nil {
				t.Fatal(err)
			}
			testkit.Golden(t, filepath.Join("testdata", tc.golden), []byte(s))
			if out, err := exec.Command("sh", "-n", "-c", s).CombinedOutput(); err != nil {
				t.Errorf("sh -n: %v: %s", err, out)
			}
			if !strings.Contains(s, "\nkey='"+testKey+" tfccm'\n") || strings.Contains(s, "$(id)") || strings.Contains(s, "reboot") {
				t.Errorf("the key is not the canonical key alone:\n%s", s)
			}
			for _, want := range []string{"groupadd --system " + SocketGroup, "router_id " + tc.p.Name + "\n", "systemctl restart haproxy keepalived"} {
				if !strings.Contains(s, want) {
					t.Errorf("the script lacks %q", want)
				}
			}
		})
	}
}

// TestPrepareScriptRefusesBadInput: every field a user gives is checked
// before anything is written, and the error names it.
func TestPrepareScriptRefusesBadInput(t *testing.T) {
	good := Preparation{Name: "lb-a", User: "root", AuthorizedKey: []byte(testKey)}
	for _, tc := range []struct {
		name string
		edit func(*Preparation)
		want string
	}{
		{"name with a quote", func(p *Preparation) { p.Name = "lb'a" }, `host name "lb'a"`},
		{"name with a newline", func(p *Preparation) { p.Name = "lb\n}" }, "host name"},
		{"empty name", func(p *Preparation) { p.Name = "" }, "host name"},
		{"user with a space", func(p *Preparation) { p.User = "tf ccm" }, `login "tf ccm"`},
		{"user with shell", func(p *Preparation) { p.User = "$(id)" }, "login"},
		{"relative config_dir", func(p *Preparation) { p.ConfigDir = "etc/lb" }, `path "etc/lb"`},
		{"config_dir with ..", func(p *Preparation) { p.ConfigDir = "/etc/../root" }, "path"},
		{"keepalived_config with a space", func(p *Preparation) { p.KeepalivedConfig = "/etc/k a.conf" }, "path"},
		{"not a key", func(p *Preparation) { p.AuthorizedKey = []byte("hello $(id)") }, "the public key"},
		{"a private key", func(p *Preparation) { p.AuthorizedKey = []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n") }, "the public key"},
		{"two keys", func(p *Preparation) { p.AuthorizedKey = []byte(testKey + "\n" + testKey + "\n") }, "more than one key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := good
			tc.edit(&p)
			s, err := p.Script()
			if err == nil || !strings.Contains(err.Error(), tc.want) || s != "" {
				t.Errorf("err %v (script %d bytes), want an error with %q", err, len(s), tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "BEGIN OPENSSH") {
				t.Errorf("the error quotes the file: %v", err)
			}
		})
	}
}
