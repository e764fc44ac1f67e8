package instances

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/hashicorp/terraform-exec/tfexec"
	"github.com/zclconf/go-cty/cty"
)

// sourceBackend is where a working directory's state lives: a local state
// file, or the backend block its configuration declares, copied into a
// scratch directory of tfccm's own.
type sourceBackend struct {
	localPath string // the local backend's state file
	file      []byte // backend.tf of the scratch directory
	workspace string // the directory's selected workspace, "" for default
}

// readBackend finds the backend of the working directory dir: the backend
// block of its *.tf files (copied token for token), the local backend's
// state file otherwise. A backend block that refers to variables or locals
// is refused: it is read on its own.
func readBackend(dir string) (*sourceBackend, error) {
	ws := ""
	if b, err := os.ReadFile(filepath.Join(dir, ".terraform", "environment")); err == nil {
		if w := strings.TrimSpace(string(b)); w != "default" {
			ws = w
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		blk, typ, err := backendBlock(src, name)
		if err != nil {
			return nil, err
		}
		if blk == nil {
			continue
		}
		if typ != "local" {
			f := hclwrite.NewEmptyFile()
			f.Body().AppendNewBlock("terraform", nil).Body().AppendBlock(blk)
			return &sourceBackend{file: f.Bytes(), workspace: ws}, nil
		}
		// The local backend: its path (default terraform.tfstate) is relative
		// to dir, so it is read as a state file.
		path := "terraform.tfstate"
		if a := blk.Body().GetAttribute("path"); a != nil {
			v, err := literalString(a, name)
			if err != nil {
				return nil, err
			}
			path = v
		}
		return &sourceBackend{localPath: localStatePath(dir, path, ws)}, nil
	}
	return &sourceBackend{localPath: localStatePath(dir, "terraform.tfstate", ws)}, nil
}

func localStatePath(dir, path, ws string) string {
	if ws != "" {
		path = filepath.Join("terraform.tfstate.d", ws, filepath.Base(path))
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	return path
}

// backendBlock returns the backend block of a terraform block in src, and
// its type.
func backendBlock(src []byte, name string) (*hclwrite.Block, string, error) {
	sf, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, "", fmt.Errorf("read backend: %w", diags)
	}
	var found *hclsyntax.Block
	for _, b := range sf.Body.(*hclsyntax.Body).Blocks {
		if b.Type != "terraform" {
			continue
		}
		for _, inner := range b.Body.Blocks {
			switch {
			case inner.Type == "cloud":
				return nil, "", fmt.Errorf("%s: a cloud block's state is not supported as an instances source; use its backend's state file or a backend block", inner.DefRange())
			case inner.Type == "backend" && len(inner.Labels) == 1:
				found = inner
			}
		}
	}
	if found == nil {
		return nil, "", nil
	}
	for _, a := range found.Body.Attributes {
		if vars := a.Expr.Variables(); len(vars) > 0 {
			return nil, "", fmt.Errorf("%s: the backend setting %s refers to %s: tfccm reads the backend block on its own, so its settings must be literal values", a.SrcRange, a.Name, vars[0].RootName())
		}
	}
	wf, diags := hclwrite.ParseConfig(src, name, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, "", fmt.Errorf("read backend: %w", diags)
	}
	for _, b := range wf.Body().Blocks() {
		if b.Type() != "terraform" {
			continue
		}
		for _, inner := range b.Body().Blocks() {
			if inner.Type() == "backend" && len(inner.Labels()) == 1 {
				return inner, inner.Labels()[0], nil
			}
		}
	}
	return nil, "", nil
}

// literalString is the value of a string-literal attribute.
func literalString(a *hclwrite.Attribute, name string) (string, error) {
	src := a.Expr().BuildTokens(nil).Bytes()
	expr, diags := hclsyntax.ParseExpression(src, name, hcl.InitialPos)
	if diags.HasErrors() {
		return "", fmt.Errorf("read backend: %w", diags)
	}
	v, diags := expr.Value(nil)
	if diags.HasErrors() || !v.Type().Equals(cty.String) || v.IsNull() {
		return "", fmt.Errorf("%s: the local backend's path must be a literal string", name)
	}
	return v.AsString(), nil
}

// init writes the backend into the scratch directory and initializes it
// without installing any provider (-plugin-dir of an empty directory).
// `tofu init` also wants the providers the state names; it fails on them
// after the backend is initialized, which is all `tofu state pull` needs,
// so that failure is passed over once the backend is recorded.
func (b *sourceBackend) init(ctx context.Context, tf *tfexec.Terraform, dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "backend.tf"), b.file, 0o600); err != nil {
		return err
	}
	none := filepath.Join(dir, ".no-plugins")
	if err := os.MkdirAll(none, 0o700); err != nil {
		return err
	}
	err := tf.Init(ctx, tfexec.Backend(true), tfexec.PluginDir(none))
	if err == nil || backendRecorded(dir) {
		return nil
	}
	return fmt.Errorf("tofu init of the backend: %w", err)
}

// backendRecorded reports whether `tofu init` recorded a backend in dir.
func backendRecorded(dir string) bool {
	raw, err := os.ReadFile(filepath.Join(dir, ".terraform", "terraform.tfstate"))
	if err != nil {
		return false
	}
	var rec struct {
		Backend *struct {
			Type string `json:"type"`
		} `json:"backend"`
	}
	return json.Unmarshal(raw, &rec) == nil && rec.Backend != nil && rec.Backend.Type != ""
}
