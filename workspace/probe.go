package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/tfccm/tfccm/internal/fsutil"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// Probes: a workspace may carry a read-only root module of its own in a
// subdirectory (a load balancer's health/ module). Probe reads it with one
// refresh-only apply (the data sources read, the outputs evaluated, no
// configuration applied: nothing is ever created, changed or destroyed)
// and returns its outputs. A probe never takes or waits for a state lock
// and never touches the workspace's state: the module has no backend and
// only data sources; its own local state lives for one probe. It runs
// beside the engine's passes, not in its queue but within its budget of
// tofu processes (budget.go), in a copy of the module of its own
// (<work dir>/.probes/<workspace>/<module>: its .terraform and state), so
// the workspace directory never changes.

// probesDir holds the probes' copies of their modules, in the work dir.
const probesDir = ".probes"

// probeStateFile is the local state a probe's refresh writes in its copy
// (the module has no backend), removed after each probe.
const probeStateFile = "terraform.tfstate"

// maxProbeTime bounds each of a probe's commands.
const maxProbeTime = time.Minute

// ErrNoProbe is returned by Probe when the workspace has no such module.
var ErrNoProbe = errors.New("workspace has no such module")

// probes serializes the probes of one module.
var probes sync.Map // copy dir -> *sync.Mutex

// Probe reads the root module in subdirectory module of workspace name
// and returns its outputs' values. inputs names a file of the workspace's
// own (its generated *.auto.tfvars, "" for none) that the module reads too:
// it is copied into the copy under the same name, so init (which may need
// the values: a provider for_each) and plan load it. The copy is
// initialized on its first probe (and again when its providers changed).
func (e *Engine) Probe(ctx context.Context, name, module, inputs string) (map[string]json.RawMessage, error) {
	src := filepath.Join(e.Dir(name), module)
	dir := filepath.Join(e.opts.WorkDir, probesDir, name, module)
	mu, _ := probes.LoadOrStore(dir, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	// A probe runs in the engine's budget, after the passes (budget.go).
	if err := e.budget.acquireProbe(ctx, e.queue.Len, probeMaxWait); err != nil {
		return nil, fmt.Errorf("probe %s/%s: %w", name, module, err)
	}
	defer e.budget.release()
	if !hasConfig(src) {
		_ = os.RemoveAll(filepath.Join(e.opts.WorkDir, probesDir, name))
		return nil, ErrNoProbe // none, or removed by a newer spec
	}
	if err := syncProbe(src, dir, inputs); err != nil {
		return nil, fmt.Errorf("probe %s/%s: %w", name, module, err)
	}
	if inputs != "" {
		if err := copyInputs(filepath.Join(e.Dir(name), inputs), filepath.Join(dir, filepath.Base(inputs))); err != nil {
			return nil, fmt.Errorf("probe %s/%s: copy its inputs: %w", name, module, err)
		}
	}
	return e.probeRun(ctx, dir, e.Dir(name))
}

// probeRun refreshes the probe copy dir (ready: its module and inputs
// written) and returns its outputs; declDir is where its declarations
// come from (credentials).
func (e *Engine) probeRun(ctx context.Context, dir, declDir string) (map[string]json.RawMessage, error) {
	r := newRunner(e.tofu, dir, nil, e.tofu.Scrub)
	r.DeclDir = declDir
	// Initialized: its .terraform, or with runner Jobs its lock file alone
	// (the providers, all a probe's .terraform holds, stay in the pod; the
	// next pod links them again). A refresh that finds them missing
	// re-initializes below.
	if !exists(filepath.Join(dir, ".terraform")) && !exists(filepath.Join(dir, ".terraform.lock.hcl")) {
		if err := r.probeInit(ctx, true); err != nil {
			return nil, err
		}
	}
	// One refresh-only apply: it reads the data sources and writes the
	// outputs into the copy's own local state, and never creates, changes
	// or destroys anything (refresh-only applies no configuration change).
	// The state is removed again below, as the plan file was before: it
	// holds what the data sources read.
	defer removeProbeState(dir)
	refresh := func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.Apply(ctx, tfexec.RefreshOnly(true), tfexec.Lock(false))
	}
	err := r.probeCommand(ctx, "refresh", refresh)
	var perr *tofu.Error
	if errors.As(err, &perr) && perr.Reinit {
		// The lock file is kept (workspace/tofu/integrity.go): init reinstalls what it
		// locks or refuses the package.
		if err := r.probeInit(ctx, false); err != nil {
			return nil, err
		}
		err = r.probeCommand(ctx, "refresh", refresh)
	}
	if err != nil {
		return nil, err
	}
	outputs, err := r.probeOutputs(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	for k, o := range outputs {
		if o.Sensitive {
			continue
		}
		out[k] = o.Value
	}
	return out, nil
}

// probeOutputs reads the outputs a probe's refresh wrote: from its local
// state file, or, when that is encrypted (terraform.encryption), with
// `tofu output -json`.
func (r *runner) probeOutputs(ctx context.Context, dir string) (map[string]outputMeta, error) {
	if o, err := localStateOutputs(filepath.Join(dir, probeStateFile)); err == nil {
		return o, nil
	}
	var got map[string]tfexec.OutputMeta
	if err := r.probeCommand(ctx, "output", func(ctx context.Context, tf *tfexec.Terraform) error {
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

// removeProbeState deletes what a probe's refresh left in its copy.
func removeProbeState(dir string) {
	for _, f := range []string{probeStateFile, probeStateFile + ".backup"} {
		_ = os.Remove(filepath.Join(dir, f))
	}
}

// syncProbe makes dir a copy of the module files in src (regular files;
// dot files, tofu's own, are neither copied nor removed; inputs is the
// link Probe keeps).
func syncProbe(src, dir, inputs string) error {
	want := map[string]bool{}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != src && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(src, p)
		want[rel] = true
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, rel)
		if cur, err := os.ReadFile(dst); err == nil && bytes.Equal(cur, data) {
			return nil
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return err
		}
		return fsutil.WriteFileAtomic(dst, data, 0o644)
	})
	if err != nil {
		return fmt.Errorf("copy the module: %w", err)
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if !d.IsDir() && !want[rel] && rel != filepath.Base(inputs) {
			return os.Remove(p)
		}
		return nil
	})
}

