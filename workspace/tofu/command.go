package tofu

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/tfccm/tfccm/workspace/locks"
)

// One tofu command in one directory, as a process of its own: its
// environment, its run's marks and provider sockets, its thread, and the
// ending of what it left running when it failed.

// Command is what one tofu command runs with in one directory.
type Command struct {
	// Binary is the executable run (tofu, terraform, or the job runner's
	// stand-in).
	Binary string
	// Dir is the workspace directory the command runs in.
	Dir string
	// Env is the command's environment, merged in order (later maps win);
	// the run's marks and socket directory come after it, then Extra.
	Env []map[string]string
	// Extra is set last (the job runner's own variables).
	Extra map[string]string
	// Self is this process, whose run the command is (RunID).
	Self locks.Claim
	// Sockets is the providers' socket directory ("" with mTLS).
	Sockets SocketDir
	// GracePeriod is how long tofu has, once interrupted, to save its state.
	GracePeriod time.Duration
}

// ErrSetup marks a failure to set up a command (no process started).
var ErrSetup = errors.New("set up tofu command")

// Run runs fn's command as a run of its own (procs.go): its OS thread is
// locked while tofu runs, so that tofu's parent-death signal fires when
// this process dies and not when the thread is retired, and whatever a
// command that failed or was interrupted left running (its providers) is
// killed with its process group. A failure to set the command up wraps
// ErrSetup.
func (c Command) Run(ctx context.Context, fn func(context.Context, *tfexec.Terraform) error) error {
	id := RunID(c.Self)
	sockets, removeSockets := c.Sockets.CommandSockets(id)
	defer removeSockets()
	tf, err := c.terraform(id, sockets)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSetup, err)
	}
	runtime.LockOSThread()
	err = fn(ctx, tf)
	runtime.UnlockOSThread()
	if err != nil {
		EndRun(id, filepath.Base(c.Dir))
	}
	return err
}

// terraform is one tfexec.Terraform for run id, with the command's
// explicit environment and graceful (SIGINT) cancellation.
func (c Command) terraform(id string, sockets map[string]string) (*tfexec.Terraform, error) {
	tf, err := tfexec.NewTerraform(c.Dir, c.Binary)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, m := range c.Env {
		maps.Copy(env, m)
	}
	maps.Copy(env, RunEnv(id, c.Dir))
	maps.Copy(env, sockets)
	maps.Copy(env, c.Extra)
	if err := tf.SetEnv(env); err != nil {
		return nil, err
	}
	// Providers without mTLS, their sockets in a private directory
	// (sockets.go).
	if err := tf.SetDisablePluginTLS(c.Sockets != ""); err != nil {
		return nil, err
	}
	if err := tf.SetWaitDelay(c.GracePeriod); err != nil {
		return nil, err
	}
	return tf, nil
}
