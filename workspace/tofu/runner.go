package tofu

// The runner: tofu commands run one at a time in one workspace directory,
// with the environment, timeout, metrics, stale-lock release and errors
// around each, and the commands every directory needs (init and init
// again, force-unlock).

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/internal/secret"
	"github.com/tfccm/tfccm/workspace/backends"
	"github.com/tfccm/tfccm/workspace/locks"
)

// Setup is what every runner of one engine shares: how to run tofu, its
// environment and the configured credentials, what inits share, this
// process's claim, the providers' socket directory and the metrics.
type Setup struct {
	// Binary is tofu (or terraform); Exec, when set, is started instead.
	Binary string
	Exec   *Exec
	// WorkDir is the engine's work dir (secret files go under it).
	WorkDir string
	// Timeout bounds each command; GracePeriod is how long an interrupted
	// tofu has to save its state.
	Timeout, GracePeriod time.Duration
	// GoneLockHolder tells whether a lock's holder is a gone incarnation
	// of this controller (nil: none is known gone).
	GoneLockHolder func(who string) bool
	// Env is every tofu's environment but the credentials; Credentials
	// are the configured ones, each given only to the workspaces whose
	// template declares it (credentials.go).
	Env, Credentials map[string]string
	Inits            *InitCache // initcache.go
	Scrub            *secret.Scrubber
	Self             locks.Claim // this process, for claim files
	Sockets          SocketDir   // "" with mTLS (sockets.go)
	// Metrics receives what the runners measure (nil: nothing).
	Metrics Metrics
}

// Exec is what terraform-exec starts instead of Binary (the job runner's
// stand-in), with Env added to every command's environment.
type Exec struct {
	Path string
	Env  map[string]string
}

// Tool is the name of the binary run ("tofu", "terraform"), for messages.
func (t *Setup) Tool() string { return filepath.Base(t.Binary) }

// DirSpec is what a runner needs of a workspace: its name, files, the
// Terraform workspace to select and its backend (settings and secret
// settings).
type DirSpec struct {
	Name           string
	Files          map[string][]byte
	Modes          map[string]fs.FileMode
	StateWorkspace string
	Backend        backends.Info
	BackendConfig  map[string]string
}

// NamedWorkspace reports whether s selects a non-default Terraform
// workspace.
func (s *DirSpec) NamedWorkspace() bool { return NamedWorkspace(s.StateWorkspace) }

// NamedWorkspace reports whether name is a non-default Terraform
// workspace ("" and "default" are the default one).
func NamedWorkspace(name string) bool { return name != "" && name != "default" }

// Runner runs tofu commands in one workspace directory, one at a time.
type Runner struct {
	Setup *Setup
	Dir   string
	// Env is the workspace's own variables (secret backend settings,
	// NewRunner).
	Env   map[string]string
	Scrub *secret.Scrubber
	// OldClaim is the claim an earlier run left in Dir (HadClaim: there
	// was one): a lock it names and that is stale is released once.
	OldClaim locks.Claim
	HadClaim bool
	// Unlocked is set once a stale lock was released (or must not be).
	Unlocked bool
	// Spec is the workspace, for init again (reinit) and its credentials
	// variable; nil for a directory that is no workspace (a probe's copy).
	Spec *DirSpec
	// DeclDir holds the workspace's CredentialsFile ("" = Dir): a probe's
	// copy reads its workspace's declaration.
	DeclDir string
	// Unsaved is the stdout of an apply that plans itself: it is
	// planning until its plan's summary line is seen.
	Unsaved  *PlanLineWriter
	reinited bool
}

// NewRunner is a runner in dir for spec (nil: a directory that is no
// workspace), its secret backend settings in its environment.
func NewRunner(t *Setup, dir string, spec *DirSpec, scrub *secret.Scrubber) *Runner {
	r := &Runner{Setup: t, Dir: dir, Scrub: scrub, Spec: spec}
	if spec != nil {
		r.Env, _ = backends.SplitSecrets(spec.Backend.Type, spec.BackendConfig)
	}
	return r
}

// Init runs tofu init, with the spec's secret backend settings in a
// -backend-config file outside the workspace that is removed right after,
// then selects (creating if needed) the spec's Terraform workspace. A
// workspace without a lock file starts from the one its template's
// earlier inits share (initcache.go); one that does not fit is dropped
// and init runs again without it. A fresh workspace whose template has a
// prepared .terraform (prepared.go) starts from that instead, and init
// does not run at all.
func (r *Runner) Init(ctx context.Context, spec *DirSpec, migrate bool) error {
	key := r.Setup.Inits.Key(spec)
	fresh := !migrate && !r.reinited && !exists(filepath.Join(r.Dir, ".terraform"))
	pinned, perr := r.Setup.Inits.PinLockFile(r.Dir)
	if perr != nil {
		return &Error{Op: "init", Summary: perr.Error()}
	}
	seeded := !pinned && !r.reinited && r.Setup.Inits.SeedLockFile(r.Dir, key)
	if fresh && (seeded || pinned) && r.Setup.Inits.SeedPrepared(r.Dir, key, spec) {
		r.Setup.count("init", ResultPrepared)
		return nil
	}
	UnlinkPrepared(r.Dir)
	err := r.initDir(ctx, spec, migrate)
	// A shared lock file that does not fit is dropped; one a provider's
	// package does not match is kept, and so is the refusal.
	if err != nil && seeded && !r.reinited && ctx.Err() == nil && ProviderMismatch(err) == "" {
		klog.InfoS("Init with the shared dependency lock file failed; dropping it and running init without it", "workspace", spec.Name, "err", err)
		r.Setup.Inits.dropCachedLock(key)
		if rerr := os.Remove(filepath.Join(r.Dir, LockFile)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return err
		}
		err = r.initDir(ctx, spec, migrate)
	}
	if err == nil {
		r.Setup.Inits.KeepLockFile(r.Dir, key)
		r.Setup.Inits.KeepPrepared(r.Dir, key, spec)
	}
	return err
}

