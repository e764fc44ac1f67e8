package templates

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/internal/tfenv"
	"github.com/tfccm/tfccm/workspace"
	"github.com/tfccm/tfccm/workspace/backends"
)

// secretBackendAttrs are backend settings never written to a workspace.
var secretBackendAttrs = map[string]bool{
	"access_key": true, "secret_key": true, "conn_str": true, "sas_token": true, "credentials": true,
	"encryption_key": true, "client_key": true, "client_certificate": true, "sse_customer_key": true,
	"kms_encryption_key": true,
	// Names that look secret but are not.
	"secret_suffix": false, "token_url": false,
}

func secretBackendAttr(name string) bool {
	if s, ok := secretBackendAttrs[name]; ok {
		return s
	}
	return strings.Contains(name, "password") || strings.Contains(name, "secret") || strings.Contains(name, "token")
}

// keyedBackend describes how tfccm keeps workspaces apart in one backend:
// which attribute it sets per workspace and how.
type keyedBackend struct {
	attrs []string                                                // attributes derived per workspace
	key   func(base string, cfg *config.Config, ws string) string // base = the configured value or ""
}

func slashKey(suffix string) func(string, *config.Config, string) string {
	return func(base string, cfg *config.Config, ws string) string {
		base = strings.Trim(base, "/")
		if base == "" {
			base = "tfccm/" + cfg.ClusterName
		}
		return base + "/" + ws + suffix
	}
}

// keyedBackends lists the backends with a per-workspace key attribute.
// Any other backend is passed through unchanged and the workspace is kept
// apart by selecting a Terraform workspace named after it.
var keyedBackends = map[string]keyedBackend{
	"local": {[]string{"path"}, func(base string, cfg *config.Config, ws string) string {
		if base == "" {
			base = filepath.Join(cfg.WorkDir, "state")
		}
		return filepath.Join(base, ws+".tfstate")
	}},
	"kubernetes": {[]string{"secret_suffix"}, func(base string, _ *config.Config, ws string) string {
		if base == "" {
			return ws
		}
		return base + "-" + ws
	}},
	"pg": {[]string{"schema_name"}, func(base string, _ *config.Config, ws string) string {
		if base == "" {
			base = "tfccm"
		}
		return base + "_" + strings.ReplaceAll(ws, "-", "_")
	}},
	"s3":      {[]string{"key"}, slashKey(".tfstate")},
	"azurerm": {[]string{"key"}, slashKey(".tfstate")},
	"gcs":     {[]string{"prefix"}, slashKey("")},
	"consul":  {[]string{"path"}, slashKey("")},
	"http": {[]string{"address", "lock_address", "unlock_address"}, func(base string, _ *config.Config, ws string) string {
		if base == "" {
			return ""
		}
		return strings.TrimRight(base, "/") + "/" + ws
	}},
}

// Backend renders only the backend of workspace name: the generated
// backend file, the effective backend settings and the Terraform workspace
// to select, exactly as a full render would. It lets a workspace whose
// inputs no longer render still be found and destroyed.
func Backend(cfg *config.Config, name string) (*workspace.Spec, error) {
	ws := newSpec(name)
	if err := addBackend(ws, cfg); err != nil {
		return nil, err
	}
	return ws, nil
}

// Catalog renders the backend of the catalog (backends.CatalogName),
// where the engine keeps every load balancer's last applied configuration
// next to its state: the key tfccm gives a workspace of that name. It is
// nil (no catalog) for the local backend, whose states are in the work
// dir the orphan sweep reads anyway, and for backends the catalog cannot
// list: http (no Terraform workspaces) and backends without a
// per-workspace key (their workspaces are Terraform workspaces already).
func Catalog(cfg *config.Config) (*workspace.Spec, error) {
	typ := cfg.Backend.Type
	if _, keyed := keyedBackends[typ]; !keyed || typ == "local" || typ == "http" {
		return nil, nil
	}
	return Backend(cfg, backends.CatalogName)
}

