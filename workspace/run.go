package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/hashicorp/terraform-exec/tfexec"
	"github.com/tfccm/tfccm/internal/secret"
	"github.com/zclconf/go-cty/cty"
	"k8s.io/klog/v2"
)

// planFile is the saved plan, inside the engine's metadata dir.
const planFile = metaDir + "/plan.tfplan"

// runOutcome is what one pass over a workspace produced.
type runOutcome struct {
	op      string // the step that decided the outcome
	changed bool
	err     error
	rec     record
	secrets []string
	pending *PendingPlan // review mode: a saved plan awaiting approval
}

// run performs init (if needed) and plan+apply, or destroy, for spec. In
// review mode a plan with changes is saved and published instead of
// applied (out.pending), and approved, when set, is the saved plan to apply.
func (e *Engine) run(ctx context.Context, spec *Spec, destroy bool, rec record, scrub *secret.Scrubber, approved *PendingPlan) (out runOutcome) {
	dir := e.Dir(spec.Name)
	out.rec = rec
	out.op = "apply"
	if destroy {
		out.op = "destroy"
	}
	fail := func(op string, err error) runOutcome {
		out.op, out.err = op, err
		return out
	}

	// The previous incarnation's claim must be read before ours replaces it.
	oldClaim, hadClaim := readClaim(dir)
	if destroy && hadClaim && oldClaim.Op == "apply" && approved == nil && !e.opts.Review {
		// The last apply was interrupted (killed, or stopped): it may have
		// created things its state does not record. Apply what it was
		// applying again, so the state holds everything, then destroy.
		if conv, ok := e.converge(ctx, spec, dir, rec, scrub); ok {
			rec, out.rec = conv.rec, conv.rec
			oldClaim, hadClaim = readClaim(dir)
		}
	}
	if destroy {
		// Destroy with the configuration the state was applied with (see
		// appliedDir), not with inputs that may have become invalid since.
		if prev, ok := lastApplied(dir, spec); ok {
			// Still the destroy that was asked for: its hash names it (a
			// published destroy plan is matched with the request by it).
			prev.Hash = spec.Hash
			spec = &prev
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, metaDir), 0o700); err != nil {
		return fail("write", &Error{Op: "write", Summary: err.Error()})
	}
	if err := spec.WriteDir(dir); err != nil {
		return fail("write", &Error{Op: "write", Summary: scrub.Scrub(err.Error())})
	}
	if err := writeRecord(dir, out.rec); err != nil {
		return fail("write", &Error{Op: "write", Summary: err.Error()})
	}
	// A plan saved by an interrupted run is stale: always plan afresh,
	// unless applying the approved saved plan.
	if approved == nil {
		removePublished(dir)
	}

	backendEnv, _ := splitBackendSecrets(spec)
	r := &runner{e: e, dir: dir, env: backendEnv, backend: spec.Backend, scrub: scrub, oldClaim: oldClaim, hadClaim: hadClaim, spec: spec}
	if err := writeClaim(dir, selfClaim(e.opts.Identity, out.op)); err != nil {
		return fail("write", &Error{Op: "write", Summary: err.Error()})
	}
	defer func() {
		// Keep the claim if tofu may have been killed holding a lock.
		if out.err == nil || ctx.Err() == nil {
			removeClaim(dir)
		}
	}()

	initHash := spec.initHash()
	if out.rec.InitHash != initHash {
		migrate := out.rec.InitHash != ""
		if err := r.init(ctx, spec, migrate); err != nil {
			return fail("init", err)
		}
		out.rec.InitHash = initHash
		if err := writeRecord(dir, out.rec); err != nil {
			return fail("init", &Error{Op: "init", Summary: err.Error()})
		}
	}

	if err := r.pushErrored(ctx); err != nil {
		return fail("state push", err)
	}

	if approved != nil {
		if err := r.applyApproved(ctx, approved); err != nil {
			return fail("apply", err)
		}
		if destroy {
			return e.finishDestroy(ctx, r, spec, dir, scrub, out)
		}
		out.changed = true
		removePublished(dir)
		return e.finishApply(ctx, r, spec, dir, out)
	}

	if destroy {
		// A workspace whose state holds nothing (its first apply failed
		// before creating anything) is not run through `tofu destroy`,
		// which would re-validate the inputs that failed and so keep a
		// Service's finalizer forever.
		empty, err := r.stateEmpty(ctx, spec)
		if err != nil {
			return fail("destroy", err)
		}
		if !empty && e.opts.Review {
			var changes bool
			if err := r.step(ctx, "plan", func(ctx context.Context, tf *tfexec.Terraform) error {
				var err error
				changes, err = tf.Plan(ctx, tfexec.Out(planFile), tfexec.Destroy(true), tfexec.LockTimeout("0s"))
				return err
			}); err != nil {
				return fail("plan", err)
			}
			if changes {
				p, err := r.publishPlan(ctx, spec, true)
				if err != nil {
					return fail("plan", err)
				}
				out.op, out.pending = "plan", p
				return out
			}
			removePublished(dir)
		} else if !empty {
			if err := r.step(ctx, "destroy", func(ctx context.Context, tf *tfexec.Terraform) error {
				return tf.Destroy(ctx, tfexec.LockTimeout("0s"))
			}); err != nil {
				return fail("destroy", err)
			}
		}
		return e.finishDestroy(ctx, r, spec, dir, scrub, out)
	}

	var changes bool
	if err := r.step(ctx, "plan", func(ctx context.Context, tf *tfexec.Terraform) error {
		var err error
		changes, err = tf.Plan(ctx, tfexec.Out(planFile), tfexec.LockTimeout("0s"))
		return err
	}); err != nil {
		return fail("plan", err)
	}
	if changes && e.opts.Review {
		p, err := r.publishPlan(ctx, spec, false)
		if err != nil {
			return fail("plan", err)
		}
		out.op, out.pending = "plan", p
		return out
	}
	if changes {
		if err := r.step(ctx, "apply", func(ctx context.Context, tf *tfexec.Terraform) error {
			return tf.Apply(ctx, tfexec.DirOrPlan(planFile), tfexec.LockTimeout("0s"))
		}); err != nil {
			return fail("apply", err)
		}
		out.changed = true
	} else {
		operationsTotal.WithLabelValues("apply", resultNoop).Inc()
	}
	_ = os.Remove(filepath.Join(dir, planFile))
	return e.finishApply(ctx, r, spec, dir, out)
}