// initDir is init proper: tofu init and the workspace selection.
func (r *Runner) initDir(ctx context.Context, spec *DirSpec, migrate bool) error {
	opts := []tfexec.InitOption{tfexec.Upgrade(false), tfexec.ForceCopy(migrate)}
	if _, file := backends.SplitSecrets(spec.Backend.Type, spec.BackendConfig); len(file) > 0 {
		path, cleanup, err := backends.WriteConfigFile(r.Setup.WorkDir, spec.Name, file)
		if err != nil {
			return &Error{Op: "init", Summary: r.Scrub.Scrub(err.Error())}
		}
		defer cleanup()
		opts = append(opts, tfexec.BackendConfig(path))
	}
	if err := r.Step(ctx, "init", func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.Init(ctx, opts...)
	}); err != nil {
		return err
	}
	if !spec.NamedWorkspace() {
		return nil
	}
	var current string
	if err := r.Step(ctx, "workspace", func(ctx context.Context, tf *tfexec.Terraform) error {
		var err error
		_, current, err = tf.WorkspaceList(ctx)
		return err
	}); err != nil {
		return err
	}
	if current == spec.StateWorkspace {
		return nil
	}
	if err := r.Step(ctx, "workspace", func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.WorkspaceSelect(ctx, spec.StateWorkspace)
	}); err == nil {
		return nil
	}
	return r.Step(ctx, "workspace", func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.WorkspaceNew(ctx, spec.StateWorkspace)
	})
}

// reinit is init again after a step said the installed providers or
// modules no longer match (see Error.Reinit). The dependency lock file is
// kept (integrity.go): init reinstalls what it locks (a stale copy in
// .terraform), and refuses a package that does not match it; only a new
// pinned lock file (a new image) changes which builds are accepted. It
// runs at most once per run, and only when the failed step asked for it.
func (r *Runner) reinit(ctx context.Context, err error) bool {
	spec := r.Spec
	var e *Error
	if spec == nil || r.reinited || !errors.As(err, &e) || !e.Reinit {
		return false
	}
	r.reinited = true
	klog.InfoS("Installed providers or modules no longer match; running init again", "workspace", spec.Name, "err", err)
	r.Setup.Inits.dropCachedLock(r.Setup.Inits.Key(spec)) // it records the same builds
	if ierr := r.Init(ctx, spec, false); ierr != nil {
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
func (r *Runner) newCommand() (Command, error) {
	c := Command{Binary: r.Setup.Binary, Dir: r.Dir, Self: r.Setup.Self, Sockets: r.Setup.Sockets, GracePeriod: r.Setup.GracePeriod}
	if x := r.Setup.Exec; x != nil {
		c.Binary, c.Extra = x.Path, x.Env
	}
	creds, err := r.credentials()
	if err != nil {
		return c, err
	}
	c.Env = []map[string]string{r.Setup.Env, creds, r.Env} // creds: only the ones its template declares
	return c, nil
}

// StepResult is Step for a command whose result is a value.
func StepResult[T any](ctx context.Context, r *Runner, op string, fn func(context.Context, *tfexec.Terraform) (T, error)) (T, error) {
	var v T
	err := r.Step(ctx, op, func(ctx context.Context, tf *tfexec.Terraform) error {
		var err error
		v, err = fn(ctx, tf)
		return err
	})
	return v, err
}

// Command runs one tofu command in r's directory (Command.Run), without
// Step's timeout, metrics and error handling.
func (r *Runner) Command(ctx context.Context, fn func(context.Context, *tfexec.Terraform) error) error {
	c, err := r.newCommand()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSetup, err)
	}
	return c.Run(ctx, fn)
}