// WithBackend returns spec, a workspace as read back from its directory,
// with the backend tfccm generates for its name (Backend): what destroys a
// workspace whose inputs no longer render, and what `tfccm unlock` unlocks.
func WithBackend(cfg *config.Config, spec workspace.Spec) (workspace.Spec, error) {
	b, err := Backend(cfg, spec.Name)
	if err != nil {
		return workspace.Spec{}, fmt.Errorf("workspace %s: %w", spec.Name, err)
	}
	spec.Backend, spec.StateWorkspace, spec.BackendConfig = b.Backend, b.StateWorkspace, b.BackendConfig
	return spec, nil
}

// addBackend renders tfccm_backend.tf from the cloud config's backend.
func addBackend(w *workspace.Spec, cfg *config.Config) error {
	b := cfg.Backend
	if !tfenv.ValidBackendType(b.Type) {
		return fmt.Errorf("backend type %q is not a valid name", b.Type)
	}
	attrs := map[string]cty.Value{}
	for k, v := range b.Attributes {
		attrs[k] = v
	}
	if kb, ok := keyedBackends[b.Type]; ok {
		for i, a := range kb.attrs {
			base := ""
			if v, ok := attrs[a]; ok && !v.IsNull() && v.Type() == cty.String && v.IsKnown() {
				base = v.AsString()
			}
			if i > 0 && base == "" {
				continue // optional extra attributes (http locks) only when configured
			}
			if key := kb.key(base, cfg, w.Name); key != "" {
				attrs[a] = cty.StringVal(key)
			}
		}
	} else {
		w.StateWorkspace = w.Name
	}
	w.Backend = backends.Info{Type: b.Type, Attributes: attrs}
	f := hclwrite.NewEmptyFile()
	f.Body().AppendUnstructuredTokens(hclwrite.Tokens{{Type: hclsyntax.TokenComment, Bytes: []byte("# Generated by tfccm from the cloud config's backend; do not edit.\n")}})
	tb := f.Body().AppendNewBlock("terraform", nil).Body()
	bb := tb.AppendNewBlock("backend", []string{b.Type}).Body()
	for _, k := range sortedKeys(attrs) {
		if !hclsyntax.ValidIdentifier(k) {
			return fmt.Errorf("backend attribute %q is not a valid name", k)
		}
		v := attrs[k]
		if secretBackendAttr(k) && !keyedAttr(b.Type, k) {
			s, err := backendString(v)
			if err != nil {
				return fmt.Errorf("backend attribute %s: %w", k, err)
			}
			if w.BackendConfig == nil {
				w.BackendConfig = map[string]string{}
			}
			w.BackendConfig[k] = s
			continue
		}
		bb.SetAttributeValue(k, v)
	}
	if err := addEncryption(tb, cfg.Encryption); err != nil {
		return err
	}
	addFile(w, BackendFile, f.Bytes(), false)
	return nil
}

// addEncryption writes the cloud config's encryption block into the
// workspace's terraform block, without the key providers that hold a key
// from the environment: tofu gets the whole configuration, keys included,
// as TF_ENCRYPTION (config.Encryption), which OpenTofu merges over it.
func addEncryption(tb *hclwrite.Body, enc *config.Encryption) error {
	if enc == nil {
		return nil
	}
	pub, diags := hclwrite.ParseConfig(enc.Public, "encryption", hcl.InitialPos)
	if diags.HasErrors() {
		return fmt.Errorf("encryption: %w", diags)
	}
	eb := tb.AppendNewBlock("encryption", nil).Body()
	for _, b := range pub.Body().Blocks() {
		eb.AppendBlock(b)
	}
	return nil
}

func keyedAttr(typ, attr string) bool {
	for _, a := range keyedBackends[typ].attrs {
		if a == attr {
			return true
		}
	}
	return false
}

func backendString(v cty.Value) (string, error) {
	if v.Type() == cty.String && !v.IsNull() {
		return v.AsString(), nil
	}
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return "", fmt.Errorf("cannot encode value") // never echo the value
	}
	return string(b), nil
}
