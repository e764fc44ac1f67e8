package tofu

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/terraform-exec/tfexec"
)

// Credentials as ephemeral values: a workspace whose root module declares
//
//	variable "credentials" {
//	  type      = map(string)
//	  ephemeral = true
//	}
//
// gets the configured credentials its module declares (CredentialsFile,
// credentials.go; by variable name) in it at every plan, apply and
// destroy, for provider blocks and
// write-only arguments. The value goes in a var file under
// work_dir/.secrets, outside every workspace, that exists only while the
// command runs; an ephemeral variable is never saved in a plan or in state
// (which is why it must be given again to apply a saved plan). The
// template contract (templates) refuses the variable unless it is
// ephemeral.

// CredentialsVar is the name of the variable.
const CredentialsVar = "credentials"

// declaresCredentials reports whether spec's root module declares
// CredentialsVar (in a .tf or .tf.json file at the top level).
func declaresCredentials(spec *DirSpec) bool {
	p := hclparse.NewParser()
	schema := &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "variable", LabelNames: []string{"name"}}}}
	for path, data := range spec.Files {
		var f *hcl.File
		switch {
		case strings.Contains(path, "/"):
			continue
		case strings.HasSuffix(path, ".tf"):
			f, _ = p.ParseHCL(data, path)
		case strings.HasSuffix(path, ".tf.json"):
			f, _ = p.ParseJSON(data, path)
		}
		if f == nil {
			continue
		}
		content, _, _ := f.Body.PartialContent(schema)
		for _, b := range content.Blocks {
			if b.Labels[0] == CredentialsVar {
				return true
			}
		}
	}
	return false
}

// credentialsFile writes the credentials var file for the runner's
// workspace if its module declares CredentialsVar; it returns the option
// to pass (nil if none) and a cleanup that removes the file.
func (r *Runner) credentialsFile() (*tfexec.VarFileOption, func(), error) {
	if r.Spec == nil || !declaresCredentials(r.Spec) {
		return nil, func() {}, nil
	}
	creds, err := r.credentials()
	if err != nil {
		return nil, nil, fmt.Errorf("credentials: %w", err)
	}
	data, err := json.Marshal(map[string]map[string]string{CredentialsVar: creds})
	if err != nil {
		return nil, nil, fmt.Errorf("credentials: %w", err)
	}
	dir := filepath.Join(filepath.Dir(r.Dir), ".secrets")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("credentials: %w", err)
	}
	path := filepath.Join(dir, filepath.Base(r.Dir)+".credentials.tfvars.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return nil, nil, fmt.Errorf("credentials: %w", err)
	}
	return tfexec.VarFile(path), func() { _ = os.Remove(path) }, nil
}

// WithCredentials runs fn with the credentials var file option (nil when
// the module takes none); op names the step in errors.
func (r *Runner) WithCredentials(op string, fn func(vf *tfexec.VarFileOption) error) error {
	vf, cleanup, err := r.credentialsFile()
	if err != nil {
		return &Error{Op: op, Summary: r.Scrub.Scrub(err.Error())}
	}
	defer cleanup()
	return fn(vf)
}

// credentials are the configured credentials the runner's workspace
// declares (credentials.go): all its tofu and providers get.
func (r *Runner) credentials() (map[string]string, error) {
	dir := r.DeclDir
	if dir == "" {
		dir = r.Dir
	}
	names, err := DeclaredCredentials(dir)
	if err != nil {
		return nil, err
	}
	return Only(r.Setup.Credentials, names), nil
}
