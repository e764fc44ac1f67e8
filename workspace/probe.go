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
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/tfccm/tfccm/internal/fsutil"
)

// Probes: a workspace may carry a read-only root module of its own in a
// subdirectory (a load balancer's health/ module). Probe plans it and
// returns its outputs. A probe never applies, never takes or waits for a
// state lock and never touches the workspace's state: the module has no
// backend (an empty local state) and only data sources, which a plan reads.
// It runs beside the engine's passes, not in its queue, in a copy of the
// module of its own (<work dir>/.probes/<workspace>/<module>: its
// .terraform and plan file), so the workspace directory never changes.

// probesDir holds the probes' copies of their modules, in the work dir.
const probesDir = ".probes"

// probePlanFile is the saved plan of a probe, inside its copy.
const probePlanFile = ".tfccm-probe.plan"

// maxProbeTime bounds each of a probe's commands.
const maxProbeTime = time.Minute

// ErrNoProbe is returned by Probe when the workspace has no such module.
var ErrNoProbe = errors.New("workspace has no such module")

// probes serializes the probes of one module.
var probes sync.Map // copy dir -> *sync.Mutex

// Probe plans the root module in subdirectory module of workspace name
// and returns its outputs' values. inputs names a file of the workspace's
// own (its generated *.auto.tfvars, "" for none) that the module reads too:
// it is linked into the copy under the same name, so init (which may need
// the values: a provider for_each) and plan load it. The copy is
// initialized on its first probe (and again when its providers changed).
func (e *Engine) Probe(ctx context.Context, name, module, inputs string) (map[string]json.RawMessage, error) {
	src := filepath.Join(e.Dir(name), module)
	dir := filepath.Join(e.opts.WorkDir, probesDir, name, module)
	mu, _ := probes.LoadOrStore(dir, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if !hasConfig(src) {
		_ = os.RemoveAll(filepath.Join(e.opts.WorkDir, probesDir, name))
		return nil, ErrNoProbe // none, or removed by a newer spec
	}
	if err := syncProbe(src, dir, inputs); err != nil {
		return nil, fmt.Errorf("probe %s/%s: %w", name, module, err)
	}
	if inputs != "" {
		link := filepath.Join(dir, filepath.Base(inputs))
		target := filepath.Join(e.Dir(name), inputs)
		if cur, err := os.Readlink(link); err != nil || cur != target {
			_ = os.Remove(link)
			if err := os.Symlink(target, link); err != nil {
				return nil, fmt.Errorf("probe %s/%s: link its inputs: %w", name, module, err)
			}
		}
	}
	r := &runner{e: e, dir: dir, scrub: e.scrub}
	if !exists(filepath.Join(dir, ".terraform")) {
		if err := r.probeInit(ctx); err != nil {
			return nil, err
		}
	}
	opts := []tfexec.PlanOption{tfexec.Out(probePlanFile), tfexec.Lock(false)}
	defer os.Remove(filepath.Join(dir, probePlanFile))
	err := r.probeCommand(ctx, "plan", func(ctx context.Context, tf *tfexec.Terraform) error {
		_, err := tf.Plan(ctx, opts...)
		return err
	})
	var perr *Error
	if errors.As(err, &perr) && perr.Reinit {
		if rerr := os.Remove(filepath.Join(dir, ".terraform.lock.hcl")); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return nil, err
		}
		if err := r.probeInit(ctx); err != nil {
			return nil, err
		}
		err = r.probeCommand(ctx, "plan", func(ctx context.Context, tf *tfexec.Terraform) error {
			_, err := tf.Plan(ctx, opts...)
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	var plan *tfjson.Plan
	if err := r.probeCommand(ctx, "show", func(ctx context.Context, tf *tfexec.Terraform) error {
		var err error
		plan, err = tf.ShowPlanFile(ctx, probePlanFile)
		return err
	}); err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	if plan.PlannedValues == nil {
		return out, nil
	}
	for k, o := range plan.PlannedValues.Outputs {
		if o == nil || o.Sensitive {
			continue
		}
		b, err := json.Marshal(o.Value)
		if err != nil {
			return nil, fmt.Errorf("probe %s/%s: output %s: %w", name, module, k, err)
		}
		out[k] = b
	}
	return out, nil
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

// removeProbes deletes the probes' copies of workspace name's modules.
func (e *Engine) removeProbes(name string) error {
	return os.RemoveAll(filepath.Join(e.opts.WorkDir, probesDir, name))
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

func (r *runner) probeInit(ctx context.Context) error {
	return r.probeCommand(ctx, "init", func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.Init(ctx, tfexec.Upgrade(false))
	})
}

// probeCommand runs one command of a probe: bounded in time, counted in
// the engine's metrics as probe_<op>, failures as a scrubbed *Error.
func (r *runner) probeCommand(ctx context.Context, op string, fn func(context.Context, *tfexec.Terraform) error) error {
	limit := maxProbeTime
	if t := r.e.opts.Timeout; t > 0 && t < limit {
		limit = t
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	start := time.Now()
	err := r.command(ctx, fn)
	operationDuration.WithLabelValues("probe_" + op).Observe(time.Since(start).Seconds())
	if err != nil {
		operationsTotal.WithLabelValues("probe_"+op, resultError).Inc()
		text := err.Error()
		return &Error{Op: "probe " + op, Summary: r.scrub.Scrub(summarize(text)), Reinit: needsReinit(text)}
	}
	operationsTotal.WithLabelValues("probe_"+op, resultSuccess).Inc()
	return nil
}