// Step runs one tofu command with the operation timeout, records metrics,
// releases a stale lock of ours once and turns failures into *Error.
func (r *Runner) Step(ctx context.Context, op string, fn func(context.Context, *tfexec.Terraform) error) error {
	for {
		opCtx, cancel := context.WithTimeout(ctx, r.Setup.Timeout)
		start := time.Now()
		err := r.Command(opCtx, fn)
		r.Setup.observe(op, time.Since(start))
		ctxErr := opCtx.Err()
		cancel()
		if errors.Is(err, ErrSetup) {
			return &Error{Op: op, Summary: r.Scrub.Scrub(err.Error())}
		}
		if err == nil {
			r.Setup.count(op, ResultSuccess)
			return nil
		}
		text := err.Error()
		if ctxErr != nil || ctx.Err() != nil {
			r.Setup.count(op, ResultCanceled)
			cause := ctx.Err()
			why := "canceled"
			if cause == nil {
				cause = ctxErr
			}
			if errors.Is(cause, context.DeadlineExceeded) {
				why = fmt.Sprintf("timed out after %s", r.Setup.Timeout)
			}
			return (&Error{Op: op, Summary: why + " (" + r.Setup.Tool() + " was interrupted and asked to save its state)"}).WithCause(cause)
		}
		if li, ok := locks.ParseLockError(text); ok {
			r.Setup.count(op, ResultLocked)
			if !r.Unlocked && (r.HadClaim && locks.StaleOwnLock(li, r.OldClaim, r.Setup.Self) || r.Setup.Self.GoneHolder(li, r.Setup.GoneLockHolder)) {
				if uerr := r.ForceUnlock(ctx, li.ID); uerr != nil {
					return uerr
				}
				r.Unlocked = true
				klog.InfoS("Released a state lock its gone holder left", "workspace", filepath.Base(r.Dir), "holder", r.Scrub.Scrub(li.Who))
				continue
			}
			holder := r.Scrub.Scrub(li.Holder())
			return Locked(op, "state is locked by "+holder+"; not taking it over (if its holder is gone: tfccm unlock --workspace "+filepath.Base(r.Dir)+")", holder, li)
		}
		r.Setup.count(op, ResultError)
		// Inputs the template rejects, in a plan or in an apply that plans
		// itself while it planned: the plan's failure. (Anything else in
		// such an apply stays the apply's: a runner killed without a
		// result may have applied.)
		failed, invalid := op, false
		if InvalidInput(text) && (op == "plan" || op == "apply" && r.Unsaved.Planning()) {
			failed, invalid = "plan", true
		}
		e := &Error{Op: failed, Summary: r.Scrub.Scrub(Summarize(text)), Invalid: invalid, Reinit: NeedsReinit(text)}
		if p := MismatchedProvider(text); p != "" && (op == "init" || r.reinited) {
			// The package itself does not match (init installs from it):
			// refused, the lock file kept (integrity.go).
			klog.InfoS("Provider package does not match the dependency lock file; refusing to run it", "workspace", filepath.Base(r.Dir), "op", op, "provider", p, "output", r.Scrub.Scrub(LogLines(text)))
			return r.Setup.MismatchError(op, p, e.Summary)
		}
		if r.reinit(ctx, e) {
			if op == "init" {
				return nil // reinit has just run init
			}
			continue
		}
		// The Event carries a summary; the log, at the default verbosity,
		// tofu's own error output (scrubbed) for whoever debugs it.
		klog.InfoS("Terraform command failed", "workspace", filepath.Base(r.Dir), "op", op, "output", r.Scrub.Scrub(LogLines(text)))
		return e
	}
}

// ForceUnlock releases lock id, which an earlier incarnation of this
// controller left behind (or an operator releases: tfccm unlock).
func (r *Runner) ForceUnlock(ctx context.Context, id string) error {
	opCtx, cancel := context.WithTimeout(ctx, r.Setup.Timeout)
	defer cancel()
	start := time.Now()
	err := r.Command(opCtx, func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.ForceUnlock(ctx, id)
	})
	if err != nil && r.Spec != nil && r.Spec.Backend.Type == "kubernetes" {
		if _, held := locks.ParseLockError(err.Error()); held {
			err = backends.UnlockKubernetesLease(opCtx, r.Spec.Backend, id)
		}
	}
	r.Setup.observe("force_unlock", time.Since(start))
	if err != nil {
		r.Setup.count("force_unlock", ResultError)
		return &Error{Op: "force-unlock", Summary: r.Scrub.Scrub(Summarize(err.Error()))}
	}
	r.Setup.count("force_unlock", ResultSuccess)
	return nil
}

// TryLock asks tofu whether the workspace's state is locked (a plan
// without refresh that only tries to take the lock): the lock someone
// else holds, nil when there is none.
func (r *Runner) TryLock(ctx context.Context) (*locks.LockInfo, error) {
	err := r.WithCredentials("plan", func(vf *tfexec.VarFileOption) error {
		opts := []tfexec.PlanOption{tfexec.Refresh(false), tfexec.LockTimeout("0s")}
		if vf != nil {
			opts = append(opts, vf)
		}
		return r.Step(ctx, "plan", func(ctx context.Context, tf *tfexec.Terraform) error {
			_, err := tf.Plan(ctx, opts...)
			return err
		})
	})
	var e *Error
	if err == nil || !errors.As(err, &e) || e.LockHolder == "" {
		if err != nil && !errors.Is(err, ErrLocked) {
			return nil, err
		}
		return nil, nil
	}
	li := e.HeldLock()
	return &li, nil
}
