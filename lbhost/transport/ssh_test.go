package transport

import (
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// CommandLine must make every argv element exactly one literal word for
// a POSIX shell, whatever it contains.
func TestCommandLineIsLiteral(t *testing.T) {
	for _, argv := range [][]string{
		{"plain", "two words"},
		{"it's", `"dq"`, "$(touch /tmp/lbhost-pwned)", "`id`", "a;b|c&d", "*", "~", "$HOME", `back\slash`, ""},
	} {
		cmd := exec.Command("sh", "-c", "printf '%s\\n' "+CommandLine(argv))
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); strings.Join(got, "\x00") != strings.Join(argv, "\x00") {
			t.Errorf("sh saw %q, want %q", got, argv)
		}
	}
}

func TestHostKeyVerification(t *testing.T) {
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	key, _ := ssh.NewPublicKey(pub)
	otherPub, _, _ := ed25519.GenerateKey(rand.Reader)
	other, _ := ssh.NewPublicKey(otherPub)
	pinned := string(ssh.MarshalAuthorizedKey(key))
	addr := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 22}

	if _, err := (SSHConfig{}).HostKeyCallback(); err == nil {
		t.Error("no host key and no known_hosts: want an error (never skip verification)")
	}
	if _, err := (SSHConfig{HostKey: "not a key"}).HostKeyCallback(); err == nil {
		t.Error("unparseable host_key accepted")
	}
	cb, err := SSHConfig{HostKey: pinned}.HostKeyCallback()
	if err != nil {
		t.Fatal(err)
	}
	if err := cb("h:22", addr, key); err != nil {
		t.Errorf("pinned key rejected: %v", err)
	}
	if err := cb("h:22", addr, other); err == nil || !strings.Contains(err.Error(), "host key mismatch") {
		t.Errorf("other key: %v, want a mismatch", err)
	}
}

func TestCheckPath(t *testing.T) {
	for p, ok := range map[string]bool{
		"/run/tfccm/fragments/a_b.cfg": true, "relative/x": false, "/a/../b": false, "/a b": false, "/a;b": false, "/a/": false, "/a\n": false,
	} {
		if err := CheckPath(p); (err == nil) != ok {
			t.Errorf("CheckPath(%q) = %v, want ok=%v", p, err, ok)
		}
	}
}

// With Sudo every command runs behind `sudo -n --`, its own argv after
// "--" (never an option of sudo), still one literal word per element.
func TestSudoPrefix(t *testing.T) {
	argv := []string{"-u", "it's", "$(id)"}
	if got := (&SSH{}).privileged(argv); strings.Join(got, "\x00") != strings.Join(argv, "\x00") {
		t.Errorf("without sudo: %q", got)
	}
	got := (&SSH{cfg: SSHConfig{Sudo: true}}).privileged(argv)
	want := []string{"sudo", "-n", "--", "-u", "it's", "$(id)"}
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("with sudo: %q, want %q", got, want)
	}
	if len(argv) != 3 {
		t.Errorf("the caller's argv changed: %q", argv)
	}
}