// copyInputs copies the workspace's inputs file src into the probe's copy
// as dst, when it changed. A copy, not a link: with runner Jobs the copy
// travels to a runner pod, and a link out of it would not (a runner's
// archives carry no link out of their workspace, jobrunner/links.go).
func copyInputs(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if st, err := os.Lstat(dst); err == nil && !st.Mode().IsRegular() {
		// An earlier version's link.
		if err := os.Remove(dst); err != nil {
			return err
		}
	}
	return fsutil.WriteFileAtomic(dst, data, 0o600)
}

// removeProbes deletes the probes' copies of workspace name's modules.
func removeProbes(workDir, name string) error {
	return os.RemoveAll(filepath.Join(workDir, probesDir, name))
}

// hasConfig reports whether dir holds a root module's .tf files.
func hasConfig(dir string) bool {
	for _, pattern := range []string{"*.tf", "*.tf.json"} {
		if m, _ := filepath.Glob(filepath.Join(dir, pattern)); len(m) > 0 {
			return true
		}
	}
	return false
}

// probeInit initializes a probe's copy: a fresh one from the prepared
// .terraform of copies of the same module (workspace/tofu/prepared.go) when there is
// one, else with tofu init, whose result is then shared.
func (r *runner) probeInit(ctx context.Context, fresh bool) error {
	key, err := r.Setup.Inits.ProbeKey(r.Dir, probeStateFile)
	if err != nil {
		return &tofu.Error{Op: "probe init", Summary: err.Error()}
	}
	pinned, err := r.Setup.Inits.PinLockFile(r.Dir)
	if err != nil {
		return &tofu.Error{Op: "probe init", Summary: err.Error()}
	}
	if fresh && (pinned || r.Setup.Inits.SeedLockFile(r.Dir, key)) && r.Setup.Inits.SeedPrepared(r.Dir, key, nil) {
		operationsTotal.WithLabelValues("probe_init", tofu.ResultPrepared).Inc()
		return nil
	}
	tofu.UnlinkPrepared(r.Dir)
	if err := r.probeCommand(ctx, "init", func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.Init(ctx, tfexec.Upgrade(false))
	}); err != nil {
		return err
	}
	r.Setup.Inits.KeepLockFile(r.Dir, key)
	r.Setup.Inits.KeepPrepared(r.Dir, key, nil)
	return nil
}

func (r *runner) probeCommand(ctx context.Context, op string, fn func(context.Context, *tfexec.Terraform) error) error {
	limit := maxProbeTime
	if t := r.Setup.Timeout; t > 0 && t < limit {
		limit = t
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	start := time.Now()
	err := r.Command(ctx, fn)
	operationDuration.WithLabelValues("probe_" + op).Observe(time.Since(start).Seconds())
	if err != nil {
		operationsTotal.WithLabelValues("probe_"+op, tofu.ResultError).Inc()
		text := err.Error()
		summary := r.Scrub.Scrub(tofu.Summarize(text))
		if p := tofu.MismatchedProvider(text); p != "" && op == "init" {
			return r.Setup.MismatchError("probe "+op, p, summary)
		}
		return &tofu.Error{Op: "probe " + op, Summary: summary, Reinit: tofu.NeedsReinit(text)}
	}
	operationsTotal.WithLabelValues("probe_"+op, tofu.ResultSuccess).Inc()
	return nil
}
