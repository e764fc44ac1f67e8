package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/tfccm/tfccm/internal/secret"
	"github.com/tfccm/tfccm/workspace/backends"
	"github.com/tfccm/tfccm/workspace/plans"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// A preview is a read-only plan of a workspace against its real state, for
// `tfccm plan`: it takes no lock, writes nothing to the backend, selects a
// Terraform workspace only when it exists (a missing one is planned from
// an empty state), and is made in a scratch directory the caller owns.

// previewOverrideFile replaces the backend of a preview whose Terraform
// workspace does not exist yet with an empty local state.
const (
	previewOverrideFile = "tfccm_preview_override.tf"
	previewPlanFile     = "tfccm-preview.tfplan"
	previewOverride     = "terraform {\n  backend \"local\" {\n    path = \"empty.tfstate\"\n  }\n}\n"
)

// PreviewOptions are how tofu runs for a preview.
type PreviewOptions struct {
	// Binary is tofu (or terraform).
	Binary string
	// Env is tofu's environment but the credentials (tfenv.Workspace).
	Env map[string]string
	// Credentials are the configured credentials; a preview gets the ones
	// its module declares (tofu.CredentialsFile), as the engine's runs do.
	Credentials map[string]string
	// ProviderLockFile, when set, is the dependency lock file init starts
	// from (Options.ProviderLockFile, workspace/tofu/integrity.go).
	ProviderLockFile string
	// Scrub removes the secrets of Env from errors.
	Scrub *secret.Scrubber
	// Destroy previews the workspace's destroy (tofu plan -destroy)
	// instead of its apply: what the controller runs for a workspace the
	// candidate no longer renders.
	Destroy bool
}

// Preview is the outcome of one read-only plan.
type Preview struct {
	// Plan is tofu's JSON plan. It may hold sensitive values in clear:
	// publish only Redacted.
	Plan *tfjson.Plan
	// Redacted is the plan's published form (as review mode publishes it):
	// resource and output changes, sensitive values replaced.
	Redacted []byte
	// Counts and Summary as PendingPlan's.
	Add, Change, Remove int
	Summary             string
	// Replaced are the addresses of resources to be replaced.
	Replaced []string
	// Import and Forget count imported and forgotten resources; Imported
	// are the imported addresses (an adoption: tfccm.io/adopt), and
	// Refused says why the live controller would refuse the adoption
	// (plans.CheckAdoption; "" = not refused).
	Import, Forget int
	Imported       []string
	Refused        string
	// NoState is true when the backend holds no state for the workspace
	// yet (never applied).
	NoState bool
	// Document is the plan as policy rules see it (PolicyDocument).
	Document map[string]any
}

// PreviewPlan writes spec into dir (a new scratch directory) and plans it
// read-only against the state its backend holds.
func PreviewPlan(ctx context.Context, o PreviewOptions, spec *Spec, dir string) (*Preview, error) {
	if err := spec.WriteDir(dir); err != nil {
		return nil, err
	}
	fail := func(op string, err error) error {
		return fmt.Errorf("workspace %s: tofu %s: %s", spec.Name, op, o.Scrub.Scrub(err.Error()))
	}
	tf, err := previewTofu(o, spec, dir)
	if err != nil {
		return nil, err
	}
	p := &Preview{}
	if p.NoState, err = previewInit(ctx, tf, spec, dir, fail); err != nil {
		return nil, err
	}
	opts := []tfexec.PlanOption{tfexec.Lock(false), tfexec.Out(previewPlanFile)}
	switch {
	case o.Destroy:
		opts = append(opts, tfexec.Destroy(true))
	case spec.Adopts && !p.NoState && previewHasResources(ctx, tf):
		// As the engine plans once the adoption applied (AdoptVar).
		opts = append(opts, adoptNullVar())
	}
	if _, err := tf.Plan(ctx, opts...); err != nil {
		return nil, fail("plan", err)
	}
	plan, err := tf.ShowPlanFile(ctx, previewPlanFile)
	if err != nil {
		return nil, fail("show", err)
	}
	if err := p.fill(plan, o.Scrub, spec.Name, dir); err != nil {
		return nil, err
	}
	return p, nil
}

// previewHasResources reports whether the workspace's state holds any
// resource (false when it cannot be read).
func previewHasResources(ctx context.Context, tf *tfexec.Terraform) bool {
	raw, err := tf.StatePull(ctx)
	if err != nil || raw == "" {
		return false
	}
	var st struct {
		Resources []json.RawMessage `json:"resources"`
	}
	return json.Unmarshal([]byte(raw), &st) == nil && len(st.Resources) > 0
}