// converge re-applies the files last written into dir (the interrupted
// apply's workspace) with spec's backend. It reports whether it ran; a
// failure is logged and the destroy goes on with what the state holds.
func (e *Engine) converge(ctx context.Context, spec *Spec, dir string, rec record, scrub *secret.Scrubber) (runOutcome, bool) {
	prev, ok := readAs(dir, spec)
	if !ok {
		return runOutcome{}, false
	}
	klog.InfoS("Destroying a workspace whose last apply was interrupted: applying it again first so that the state records what that apply created", "workspace", spec.Name)
	conv := e.run(ctx, &prev, false, rec, scrub, nil)
	if conv.err != nil {
		klog.InfoS("Re-apply before destroy failed; destroying what the state records", "workspace", spec.Name, "err", conv.err)
	}
	return conv, true
}

// finishDestroy deletes the Terraform workspace (if named), the state and
// the directory after the resources are destroyed.
func (e *Engine) finishDestroy(ctx context.Context, r *runner, spec *Spec, dir string, scrub *secret.Scrubber, out runOutcome) runOutcome {
	fail := func(op string, err error) runOutcome {
		out.op, out.err = op, err
		return out
	}
	out.changed = true
	if spec.namedWorkspace() {
		if err := r.step(ctx, "workspace", func(ctx context.Context, tf *tfexec.Terraform) error {
			if err := tf.WorkspaceSelect(ctx, "default"); err != nil {
				return err
			}
			return tf.WorkspaceDelete(ctx, spec.StateWorkspace)
		}); err != nil {
			return fail("destroy", err)
		}
	}
	if err := e.removeState(ctx, spec, dir); err != nil {
		return fail("destroy", &Error{Op: "destroy", Summary: scrub.Scrub(err.Error())})
	}
	out.rec = record{}
	return out
}

// finishApply records outputs and the applied hash after a successful
// plan (and apply, if it had changes).
func (e *Engine) finishApply(ctx context.Context, r *runner, spec *Spec, dir string, out runOutcome) runOutcome {
	fail := func(op string, err error) runOutcome {
		out.op, out.err = op, err
		return out
	}
	outputs, err := r.outputs(ctx, spec)
	if err != nil {
		return fail("output", err)
	}
	public, secrets := splitOutputs(outputs)
	out.secrets = secrets
	if err := saveApplied(dir, spec, out.rec.AppliedHash); err != nil {
		return fail("apply", &Error{Op: "apply", Summary: r.scrub.Scrub(err.Error())})
	}
	out.rec.AppliedHash = spec.Hash
	out.rec.AppliedAt = time.Now().UTC()
	out.rec.Outputs = public
	if err := writeRecord(dir, out.rec); err != nil {
		return fail("apply", &Error{Op: "apply", Summary: err.Error()})
	}
	return out
}

