package config

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// The encryption block: its shape checked, and its key providers resolved
// into what tofu's environment carries (Source) and what workspaces may
// hold (Public).

// Encryption is OpenTofu's state and plan encryption, in OpenTofu's own
// syntax. tfccm passes it to every tofu it runs (the workspaces' init, plan,
// apply and destroy, the state sources' reads, unlock) as TF_ENCRYPTION,
// and writes the part without secrets into every workspace's
// tfccm_backend.tf. A secret is never written in the cloud config or a
// rendered file: an attribute of a key_provider block may be env.NAME,
// replaced by the controller's environment variable NAME (mounted from a
// Secret), whose value is then scrubbed from every log and Event. A
// key_provider "tfccm_pbkdf2" is given to tofu as an external key provider
// answered by the controller's key server (internal/keyserver), which
// derives each key once per process (keyserver.go).
type Encryption struct {
	Body hcl.Body `hcl:",remain" doc:"OpenTofu's encryption settings, as in a terraform { encryption } block (key_provider, method, state, plan, remote_state_data_sources; enforced and fallback included); a key_provider attribute may be env.NAME, read from the controller's environment; key_provider tfccm_pbkdf2 (passphrase = env.NAME) derives its key once per controller process instead of several times in every tofu command. Admin side of the trust boundary. OpenTofu only: refused with the terraform binary. See docs/encryption.md."`

	// Source is the encryption configuration with every env.NAME replaced
	// by its value: what TF_ENCRYPTION carries. Secret.
	Source string
	// Public is the configuration without the key_provider blocks that
	// hold a value from the environment: what is written into workspaces.
	Public []byte
	// Secrets are the values read from the environment, and the parts of
	// Source that change with every process (the key server's socket and
	// key ids of a tfccm_pbkdf2 key provider: not secret, but scrubbed
	// like them so that the configuration's hash stays the same across
	// restarts).
	Secrets []string
}

// finishEncryption resolves the encryption block (src is the cloud
// config's text): its body checked, every env.NAME and tfccm_pbkdf2 key
// provider resolved into Source, the part without them into Public.
func (c *Config) finishEncryption(src []byte) hcl.Diagnostics {
	e := c.Encryption
	if e == nil {
		return nil
	}
	body, inner, start, diags := c.encryptionBody(src)
	if diags.HasErrors() {
		return diags
	}
	if diags := c.checkEncryptionBlocks(body); diags.HasErrors() {
		return diags
	}
	full, d := hclwrite.ParseConfig(inner, c.Filename, start)
	if d.HasErrors() {
		return d
	}
	rng := body.SrcRange
	if diags := renameTfccmProviders(full.Body(), rng); diags.HasErrors() {
		return diags
	}
	public, secrets, diags := resolveKeyProviders(full.Body(), rng)
	if diags.HasErrors() {
		return diags
	}
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	e.Source, e.Public, e.Secrets = string(full.Bytes()), public, secrets
	c.Terraform.Encryption = e
	return nil
}

// encryptionBody is the encryption block's native-syntax body and its
// text between the braces (inner, starting at start), refused with the
// terraform binary.
func (c *Config) encryptionBody(src []byte) (body *hclsyntax.Body, inner []byte, start hcl.Pos, diags hcl.Diagnostics) {
	body, ok := c.Encryption.Body.(*hclsyntax.Body)
	if !ok {
		return nil, nil, start, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid encryption block", Detail: "The encryption block must be written in HCL native syntax."}}
	}
	rng := body.SrcRange
	if bin := c.Terraform.Binary; strings.HasPrefix(filepath.Base(bin), "terraform") {
		return nil, nil, start, hcl.Diagnostics{{
			Severity: hcl.DiagError, Summary: "Encryption needs OpenTofu",
			Detail:  fmt.Sprintf("terraform.binary is %q: state and plan encryption is OpenTofu's (>= 1.7); Terraform would write the state in plaintext. Use tofu, or remove the encryption block.", bin),
			Subject: rng.Ptr(),
		}}
	}
	// The body's range spans its braces.
	start, end := body.SrcRange.Start, body.SrcRange.End
	if end.Byte > len(src) || start.Byte >= end.Byte || src[start.Byte] != '{' || src[end.Byte-1] != '}' {
		return nil, nil, start, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid encryption block", Subject: rng.Ptr()}}
	}
	start.Byte++
	start.Column++
	return body, src[start.Byte : end.Byte-1], start, nil
}

