package workspace

// State locks as `tfccm unlock` sees them: a workspace's lock inspected
// and released outside the engine (package locks judges a lock, package
// tofu runs the commands).

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/tfccm/tfccm/internal/secret"
	"github.com/tfccm/tfccm/internal/tfenv"
	"github.com/tfccm/tfccm/workspace/locks"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// UnlockOptions are what `tfccm unlock` needs to reach a workspace.
type UnlockOptions struct {
	Binary   string
	Env      tfenv.Settings
	Identity string
	Timeout  time.Duration
}

// InspectLock asks tofu whether the workspace's state is locked and
// judges whether a held lock is a stale one of tfccm's own.
func InspectLock(ctx context.Context, opts UnlockOptions, spec *Spec, dir string) (locks.Lock, error) {
	r, err := newUnlockRunner(opts, spec, dir)
	if err != nil {
		return locks.Lock{}, err
	}
	li, err := r.TryLock(ctx)
	if err != nil {
		return locks.Lock{}, fmt.Errorf("workspace %s: %w", spec.Name, err)
	}
	if li == nil {
		return locks.Lock{}, nil
	}
	return locks.Judge(*li, dir, opts.Identity), nil
}

// ForceUnlock releases lock id of the workspace (tofu force-unlock; for
// the kubernetes backend, the Lease directly when tofu cannot load the
// state) and removes the stale claim.
func ForceUnlock(ctx context.Context, opts UnlockOptions, spec *Spec, dir, id string) error {
	r, err := newUnlockRunner(opts, spec, dir)
	if err != nil {
		return err
	}
	if err := r.ForceUnlock(ctx, id); err != nil {
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
	t := &tofu.Setup{Binary: opts.Binary, Timeout: opts.Timeout, GracePeriod: 10 * time.Second, Env: env,
		Credentials: creds, Inits: tofu.NewInitCache(opts.Binary, "", "", nil), Metrics: engineMetrics{}}
	r := newRunner(t, dir, spec, secret.NewScrubber(secrets, mapValues(spec.BackendConfig)))
	r.Unlocked = true
	return r, nil
}