// init runs tofu init, with the spec's secret backend settings in a
// -backend-config file outside the workspace that is removed right after,
// then selects (creating if needed) the spec's Terraform workspace.
func (r *runner) init(ctx context.Context, spec *Spec, migrate bool) error {
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
// modules no longer match (see Error.Reinit), with the dependency lock
// file removed first: in a generated workspace it is only tofu's record of
// what it installed (templates cannot ship one), and the mirror now holds
// another build, which may even carry the same version (a new image). It
// runs at most once per run, and only when the failed step asked for it.
func (r *runner) reinit(ctx context.Context, err error) bool {
	spec := r.spec
	var e *Error
	if spec == nil || r.reinited || !errors.As(err, &e) || !e.Reinit {
		return false
	}
	r.reinited = true
	klog.InfoS("Installed providers or modules no longer match; running init again", "workspace", spec.Name, "err", err)
	if rerr := os.Remove(filepath.Join(r.dir, ".terraform.lock.hcl")); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		klog.InfoS("Remove the dependency lock file before init", "workspace", spec.Name, "err", rerr)
		return false
	}
	if ierr := r.init(ctx, spec, false); ierr != nil {
		klog.InfoS("Init after a provider or module change failed", "workspace", spec.Name, "err", ierr)
		return false
	}
	return true
}

// stateEmpty reports whether the workspace's state holds no resources:
// read from the file for the local backend, else with `tofu state pull`.
func (r *runner) stateEmpty(ctx context.Context, spec *Spec) (bool, error) {
	var doc []byte
	if isLocal(spec.Backend) && !spec.namedWorkspace() && spec.BackendConfig["path"] == "" {
		b, err := os.ReadFile(localStatePath(r.dir, spec.Backend))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, &Error{Op: "destroy", Summary: r.scrub.Scrub(err.Error())}
		}
		doc = b
	} else {
		var pulled string
		if err := r.step(ctx, "state pull", func(ctx context.Context, tf *tfexec.Terraform) error {
			var err error
			pulled, err = tf.StatePull(ctx)
			return err
		}); err != nil {
			return false, err
		}
		doc = []byte(pulled)
	}
	n, err := stateResources(doc)
	if err != nil {
		return false, &Error{Op: "destroy", Summary: err.Error()}
	}
	return n == 0, nil
}

// writeBackendConfig writes settings as an HCL -backend-config file (mode
// 0600) under workDir/.secrets, outside every workspace. Only settings the
// backend cannot read from its environment come here (splitBackendSecrets):
// tofu records them in the workspace's .terraform/terraform.tfstate.
func writeBackendConfig(workDir, name string, settings map[string]string) (string, func(), error) {
	dir := filepath.Join(workDir, ".secrets")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, fmt.Errorf("backend config: %w", err)
	}
	f := hclwrite.NewEmptyFile()
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !hclsyntax.ValidIdentifier(k) {
			return "", nil, fmt.Errorf("backend config: %q is not a valid setting name", k)
		}
		f.Body().SetAttributeValue(k, cty.StringVal(settings[k]))
	}
	path := filepath.Join(dir, name+".tfbackend")
	if err := os.WriteFile(path, f.Bytes(), 0o600); err != nil {
		return "", nil, fmt.Errorf("backend config: %w", err)
	}
	return path, func() { _ = os.Remove(path) }, nil
}

// runner runs tofu commands in one workspace directory.
type runner struct {
	e        *Engine
	dir      string
	env      map[string]string // the workspace's own variables (secret backend settings)
	backend  BackendInfo
	scrub    *secret.Scrubber
	oldClaim claim
	hadClaim bool
	unlocked bool
	spec     *Spec // for init again (reinit)
	reinited bool
}

// newTF is one tfexec.Terraform for one command (run id, see procs.go),
// with the engine's explicit environment and graceful (SIGINT)
// cancellation.
func (r *runner) newTF(id string) (*tfexec.Terraform, error) {
	tf, err := tfexec.NewTerraform(r.dir, r.e.opts.Binary)
	if err != nil {
		return nil, err
	}
	env := make(map[string]string, len(r.e.env)+len(r.env)+2)
	maps.Copy(env, r.e.env)
	maps.Copy(env, r.env)
	maps.Copy(env, runEnv(id, r.dir))
	if err := tf.SetEnv(env); err != nil {
		return nil, err
	}
	if err := tf.SetWaitDelay(r.e.opts.GracePeriod); err != nil {
		return nil, err
	}
	return tf, nil
}

// errNewTF marks a failure to set up a command (no process started).
var errNewTF = errors.New("set up tofu command")

