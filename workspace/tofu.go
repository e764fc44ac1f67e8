package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/tfccm/tfccm/workspace/locks"
	"github.com/tfccm/tfccm/workspace/tofu"

	"github.com/hashicorp/terraform-exec/tfexec"
	"github.com/tfccm/tfccm/internal/secret"
	"k8s.io/klog/v2"
)

// tofu commands: the runner runs one command at a time in a workspace
// directory (environment, timeout, metrics, stale-lock release, errors) and
// holds the commands the passes use (init, force-unlock, state push,
// outputs).

// tofuSetup is what every runner shares: the engine's options, tofu's
// environment and the configured credentials, what inits share, this
// process's claim and the providers' socket directory.
type tofuSetup struct {
	opts *Options
	// env is every tofu's environment but the credentials; credentials
	// are the configured ones, each given only to the workspaces whose
	// template declares it (credentials_decl.go).
	env, credentials map[string]string
	inits            *initCache // initcache.go
	scrub            *secret.Scrubber
	self             locks.Claim    // this process, for claim files
	sockets          tofu.SocketDir // "" with mTLS (sockets.go)
}

// Tool is the name of the binary run ("tofu", "terraform"), for messages.
func (t *tofuSetup) Tool() string { return filepath.Base(t.opts.Binary) }

// runner runs tofu commands in one workspace directory.
type runner struct {
	e        *tofuSetup
	dir      string
	env      map[string]string // the workspace's own variables (secret backend settings)
	backend  BackendInfo
	scrub    *secret.Scrubber
	oldClaim locks.Claim
	hadClaim bool
	unlocked bool
	spec     *Spec // for init again (reinit)
	// declDir holds the workspace's CredentialsFile ("" = dir): a probe's
	// copy reads its workspace's declaration.
	declDir  string
	reinited bool
	planLine *tofu.PlanLineWriter // the last plan's summary line (plancounts.go)
	// unsaved is the stdout of an apply that plans itself (applyUnsaved):
	// it is planning until its plan's summary line is seen.
	unsaved *tofu.PlanLineWriter
	// For the gate: what the pass is for, and its verdict.
	drift, created bool
	verdict        GateVerdict
}

// init runs tofu init, with the spec's secret backend settings in a
// -backend-config file outside the workspace that is removed right after,
// then selects (creating if needed) the spec's Terraform workspace. A
// workspace without a lock file starts from the one its template's
// earlier inits share (initcache.go); one that does not fit is dropped
// and init runs again without it. A fresh workspace whose template has a
// prepared .terraform (prepared.go) starts from that instead, and init
// does not run at all.
func (r *runner) init(ctx context.Context, spec *Spec, migrate bool) error {
	key := r.e.inits.initCacheKey(spec)
	fresh := !migrate && !r.reinited && !exists(filepath.Join(r.dir, ".terraform"))
	pinned, perr := r.e.inits.pinLockFile(r.dir)
	if perr != nil {
		return &Error{Op: "init", Summary: perr.Error()}
	}
	seeded := !pinned && !r.reinited && r.e.inits.seedLockFile(r.dir, key)
	if fresh && (seeded || pinned) && r.e.inits.seedPrepared(r.dir, key, spec) {
		operationsTotal.WithLabelValues("init", resultPrepared).Inc()
		return nil
	}
	unlinkPrepared(r.dir)
	err := r.initDir(ctx, spec, migrate)
	// A shared lock file that does not fit is dropped; one a provider's
	// package does not match is kept, and so is the refusal.
	if err != nil && seeded && !r.reinited && ctx.Err() == nil && ProviderMismatch(err) == "" {
		klog.InfoS("Init with the shared dependency lock file failed; dropping it and running init without it", "workspace", spec.Name, "err", err)
		r.e.inits.dropCachedLock(key)
		if rerr := os.Remove(filepath.Join(r.dir, lockFile)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return err
		}
		err = r.initDir(ctx, spec, migrate)
	}
	if err == nil {
		r.e.inits.keepLockFile(r.dir, key)
		r.e.inits.keepPrepared(r.dir, key, spec)
	}
	return err
}

// initDir is init proper: tofu init and the workspace selection.
func (r *runner) initDir(ctx context.Context, spec *Spec, migrate bool) error {
	opts := []tfexec.InitOption{tfexec.Upgrade(false), tfexec.ForceCopy(migrate)}
	if _, file := splitBackendSecrets(spec); len(file) > 0 {
		path, cleanup, err := writeBackendConfig(r.e.opts.WorkDir, spec.Name, file)
		if err != nil {
			return &Error{Op: "init", Summary: r.scrub.Scrub(err.Error())}
		}
		defer cleanup()
		opts = append(opts, tfexec.BackendConfig(path))
	}
	if err := r.step(ctx, "init", func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.Init(ctx, opts...)
	}); err != nil {
		return err
	}
	if !spec.namedWorkspace() {
		return nil
	}
	var current string
	if err := r.step(ctx, "workspace", func(ctx context.Context, tf *tfexec.Terraform) error {
		var err error
		_, current, err = tf.WorkspaceList(ctx)
		return err
	}); err != nil {
		return err
	}
	if current == spec.StateWorkspace {
		return nil
	}
	if err := r.step(ctx, "workspace", func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.WorkspaceSelect(ctx, spec.StateWorkspace)
	}); err == nil {
		return nil
	}
	return r.step(ctx, "workspace", func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.WorkspaceNew(ctx, spec.StateWorkspace)
	})
}

