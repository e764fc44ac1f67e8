package tfenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPluginSocketDir: the directory is made or taken over with mode 0700;
// a path too long for unix sockets gets a private temporary directory
// instead; a file, a symbolic link or another user's directory is refused.
func TestPluginSocketDir(t *testing.T) {
	base := t.TempDir()
	long := filepath.Join(base, strings.Repeat("x", maxSocketDir))
	for _, tc := range []struct {
		name    string
		setup   func(p string) error
		path    string
		wantErr string
	}{
		{name: "new", path: filepath.Join(base, "new")},
		{name: "existing, too open", path: filepath.Join(base, "open"), setup: func(p string) error { return os.Mkdir(p, 0o777) }},
		{name: "too long", path: long},
		{name: "a file", path: filepath.Join(base, "file"), setup: func(p string) error { return os.WriteFile(p, nil, 0o600) }, wantErr: "not a directory"},
		{name: "a symlink", path: filepath.Join(base, "link"), setup: func(p string) error { return os.Symlink(t.TempDir(), p) }, wantErr: "not a directory"},
		{name: "another user's", path: filepath.Join(base, "other"), setup: func(p string) error {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a directory to another user")
			}
			if err := os.Mkdir(p, 0o700); err != nil {
				return err
			}
			return os.Chown(p, 4242, 4242)
		}, wantErr: "belongs to another user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				if err := tc.setup(tc.path); err != nil {
					t.Fatal(err)
				}
			}
			got, err := PluginSocketDir(tc.path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("PluginSocketDir(%s) = %q, %v; want an error saying %q", tc.name, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.path {
				t.Cleanup(func() { _ = os.RemoveAll(got) })
			}
			if len(got) > maxSocketDir {
				t.Errorf("socket directory %s is longer than %d bytes", got, maxSocketDir)
			}
			if tc.path != long && got != tc.path {
				t.Errorf("got %s, want %s", got, tc.path)
			}
			st, err := os.Lstat(got)
			if err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
				t.Errorf("%s: %v, %v; want a directory with mode 0700", got, st.Mode(), err)
			}
		})
	}
}

// TestBuildSocketDir: the socket directory is passed to providers.
func TestBuildSocketDir(t *testing.T) {
	env, _, err := Build(Settings{PluginSocketDir: "/w/.plugins"})
	if err != nil {
		t.Fatal(err)
	}
	if env[SocketDirVar] != "/w/.plugins" {
		t.Errorf("%s = %q", SocketDirVar, env[SocketDirVar])
	}
	if env, _, _ := Build(Settings{}); env[SocketDirVar] != "" {
		t.Errorf("%s set without a socket directory", SocketDirVar)
	}
	if err := CheckName(SocketDirVar); err == nil {
		t.Errorf("terraform.env may set %s", SocketDirVar)
	}
}