// command runs one tofu command as run of its own (procs.go): its OS
// thread is locked while tofu runs, so that tofu's parent-death signal
// fires when this process dies and not when the thread is retired, and
// whatever a command that failed or was interrupted left running (its
// providers) is killed with its process group.
func (r *runner) command(ctx context.Context, fn func(context.Context, *tfexec.Terraform) error) error {
	id := r.e.runID()
	tf, err := r.newTF(id)
	if err != nil {
		return fmt.Errorf("%w: %w", errNewTF, err)
	}
	runtime.LockOSThread()
	err = fn(ctx, tf)
	runtime.UnlockOSThread()
	if err != nil {
		endRun(id, filepath.Base(r.dir))
	}
	return err
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
		if errors.Is(err, errNewTF) {
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
			return &Error{Op: op, Summary: why + " (" + r.e.Tool() + " was interrupted and asked to save its state)", cause: cause}
		}
		if li, ok := parseLockError(text); ok {
			operationsTotal.WithLabelValues(op, resultLocked).Inc()
			if !r.unlocked && (r.hadClaim && staleOwnLock(li, r.oldClaim, r.e.self) || r.e.goneHolder(li)) {
				if uerr := r.forceUnlock(ctx, li.ID); uerr != nil {
					return uerr
				}
				r.unlocked = true
				continue
			}
			holder := r.scrub.Scrub(li.holder())
			return &Error{Op: op, Summary: "state is locked by " + holder + "; not taking it over (if its holder is gone: tfccm unlock --workspace " + filepath.Base(r.dir) + ")", LockHolder: holder, lock: li}
		}
		operationsTotal.WithLabelValues(op, resultError).Inc()
		e := &Error{Op: op, Summary: r.scrub.Scrub(summarize(text)), Invalid: op == "plan" && invalidInput(text), Reinit: needsReinit(text)}
		if r.reinit(ctx, e) {
			if op == "init" {
				return nil // reinit has just run init
			}
			continue
		}
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
		if _, held := parseLockError(err.Error()); held {
			err = unlockKubernetesLease(opCtx, r.backend, id)
		}
	}
	operationDuration.WithLabelValues("force_unlock").Observe(time.Since(start).Seconds())
	if err != nil {
		operationsTotal.WithLabelValues("force_unlock", resultError).Inc()
		return &Error{Op: "force-unlock", Summary: r.scrub.Scrub(summarize(err.Error()))}
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
	dst := filepath.Join(r.dir, metaDir, "errored.tfstate."+time.Now().UTC().Format("20060102T150405Z"))
	if err := os.Rename(p, dst); err != nil {
		return &Error{Op: "state push", Summary: err.Error()}
	}
	return nil
}

// outputs reads root outputs: from the state file for the local backend
// (no process), else with `tofu output -json`.
func (r *runner) outputs(ctx context.Context, spec *Spec) (map[string]outputMeta, error) {
	if isLocal(spec.Backend) && !spec.namedWorkspace() && spec.BackendConfig["path"] == "" {
		p := localStatePath(r.dir, spec.Backend)
		if !exists(p) {
			return map[string]outputMeta{}, nil
		}
		o, err := localStateOutputs(p)
		if err != nil {
			return nil, &Error{Op: "output", Summary: err.Error()}
		}
		return o, nil
	}
	var got map[string]tfexec.OutputMeta
	if err := r.step(ctx, "output", func(ctx context.Context, tf *tfexec.Terraform) error {
		var err error
		got, err = tf.Output(ctx)
		return err
	}); err != nil {
		return nil, err
	}
	out := make(map[string]outputMeta, len(got))
	for k, v := range got {
		out[k] = outputMeta{Sensitive: v.Sensitive, Value: v.Value}
	}
	return out, nil
}

func isLocal(b BackendInfo) bool { return b.Type == "" || b.Type == "local" }

// localStatePath is where the local backend keeps state for dir.
func localStatePath(dir string, b BackendInfo) string {
	if v, ok := b.Attributes["path"]; ok && v.IsKnown() && !v.IsNull() && v.Type().FriendlyName() == "string" {
		p := v.AsString()
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return p
	}
	return filepath.Join(dir, "terraform.tfstate")
}

// removeState deletes what is left of a destroyed workspace: its directory
// (which holds local state) and, for the kubernetes backend, the state
// Secret and lock Lease.
func (e *Engine) removeState(ctx context.Context, spec *Spec, dir string) error {
	if spec.Backend.Type == "kubernetes" {
		if err := removeKubernetesState(ctx, spec.Backend); err != nil {
			return fmt.Errorf("remove kubernetes state: %w", err)
		}
	}
	if isLocal(spec.Backend) {
		p := localStatePath(dir, spec.Backend)
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			for _, f := range []string{p, p + ".backup"} {
				if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("remove state: %w", err)
				}
			}
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove workspace dir: %w", err)
	}
	return nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