// reinit is init again after a step said the installed providers or
// modules no longer match (see Error.Reinit). The dependency lock file is
// kept (integrity.go): init reinstalls what it locks (a stale copy in
// .terraform), and refuses a package that does not match it; only a new
// pinned lock file (a new image) changes which builds are accepted. It
// runs at most once per run, and only when the failed step asked for it.
func (r *runner) reinit(ctx context.Context, err error) bool {
	spec := r.spec
	var e *Error
	if spec == nil || r.reinited || !errors.As(err, &e) || !e.Reinit {
		return false
	}
	r.reinited = true
	klog.InfoS("Installed providers or modules no longer match; running init again", "workspace", spec.Name, "err", err)
	r.e.inits.dropCachedLock(r.e.inits.initCacheKey(spec)) // it records the same builds
	if ierr := r.init(ctx, spec, false); ierr != nil {
		klog.InfoS("Init after a provider or module change failed", "workspace", spec.Name, "err", ierr)
		if ProviderMismatch(ierr) != "" {
			e.Provider, e.Summary = ierr.(*Error).Provider, ierr.(*Error).Summary // init refused the package: that is the failure
		}
		return false
	}
	return true
}

// newCommand is the command r runs next: the engine's environment, the
// credentials its template declares, the workspace's own variables.
func (r *runner) newCommand() (tofu.Command, error) {
	c := tofu.Command{Binary: r.e.opts.Binary, Dir: r.dir, Self: r.e.self, Sockets: r.e.sockets, GracePeriod: r.e.opts.GracePeriod}
	if x := r.e.opts.Exec; x != nil {
		c.Binary, c.Extra = x.Path, x.Env
	}
	creds, err := r.credentials()
	if err != nil {
		return c, err
	}
	c.Env = []map[string]string{r.e.env, creds, r.env} // creds: only the ones its template declares
	return c, nil
}

// stepResult is step for a command whose result is a value.
func stepResult[T any](ctx context.Context, r *runner, op string, fn func(context.Context, *tfexec.Terraform) (T, error)) (T, error) {
	var v T
	err := r.step(ctx, op, func(ctx context.Context, tf *tfexec.Terraform) error {
		var err error
		v, err = fn(ctx, tf)
		return err
	})
	return v, err
}

// command runs one tofu command in r's directory (tofu.Command.Run).
func (r *runner) command(ctx context.Context, fn func(context.Context, *tfexec.Terraform) error) error {
	c, err := r.newCommand()
	if err != nil {
		return fmt.Errorf("%w: %w", tofu.ErrSetup, err)
	}
	return c.Run(ctx, fn)
}

// step runs one tofu command with the operation timeout, records metrics,
// releases a stale lock of ours once and turns failures into *Error.
func (r *runner) step(ctx context.Context, op string, fn func(context.Context, *tfexec.Terraform) error) error {
	for {
		opCtx, cancel := context.WithTimeout(ctx, r.e.opts.Timeout)
		start := time.Now()
		err := r.command(opCtx, fn)
		operationDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
		ctxErr := opCtx.Err()
		cancel()
		if errors.Is(err, tofu.ErrSetup) {
			return &Error{Op: op, Summary: r.scrub.Scrub(err.Error())}
		}
		if err == nil {
			operationsTotal.WithLabelValues(op, resultSuccess).Inc()
			return nil
		}
		text := err.Error()
		if ctxErr != nil || ctx.Err() != nil {
			operationsTotal.WithLabelValues(op, resultCanceled).Inc()
			cause := ctx.Err()
			why := "canceled"
			if cause == nil {
				cause = ctxErr
			}
			if errors.Is(cause, context.DeadlineExceeded) {
				why = fmt.Sprintf("timed out after %s", r.e.opts.Timeout)
			}
			return (&Error{Op: op, Summary: why + " (" + r.e.Tool() + " was interrupted and asked to save its state)"}).WithCause(cause)
		}
		if li, ok := locks.ParseLockError(text); ok {
			operationsTotal.WithLabelValues(op, resultLocked).Inc()
			if !r.unlocked && (r.hadClaim && locks.StaleOwnLock(li, r.oldClaim, r.e.self) || r.e.self.GoneHolder(li, r.e.opts.GoneLockHolder)) {
				if uerr := r.forceUnlock(ctx, li.ID); uerr != nil {
					return uerr
				}
				r.unlocked = true
				klog.InfoS("Released a state lock its gone holder left", "workspace", filepath.Base(r.dir), "holder", r.scrub.Scrub(li.Who))
				continue
			}
			holder := r.scrub.Scrub(li.Holder())
			return tofu.Locked(op, "state is locked by "+holder+"; not taking it over (if its holder is gone: tfccm unlock --workspace "+filepath.Base(r.dir)+")", holder, li)
		}
		operationsTotal.WithLabelValues(op, resultError).Inc()
		// Inputs the template rejects, in a plan or in an apply that plans
		// itself while it planned: the plan's failure. (Anything else in
		// such an apply stays the apply's: a runner killed without a
		// result may have applied.)
		failed, invalid := op, false
		if tofu.InvalidInput(text) && (op == "plan" || op == "apply" && r.unsaved.Planning()) {
			failed, invalid = "plan", true
		}
		e := &Error{Op: failed, Summary: r.scrub.Scrub(tofu.Summarize(text)), Invalid: invalid, Reinit: tofu.NeedsReinit(text)}
		if p := tofu.MismatchedProvider(text); p != "" && (op == "init" || r.reinited) {
			// The package itself does not match (init installs from it):
			// refused, the lock file kept (integrity.go).
			klog.InfoS("Provider package does not match the dependency lock file; refusing to run it", "workspace", filepath.Base(r.dir), "op", op, "provider", p, "output", r.scrub.Scrub(tofu.LogLines(text)))
			return mismatchError(op, p, e.Summary)
		}
		if r.reinit(ctx, e) {
			if op == "init" {
				return nil // reinit has just run init
			}
			continue
		}
		// The Event carries a summary; the log, at the default verbosity,
		// tofu's own error output (scrubbed) for whoever debugs it.
		klog.InfoS("Terraform command failed", "workspace", filepath.Base(r.dir), "op", op, "output", r.scrub.Scrub(tofu.LogLines(text)))
		return e
	}
}

