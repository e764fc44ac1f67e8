package workspace

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/internal/testkit"
)

// credentialsModule hands the ephemeral credentials to a provisioner,
// which records a hash of the token (proof that it arrived).
const credentialsModule = `variable "credentials" {
  type      = map(string)
  ephemeral = true
}

variable "out" {
  type = string
}

resource "terraform_data" "a" {
  input = "x"
  provisioner "local-exec" {
    command     = "printf %s \"$TOKEN\" | sha256sum | cut -d' ' -f1 > \"$OUT\""
    environment = { TOKEN = var.credentials["API_TOKEN"], OUT = var.out }
  }
}
`

// TestCredentialsAreEphemeral: a template that declares the ephemeral
// credentials variable gets the configured credentials at plan and at the
// apply of the approved saved plan; the token is in no file of the work
// dir (saved plan included, read inside its zip), no published plan and no
// state, and no var file is left behind.
func TestCredentialsAreEphemeral(t *testing.T) {
	const token = "tok-ephemeral-7f3a9c"
	work := t.TempDir()
	out := filepath.Join(t.TempDir(), "token.sha256")
	e := newTestEngine(t, Options{WorkDir: work, Review: true, Env: map[string]string{"API_TOKEN": token}})
	spec := Spec{Name: "cred", Files: map[string][]byte{
		"main.tf":           []byte(credentialsModule),
		"tfccm.auto.tfvars": fmt.Appendf(nil, "out = %q\n", out),
	}}
	spec.Hash = spec.ContentHash()
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	p := awaitPlan(t, e, spec)
	if strings.Contains(p.Text, token) || bytes.Contains(p.JSON, []byte(token)) {
		t.Fatal("the published plan holds the token")
	}
	noTokenUnder(t, work, token)
	if err := e.Approve("cred", p.Hash); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e, spec)
	sum := sha256.Sum256([]byte(token))
	if got, _ := os.ReadFile(out); strings.TrimSpace(string(got)) != hex.EncodeToString(sum[:]) {
		t.Fatalf("the provisioner got a token hashing to %q: the credentials did not arrive at apply", got)
	}
	noTokenUnder(t, work, token)
	if left, _ := filepath.Glob(filepath.Join(work, ".secrets", "*")); len(left) != 0 {
		t.Errorf("var files left: %v", left)
	}
}

// noTokenUnder fails if any file under dir holds token.
func noTokenUnder(t *testing.T, dir, token string) {
	t.Helper()
	found, err := testkit.FindSecrets(dir, token)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: the token is kept", f)
	}
}
