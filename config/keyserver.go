package config

import (
	"fmt"
	"os"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/tfccm/tfccm/internal/keyserver"
)

// The tfccm_pbkdf2 key provider: its passphrase registered with the
// process's key server and the block rewritten into the external key
// provider that asks it.

// TfccmKeyProvider is the key provider type tfccm answers itself: PBKDF2
// from a passphrase in the controller's environment, derived once per
// process by internal/keyserver and handed to tofu through OpenTofu's
// external key provider. The admin's side of the trust boundary, like the
// whole encryption block.
const TfccmKeyProvider = "tfccm_pbkdf2"

// keyServer is the process's key server (a variable for tests).
var keyServer = keyserver.Default

// renameTfccmProviders turns every reference key_provider.tfccm_pbkdf2.NAME
// into key_provider.external.NAME, the provider OpenTofu will see, and
// refuses a name used by both.
func renameTfccmProviders(body *hclwrite.Body, rng hcl.Range) hcl.Diagnostics {
	external, ours := map[string]bool{}, map[string]bool{}
	for _, blk := range body.Blocks() {
		if l := blk.Labels(); blk.Type() == "key_provider" && len(l) == 2 {
			external[l[1]] = external[l[1]] || l[0] == "external"
			ours[l[1]] = ours[l[1]] || l[0] == TfccmKeyProvider
		}
	}
	var diags hcl.Diagnostics
	for name := range ours {
		if external[name] {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError, Summary: "Duplicate key provider name",
				Detail:  fmt.Sprintf("key_provider %q %q becomes OpenTofu's key_provider \"external\" %q, which is also declared: rename one of them.", TfccmKeyProvider, name, name),
				Subject: rng.Ptr(),
			})
		}
	}
	if len(ours) == 0 || diags.HasErrors() {
		return diags
	}
	var rename func(b *hclwrite.Body)
	rename = func(b *hclwrite.Body) {
		for name, a := range b.Attributes() {
			toks := a.Expr().BuildTokens(nil)
			changed := false
			for i := 0; i+2 < len(toks); i++ {
				if toks[i].Type == hclsyntax.TokenIdent && string(toks[i].Bytes) == "key_provider" &&
					toks[i+1].Type == hclsyntax.TokenDot &&
					toks[i+2].Type == hclsyntax.TokenIdent && string(toks[i+2].Bytes) == TfccmKeyProvider {
					toks[i+2] = &hclwrite.Token{Type: hclsyntax.TokenIdent, Bytes: []byte("external"), SpacesBefore: toks[i+2].SpacesBefore}
					changed = true
				}
			}
			if changed {
				b.SetAttributeRaw(name, toks)
			}
		}
		for _, nested := range b.Blocks() {
			rename(nested.Body())
		}
	}
	rename(body)
	return nil
}

// useKeyServer registers the passphrase of blk, a key_provider
// "tfccm_pbkdf2", with the key server and rewrites blk into the external
// key provider that asks it. The passphrase is appended to secrets, with
// the parts of the command that change with every process.
func useKeyServer(blk *hclwrite.Block, secrets []string, rng hcl.Range) ([]string, hcl.Diagnostics) {
	name := blk.Labels()[1]
	fail := func(detail string, a ...any) hcl.Diagnostics {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid tfccm_pbkdf2 key provider",
			Detail: fmt.Sprintf("key_provider %q %q: ", TfccmKeyProvider, name) + fmt.Sprintf(detail, a...), Subject: rng.Ptr()}}
	}
	attrs := blk.Body().Attributes()
	for n := range attrs {
		if n != "passphrase" {
			return secrets, fail("unexpected attribute %q: the only one is passphrase = env.NAME (OpenTofu's pbkdf2 defaults: SHA-512, 600,000 iterations, 32-byte key and salt).", n)
		}
	}
	if len(blk.Body().Blocks()) > 0 {
		return secrets, fail("unexpected block: the only attribute is passphrase = env.NAME.")
	}
	a := attrs["passphrase"]
	if a == nil {
		return secrets, fail("passphrase = env.NAME is required.")
	}
	env, ok := envRef(a)
	if !ok {
		return secrets, fail("passphrase must be env.NAME, a variable of the controller's environment mounted from a Secret: the passphrase is never written in the cloud config.")
	}
	pass := os.Getenv(env)
	if pass == "" {
		return secrets, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Encryption key missing",
			Detail:  fmt.Sprintf("key_provider %s.%s refers to env.%s, which is not set (or empty) in the controller's environment: mount the key's Secret as that variable.", TfccmKeyProvider, name, env),
			Subject: rng.Ptr()}}
	}
	srv, err := keyServer()
	if err != nil {
		return secrets, fail("%v", err)
	}
	cmd, err := srv.Register(pass)
	if err != nil {
		return secrets, fail("env.%s: %v", env, err)
	}
	blk.SetType("key_provider")
	blk.SetLabels([]string{"external", name})
	blk.Body().Clear()
	blk.Body().AppendNewline() // Clear leaves the block on one line
	vals := make([]cty.Value, len(cmd))
	for i, s := range cmd {
		vals[i] = cty.StringVal(s)
	}
	blk.Body().SetAttributeValue("command", cty.ListVal(vals))
	// cmd is [binary, marker, socket, id]: the socket and id change with
	// every process.
	return append(secrets, pass, cmd[2], cmd[3]), nil
}

// envRef reports the variable NAME of an attribute written env.NAME.
func envRef(a *hclwrite.Attribute) (string, bool) {
	expr, d := hclsyntax.ParseExpression(a.Expr().BuildTokens(nil).Bytes(), "", hcl.InitialPos)
	if d.HasErrors() {
		return "", false
	}
	st, ok := expr.(*hclsyntax.ScopeTraversalExpr)
	if !ok || st.Traversal.RootName() != "env" || len(st.Traversal) != 2 {
		return "", false
	}
	step, ok := st.Traversal[1].(hcl.TraverseAttr)
	if !ok || strings.TrimSpace(step.Name) == "" {
		return "", false
	}
	return step.Name, true
}
