package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/tfccm/tfccm/workspace/locks"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/tfccm/tfccm/internal/secret"
	"github.com/tfccm/tfccm/internal/tfenv"
)

// Lock describes the state lock of a workspace, as an operator sees it.
type Lock struct {
	// Held is false when nobody holds the lock.
	Held bool
	// ID, Who, Operation and Created are tofu's lock info.
	ID, Who, Operation, Created string
	// Holder is the one-line description used in Events and messages.
	Holder string
	// Ours is true when the workspace's claim names the lock's holder: it
	// was taken by a tfccm run of this identity.
	Ours bool
	// Stale is true when the holder is known to be gone (a tfccm run whose
	// process on this host has exited, or an earlier boot).
	Stale bool
	// Why explains Ours and Stale.
	Why string
}

// UnlockOptions are what `tfccm unlock` needs to reach a workspace.
type UnlockOptions struct {
	Binary   string
	Env      tfenv.Settings
	Identity string
	Timeout  time.Duration
}

// InspectLock asks tofu whether the workspace's state is locked (a plan
// without refresh that only tries to take the lock) and judges whether a
// held lock is a stale one of tfccm's own.
func InspectLock(ctx context.Context, opts UnlockOptions, spec *Spec, dir string) (Lock, error) {
	r, err := newUnlockRunner(opts, spec, dir)
	if err != nil {
		return Lock{}, err
	}
	err = r.withCredentials("plan", func(vf *tfexec.VarFileOption) error {
		opts := []tfexec.PlanOption{tfexec.Refresh(false), tfexec.LockTimeout("0s")}
		if vf != nil {
			opts = append(opts, vf)
		}
		return r.step(ctx, "plan", func(ctx context.Context, tf *tfexec.Terraform) error {
			_, err := tf.Plan(ctx, opts...)
			return err
		})
	})
	var e *Error
	if err == nil || !errors.As(err, &e) || e.LockHolder == "" {
		if err != nil && !errors.Is(err, ErrLocked) {
			return Lock{}, fmt.Errorf("workspace %s: %w", spec.Name, err)
		}
		return Lock{}, nil
	}
	li := e.HeldLock()
	l := Lock{Held: true, ID: li.ID, Who: li.Who, Operation: li.Operation, Created: li.Created, Holder: li.Holder()}
	c, ok := locks.ReadClaim(dir)
	self := locks.SelfClaim(opts.Identity, "")
	switch {
	case !ok || c.Identity != self.Identity || c.Who != li.Who:
		l.Why = "no tfccm run of this deployment claims it: someone else (a person or another controller) holds it"
	case c.Host != self.Host && c.BootID != self.BootID:
		l.Ours = true
		l.Why = fmt.Sprintf("taken by a tfccm run on host %s, which this command cannot check is gone", c.Host)
	case locks.ProcessAlive(c.PID, c.PIDStart) && !(c.BootID != "" && c.BootID != self.BootID):
		l.Ours = true
		l.Why = fmt.Sprintf("taken by tfccm process %d on this host, which is still running", c.PID)
	default:
		l.Ours, l.Stale = true, true
		l.Why = fmt.Sprintf("taken by tfccm process %d on this host, which has exited", c.PID)
	}
	return l, nil
}

// ForceUnlock releases lock id of the workspace (tofu force-unlock; for
// the kubernetes backend, the Lease directly when tofu cannot load the
// state) and removes the stale claim.
func ForceUnlock(ctx context.Context, opts UnlockOptions, spec *Spec, dir, id string) error {
	r, err := newUnlockRunner(opts, spec, dir)
	if err != nil {
		return err
	}
	if err := r.forceUnlock(ctx, id); err != nil {
		return err
	}
	locks.RemoveClaim(dir)
	return nil
}

func newUnlockRunner(opts UnlockOptions, spec *Spec, dir string) (*runner, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("workspace %s: %w", spec.Name, err)
	}
	env, creds, secrets, err := tfenv.Workspace(opts.Env)
	if err != nil {
		return nil, err
	}
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Minute
	}
	e := &tofuSetup{opts: &Options{Binary: opts.Binary, Timeout: opts.Timeout, GracePeriod: 10 * time.Second, Identity: opts.Identity}, env: env,
		credentials: creds, inits: &initCache{binary: opts.Binary}}
	backendEnv, _ := splitBackendSecrets(spec)
	scrub := secret.NewScrubber(secrets, mapValues(spec.BackendConfig))
	return &runner{e: e, dir: dir, env: backendEnv, backend: spec.Backend, scrub: scrub, unlocked: true, spec: spec}, nil
}
