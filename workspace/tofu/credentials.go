package tofu

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/tfccm/tfccm/internal/tfenv"
)

// Which credentials a workspace receives (the cluster admin's side of the
// trust boundary): a template module lists, in CredentialsFile at its top,
// the names of the configured credentials (terraform.env and pass_env) its
// tofu and providers need:
//
//	env = ["HCLOUD_TOKEN"]
//
// The engine reads the file from the workspace directory before every
// command and puts only those variables into tofu's environment (and so
// its providers'), and only those into the ephemeral credentials
// variable. A configured credential no module declares
// reaches no workspace; a module without the file gets none (the local
// and baremetal sets). tofu reads no .hcl file of a root module, so the
// file is only ever read by tfccm.

// CredentialsFile is the declaration's file name in a module (and so in
// its workspace).
const CredentialsFile = "credentials.hcl"

// credentialsDecl is CredentialsFile's schema.
type credentialsDecl struct {
	Env []string `hcl:"env,optional"`
}

// ParseCredentials reads a CredentialsFile: the declared variable names,
// sorted. A name tfccm refuses in terraform.env (tfenv.CheckName), a
// duplicate or any other content is an error diagnostic.
func ParseCredentials(data []byte, filename string) ([]string, hcl.Diagnostics) {
	f, diags := hclparse.NewParser().ParseHCL(data, filename)
	if diags.HasErrors() {
		return nil, diags
	}
	var d credentialsDecl
	if diags := gohcl.DecodeBody(f.Body, nil, &d); diags.HasErrors() {
		return nil, diags
	}
	attrs, _ := f.Body.JustAttributes()
	var subject *hcl.Range
	if a, ok := attrs["env"]; ok {
		subject = a.Expr.Range().Ptr()
	}
	seen := map[string]bool{}
	for _, k := range d.Env {
		if err := tfenv.CheckName(k); err != nil {
			return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid credential name",
				Detail: fmt.Sprintf("%s: %v.", CredentialsFile, err), Subject: subject}}
		}
		if seen[k] {
			return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Duplicate credential name",
				Detail: fmt.Sprintf("%s names %s twice.", CredentialsFile, k), Subject: subject}}
		}
		seen[k] = true
	}
	sort.Strings(d.Env)
	return d.Env, nil
}

// DeclaredCredentials reads the names the workspace in dir declares (none
// without a CredentialsFile).
func DeclaredCredentials(dir string) ([]string, error) {
	p := filepath.Join(dir, CredentialsFile)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the credentials declaration: %w", err)
	}
	names, diags := ParseCredentials(data, CredentialsFile)
	if diags.HasErrors() {
		return nil, fmt.Errorf("credentials declaration: %s", diags.Error())
	}
	return names, nil
}

// Only returns the credentials among creds that names declares.
func Only(creds map[string]string, names []string) map[string]string {
	out := make(map[string]string, len(names))
	for _, k := range names {
		if v, ok := creds[k]; ok {
			out[k] = v
		}
	}
	return out
}