// forceUnlock releases a lock an earlier incarnation of this controller
// left behind.
func (r *runner) forceUnlock(ctx context.Context, id string) error {
	opCtx, cancel := context.WithTimeout(ctx, r.e.opts.Timeout)
	defer cancel()
	start := time.Now()
	err := r.command(opCtx, func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.ForceUnlock(ctx, id)
	})
	if err != nil && r.backend.Type == "kubernetes" {
		if _, held := locks.ParseLockError(err.Error()); held {
			err = unlockKubernetesLease(opCtx, r.backend, id)
		}
	}
	operationDuration.WithLabelValues("force_unlock").Observe(time.Since(start).Seconds())
	if err != nil {
		operationsTotal.WithLabelValues("force_unlock", resultError).Inc()
		return &Error{Op: "force-unlock", Summary: r.scrub.Scrub(tofu.Summarize(err.Error()))}
	}
	operationsTotal.WithLabelValues("force_unlock", resultSuccess).Inc()
	return nil
}

// pushErrored handles errored.tfstate, which tofu writes when it could
// not save state to the backend: push it (tofu refuses an older or
// foreign state), then keep it aside under .tfccm.
func (r *runner) pushErrored(ctx context.Context) error {
	p := filepath.Join(r.dir, "errored.tfstate")
	if !exists(p) {
		return nil
	}
	if err := r.step(ctx, "state_push", func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.StatePush(ctx, "errored.tfstate", tfexec.Lock(true), tfexec.LockTimeout("0s"))
	}); err != nil {
		return err
	}
	dst := erroredPath(r.dir, time.Now())
	if err := os.Rename(p, dst); err != nil {
		return &Error{Op: "state push", Summary: err.Error()}
	}
	return nil
}

// outputs reads root outputs: from the state file for the local backend
// and from the state Secret for the kubernetes backend (no process; an
// encrypted state Secret is read by tofu), else with `tofu output -json`.
func (r *runner) outputs(ctx context.Context, spec *Spec) (map[string]outputMeta, error) {
	if isLocal(spec.Backend) && !spec.namedWorkspace() && spec.BackendConfig["path"] == "" {
		p := localStatePath(r.dir, spec.Backend)
		if !exists(p) {
			return map[string]outputMeta{}, nil
		}
		o, err := localStateOutputs(p)
		if err == nil {
			return o, nil
		}
		if !errors.Is(err, errEncryptedState) {
			return nil, &Error{Op: "output", Summary: err.Error()}
		}
		// OpenTofu's encryption: tofu decrypts.
	} else if spec.Backend.Type == "kubernetes" && !spec.namedWorkspace() {
		o, err := kubernetesStateOutputs(ctx, spec.Backend)
		if err == nil {
			return o, nil
		}
		klog.V(2).InfoS("Reading outputs with tofu: the state Secret cannot be read directly", "workspace", spec.Name, "reason", r.scrub.Scrub(err.Error()))
	}
	got, err := stepResult(ctx, r, "output", func(ctx context.Context, tf *tfexec.Terraform) (map[string]tfexec.OutputMeta, error) {
		return tf.Output(ctx)
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]outputMeta, len(got))
	for k, v := range got {
		out[k] = outputMeta{Sensitive: v.Sensitive, Value: v.Value}
	}
	return out, nil
}
