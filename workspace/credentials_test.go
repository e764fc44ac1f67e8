package workspace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/workspace/tofu"
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
// credentials variable gets the configured credentials it declares
// (credentials.hcl) at plan and at the
// apply of the approved saved plan; the token is in no file of the work
// dir (saved plan included, read inside its zip), no published plan and no
// state, and no var file is left behind.
func TestCredentialsAreEphemeral(t *testing.T) {
	const token = "tok-ephemeral-7f3a9c"
	work := t.TempDir()
	out := filepath.Join(t.TempDir(), "token.sha256")
	e := newTestEngine(t, Options{WorkDir: work, Review: true, Env: map[string]string{"API_TOKEN": token}})
	spec := Spec{Name: "cred", Files: map[string][]byte{
		"main.tf":            []byte(credentialsModule),
		tofu.CredentialsFile: []byte(`env = ["API_TOKEN"]` + "\n"),
		"tfccm.auto.tfvars":  fmt.Appendf(nil, "out = %q\n", out),
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

// TestCredentialsOnlyDeclared: with a cloud token in pass_env and another
// credential in env, the lbhost provider's process (a wrapper in the
// mirror records the environment it is started with, then runs the real
// provider) gets neither when its module declares none (the local set),
// and exactly the declared one when the module's credentials.hcl names it
// (the hcloud set, an override); tofu's own environment is the same.
func TestCredentialsOnlyDeclared(t *testing.T) {
	const token = "marker-hcloud-3b7e1d"
	t.Setenv("HCLOUD_TOKEN", token)
	_, plugin, cliConfig := lbhostMirror(t)
	real := filepath.Join(t.TempDir(), "terraform-provider-lbhost")
	if err := os.Rename(plugin, real); err != nil {
		t.Fatal(err)
	}
	dumps := t.TempDir()
	wrapper := fmt.Sprintf("#!/bin/sh\nenv > \"%s/$PPID.env\"\nexec '%s' \"$@\"\n", dumps, real)
	if err := os.WriteFile(plugin, []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	e := newTestEngine(t, Options{CLIConfigFile: cliConfig, PassEnv: []string{"HCLOUD_TOKEN"},
		Env: map[string]string{"OTHER_CLOUD_SECRET": "marker-other-91c2"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name     string
		declared string // credentials.hcl, "" for none
		want     []string
		refused  []string
	}{
		{"none-declared", "", nil, []string{"HCLOUD_TOKEN", "OTHER_CLOUD_SECRET"}},
		{"hcloud-declared", "env = [\"HCLOUD_TOKEN\"]\n", []string{"HCLOUD_TOKEN=" + token}, []string{"OTHER_CLOUD_SECRET"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			emptyDir(t, dumps)
			extra := map[string]string{}
			if tc.declared != "" {
				extra[tofu.CredentialsFile] = tc.declared
			}
			spec := lbhostSpec(tc.name, "1", extra)
			if _, err := e.Apply(spec); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Wait(ctx, tc.name, spec.Hash); err != nil {
				t.Fatalf("apply: %v", err)
			}
			envs, _ := filepath.Glob(filepath.Join(dumps, "*.env"))
			if len(envs) == 0 {
				t.Fatal("the provider was never started")
			}
			for _, f := range envs {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				lines := strings.Split(string(b), "\n")
				for _, w := range tc.want {
					if !slices.Contains(lines, w) {
						t.Errorf("%s: the provider's environment lacks %s", filepath.Base(f), strings.SplitN(w, "=", 2)[0])
					}
				}
				for _, r := range tc.refused {
					for _, l := range lines {
						if strings.HasPrefix(l, r+"=") {
							t.Errorf("%s: the provider's environment holds %s, which its module does not declare", filepath.Base(f), r)
						}
					}
				}
			}
		})
	}
}

// emptyDir empties dir.
func emptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}
