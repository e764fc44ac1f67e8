package tofu

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/tfccm/tfccm/workspace/locks"
)

// TestCommandRun: a command runs its function in its directory, passes
// its failure on, and one that cannot be set up runs nothing and says so
// (ErrSetup).
func TestCommandRun(t *testing.T) {
	dir := t.TempDir()
	boom := errors.New("boom")
	for _, tc := range []struct {
		name   string
		dir    string
		fnErr  error
		want   error
		called bool
	}{
		{name: "runs in its directory", dir: dir, called: true},
		{name: "its failure passed on", dir: dir, fnErr: boom, want: boom, called: true},
		{name: "no directory: not set up", dir: filepath.Join(dir, "missing"), want: ErrSetup},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Command{Binary: "/bin/true", Dir: tc.dir, Self: locks.SelfClaim("", ""), Env: []map[string]string{{"A": "1"}}}
			called := false
			err := c.Run(context.Background(), func(_ context.Context, tf *tfexec.Terraform) error {
				called = true
				if tf.WorkingDir() != tc.dir {
					t.Errorf("working dir %q, want %q", tf.WorkingDir(), tc.dir)
				}
				return tc.fnErr
			})
			if called != tc.called || !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Run = %v (called %v), want %v (called %v)", err, called, tc.want, tc.called)
			}
		})
	}
}