// checkEncryptionBlocks checks the body's shape: blocks only, each one
// OpenTofu knows, a state or plan block among them, and no tfccm_pbkdf2
// key provider where tofu runs in runner Jobs.
func (c *Config) checkEncryptionBlocks(body *hclsyntax.Body) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if len(body.Attributes) > 0 {
		for _, a := range body.Attributes {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unexpected attribute", Detail: "The encryption block holds blocks only (key_provider, method, state, plan, remote_state_data_sources).", Subject: a.SrcRange.Ptr()})
		}
		return diags
	}
	known := map[string]bool{"key_provider": true, "method": true, "state": true, "plan": true, "remote_state_data_sources": true}
	hasMethod := false
	for _, b := range body.Blocks {
		if !known[b.Type] {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unknown encryption block", Detail: fmt.Sprintf("%q is not an OpenTofu encryption block (key_provider, method, state, plan, remote_state_data_sources).", b.Type), Subject: b.DefRange().Ptr()})
		}
		if b.Type == "state" || b.Type == "plan" {
			hasMethod = true
		}
		if b.Type == "key_provider" && len(b.Labels) == 2 && b.Labels[0] == TfccmKeyProvider && c.Terraform.Runner == RunnerJob {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "tfccm_pbkdf2 needs tofu in the controller's pod",
				Detail:  fmt.Sprintf("key_provider %q %q is answered by the controller over a local socket, which tofu in runner Jobs (terraform.runner = \"job\") cannot reach: use OpenTofu's pbkdf2 or a KMS key provider there (docs/encryption.md).", TfccmKeyProvider, b.Labels[1]),
				Subject: b.DefRange().Ptr()})
		}
	}
	if !hasMethod {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Encryption without a state or plan block", Detail: "Name the method that encrypts state and plans: state { method = method.aes_gcm.NAME } and plan { ... }.", Subject: body.SrcRange.Ptr()})
	}
	return diags
}

// resolveKeyProviders resolves the key providers of body in place (a
// tfccm_pbkdf2 one into the key server's external provider, every
// env.NAME into its value) and returns the configuration without the
// key providers that hold a value from the environment (what is written
// into workspaces) and the values read. rng is the block's, for the
// diagnostics.
func resolveKeyProviders(body *hclwrite.Body, rng hcl.Range) ([]byte, []string, hcl.Diagnostics) {
	public := hclwrite.NewEmptyFile()
	var secrets []string
	var diags hcl.Diagnostics
	for _, blk := range body.Blocks() {
		fromEnv := false
		if labels := blk.Labels(); blk.Type() == "key_provider" && len(labels) == 2 && labels[0] == TfccmKeyProvider {
			var ds hcl.Diagnostics
			secrets, ds = useKeyServer(blk, secrets, rng)
			diags = append(diags, ds...)
			fromEnv = true
		} else if blk.Type() == "key_provider" {
			var missing []string
			fromEnv, missing, secrets = resolveEnv(blk.Body(), secrets)
			for _, name := range missing {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError, Summary: "Encryption key missing",
					Detail:  fmt.Sprintf("key_provider %s refers to env.%s, which is not set (or empty) in the controller's environment: mount the key's Secret as that variable.", strings.Join(blk.Labels(), "."), name),
					Subject: rng.Ptr(),
				})
			}
		}
		if !fromEnv {
			public.Body().AppendBlock(blk)
		}
	}
	return public.Bytes(), secrets, diags
}

// resolveEnv replaces every attribute of body (and its nested blocks) that
// is exactly env.NAME by the variable's value, reporting whether any was,
// the names not set, and the values read appended to secrets.
func resolveEnv(body *hclwrite.Body, secrets []string) (bool, []string, []string) {
	found := false
	var missing []string
	names := make([]string, 0, len(body.Attributes()))
	for n := range body.Attributes() {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		name, ok := envRef(body.Attributes()[n])
		if !ok {
			continue
		}
		found = true
		v := os.Getenv(name)
		if v == "" {
			missing = append(missing, name)
			continue
		}
		body.SetAttributeValue(n, cty.StringVal(v))
		secrets = append(secrets, v)
	}
	for _, b := range body.Blocks() {
		f, m, s := resolveEnv(b.Body(), secrets)
		found, missing, secrets = found || f, append(missing, m...), s
	}
	return found, missing, secrets
}
