package workspace

// A pass's runner: package tofu's runner in a workspace directory, with
// what the passes judge (what the pass is for, the gate's verdict, the
// last plan's summary line), and the commands that read or keep the
// engine's state (errored.tfstate, outputs).

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/internal/secret"
	"github.com/tfccm/tfccm/workspace/backends"
	"github.com/tfccm/tfccm/workspace/plans"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// runner runs a pass's tofu commands in one workspace directory.
type runner struct {
	*tofu.Runner
	// spec is the workspace's spec (nil for a probe's copy).
	spec     *Spec
	planLine *tofu.PlanLineWriter // the last plan's summary line (plancounts.go)
	// For the gate: what the pass is for, and its verdict.
	drift, created bool
	verdict        plans.GateVerdict
}

// newRunner is a runner in dir for spec (nil: a probe's copy).
func newRunner(t *tofu.Setup, dir string, spec *Spec, scrub *secret.Scrubber) *runner {
	if spec == nil {
		return &runner{Runner: tofu.NewRunner(t, dir, nil, scrub)}
	}
	return &runner{Runner: tofu.NewRunner(t, dir, spec.dirSpec(), scrub), spec: spec}
}

// dirSpec is what a runner needs of s.
func (s *Spec) dirSpec() *tofu.DirSpec {
	return &tofu.DirSpec{Name: s.Name, Files: s.Files, Modes: s.Modes, StateWorkspace: s.StateWorkspace,
		Backend: s.Backend, BackendConfig: s.BackendConfig}
}

// pushErrored handles errored.tfstate, which tofu writes when it could
// not save state to the backend: push it (tofu refuses an older or
// foreign state), then keep it aside under .tfccm.
func (r *runner) pushErrored(ctx context.Context) error {
	p := filepath.Join(r.Dir, "errored.tfstate")
	if !exists(p) {
		return nil
	}
	if err := r.Step(ctx, "state_push", func(ctx context.Context, tf *tfexec.Terraform) error {
		return tf.StatePush(ctx, "errored.tfstate", tfexec.Lock(true), tfexec.LockTimeout("0s"))
	}); err != nil {
		return err
	}
	dst := erroredPath(r.Dir, time.Now())
	if err := os.Rename(p, dst); err != nil {
		return &tofu.Error{Op: "state push", Summary: err.Error()}
	}
	return nil
}

// outputs reads root outputs: from the state file for the local backend
// and from the state Secret for the kubernetes backend (no process; an
// encrypted state Secret is read by tofu), else with `tofu output -json`.
func (r *runner) outputs(ctx context.Context, spec *Spec) (map[string]outputMeta, error) {
	if spec.Backend.IsLocal() && !spec.namedWorkspace() && spec.BackendConfig["path"] == "" {
		p := spec.Backend.LocalStatePath(r.Dir)
		if !exists(p) {
			return map[string]outputMeta{}, nil
		}
		o, err := localStateOutputs(p)
		if err == nil {
			return o, nil
		}
		if !errors.Is(err, errEncryptedState) {
			return nil, &tofu.Error{Op: "output", Summary: err.Error()}
		}
		// OpenTofu's encryption: tofu decrypts.
	} else if spec.Backend.Type == "kubernetes" && !spec.namedWorkspace() {
		o, err := kubernetesStateOutputs(ctx, spec.Backend)
		if err == nil {
			return o, nil
		}
		klog.V(2).InfoS("Reading outputs with tofu: the state Secret cannot be read directly", "workspace", spec.Name, "reason", r.Scrub.Scrub(err.Error()))
	}
	got, err := tofu.StepResult(ctx, r.Runner, "output", func(ctx context.Context, tf *tfexec.Terraform) (map[string]tfexec.OutputMeta, error) {
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

// kubernetesStateOutputs reads the root outputs of the default
// workspace's state from the kubernetes backend's state Secret; a state
// that is not plain (encrypted) is an error, and tofu reads it instead.
func kubernetesStateOutputs(ctx context.Context, b backends.Info) (map[string]outputMeta, error) {
	doc, err := backends.KubernetesState(ctx, b)
	if err != nil {
		return nil, err
	}
	return stateOutputs(doc)
}