// previewTofu is tofu in dir with the preview's environment (the
// credentials the module declares, the backend's secret settings) and,
// with a pinned lock file, that lock file in dir.
func previewTofu(o PreviewOptions, spec *Spec, dir string) (*tfexec.Terraform, error) {
	benv, _ := backends.SplitSecrets(spec.Backend.Type, spec.BackendConfig)
	env := maps.Clone(o.Env)
	if env == nil {
		env = map[string]string{}
	}
	names, err := tofu.DeclaredCredentials(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", spec.Name, err)
	}
	maps.Copy(env, tofu.Only(o.Credentials, names))
	maps.Copy(env, benv)
	tf, err := tfexec.NewTerraform(dir, o.Binary)
	if err != nil {
		return nil, err
	}
	if err := tf.SetEnv(env); err != nil {
		return nil, err
	}
	if o.ProviderLockFile != "" {
		lock, err := tofu.ReadProviderLock(o.ProviderLockFile)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, tofu.LockFile), lock, 0o644); err != nil {
			return nil, fmt.Errorf("workspace %s: %w", spec.Name, err)
		}
	}
	return tf, nil
}

// previewInit runs init (the secret backend settings in a file outside
// dir, removed afterwards) and selects spec's Terraform workspace; when
// that workspace does not exist it reports noState and re-inits dir over
// an empty local state instead.
func previewInit(ctx context.Context, tf *tfexec.Terraform, spec *Spec, dir string, fail func(string, error) error) (noState bool, err error) {
	initOpts := []tfexec.InitOption{tfexec.Upgrade(false)}
	if _, bfile := backends.SplitSecrets(spec.Backend.Type, spec.BackendConfig); len(bfile) > 0 {
		secrets, err := os.MkdirTemp("", "tfccm-preview-")
		if err != nil {
			return false, err
		}
		defer os.RemoveAll(secrets)
		path, _, err := backends.WriteConfigFile(secrets, spec.Name, bfile)
		if err != nil {
			return false, err
		}
		initOpts = append(initOpts, tfexec.BackendConfig(path))
	}
	if err := tf.Init(ctx, initOpts...); err != nil {
		return false, fail("init", err)
	}
	if !spec.namedWorkspace() {
		return false, nil
	}
	list, _, err := tf.WorkspaceList(ctx)
	if err != nil {
		return false, fail("workspace list", err)
	}
	if slices.Contains(list, spec.StateWorkspace) {
		if err := tf.WorkspaceSelect(ctx, spec.StateWorkspace); err != nil {
			return false, fail("workspace select", err)
		}
		return false, nil
	}
	// Plan from an empty state: an override file puts a local backend in
	// the scratch directory over the real one, so nothing is created there.
	if err := os.WriteFile(filepath.Join(dir, previewOverrideFile), []byte(previewOverride), 0o600); err != nil {
		return true, err
	}
	if err := tf.Init(ctx, tfexec.Upgrade(false), tfexec.Reconfigure(true)); err != nil {
		return true, fail("init", err)
	}
	return true, nil
}

// fill sets p from tofu's plan: its counts, replaced resources, policy
// document and published (redacted, scrubbed) form.
func (p *Preview) fill(plan *tfjson.Plan, scrub *secret.Scrubber, name, dir string) error {
	p.Plan = plan
	if plan.PriorState == nil || plan.PriorState.Values == nil || plan.PriorState.Values.RootModule == nil ||
		len(plan.PriorState.Values.RootModule.Resources)+len(plan.PriorState.Values.RootModule.ChildModules) == 0 {
		p.NoState = true
	}
	var pending plans.PendingPlan
	pub := plans.Redact(plan, &pending)
	p.Add, p.Change, p.Remove, p.Summary = pending.Add, pending.Change, pending.Remove, pending.Summary()
	p.Import, p.Forget, p.Imported = pending.Import, pending.Forget, plans.Imports(plan)
	if err := plans.CheckAdoption(plan); err != nil {
		p.Refused = err.Error()
	}
	pub.Summary = p.Summary
	for _, rc := range plan.ResourceChanges {
		if rc != nil && rc.Change != nil && rc.Change.Actions.Replace() {
			p.Replaced = append(p.Replaced, rc.Address)
		}
	}
	var err error
	if p.Document, err = plans.PolicyDocument(plan, scrub); err != nil {
		return err
	}
	classifyBackends(p.Document, plan, dir)
	b, err := json.MarshalIndent(pub, "", "  ")
	if err != nil {
		return fmt.Errorf("workspace %s: plan: %w", name, err)
	}
	p.Redacted = []byte(scrub.With(plans.SensitiveStrings(plan)).Scrub(string(b)))
	return nil
}
