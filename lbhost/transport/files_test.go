package transport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeyFilesNeverQuoted: a known_hosts_file or private_key_file that is
// not one (a setting pointing at another file on the machine running
// OpenTofu, the CCM's) is named in the error, its content never: the
// parsers quote what they read (knownhosts a line's marker, ssh a PEM
// block's type), and the error reaches a Service's Events.
func TestKeyFilesNeverQuoted(t *testing.T) {
	const marker = "TFCCM-SECRET-MARKER-9c1e"
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		run  func() error
		want string
	}{
		{"known_hosts_file with a marker line", func() error {
			_, err := SSHConfig{KnownHostsFile: write("known_hosts", "@"+marker+" host ssh-ed25519 AAAA\n")}.HostKeyCallback()
			return err
		}, "is not an OpenSSH known_hosts file (its content is not shown)"},
		{"private_key_file of another PEM type", func() error {
			_, _, err := SSHConfig{PrivateKeyFile: write("key", "-----BEGIN "+marker+"-----\nAAAA\n-----END "+marker+"-----\n")}.auth()
			return err
		}, "is not an unencrypted private key (PEM or OpenSSH format) (its content is not shown)"},
		{"private_key_file missing", func() error {
			_, _, err := SSHConfig{PrivateKeyFile: filepath.Join(dir, "none")}.auth()
			return err
		}, "no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), marker) {
				t.Fatalf("the error quotes the file: %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to say %q", err, tc.want)
			}
		})
	}
}
