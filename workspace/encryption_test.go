package workspace

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/devcluster"
)

// encModule computes its known value (known-N-plaintext) from its input,
// so the value appears in no rendered file, only in state and plans; it is
// sensitive, as a secret would be, so the published plan shows it redacted.
const encModule = `variable "n" {
  type = number
}

resource "terraform_data" "k" {
  input = sensitive("known-${var.n}-plaintext")
  provisioner "local-exec" {
    command     = "echo created >> \"$LOG\""
    environment = { LOG = "${path.module}/../created.log" }
  }
}

output "n" {
  value = var.n
}
`

// encryption is a TF_ENCRYPTION value: pbkdf2 keys (name = passphrase),
// the first one encrypting, the others as fallbacks; and the part
// written into the workspace (no key providers).
func encryption(keys ...[2]string) (env, public string) {
	var kp, m strings.Builder
	for _, k := range keys {
		// OpenTofu's minimum iterations (its default is 3 times as many):
		// every tofu command derives the keys again.
		fmt.Fprintf(&kp, "key_provider \"pbkdf2\" %q {\n  passphrase = %q\n  iterations = 200000\n}\n", k[0], k[1])
		fmt.Fprintf(&m, "method \"aes_gcm\" %q {\n  keys = key_provider.pbkdf2.%s\n}\n", k[0], k[0])
	}
	target := func(kind string) string {
		s := fmt.Sprintf("%s {\n  method   = method.aes_gcm.%s\n  enforced = true\n", kind, keys[0][0])
		for _, k := range keys[1:] {
			s += fmt.Sprintf("  fallback {\n    method = method.aes_gcm.%s\n  }\n", k[0])
		}
		return s + "}\n"
	}
	public = m.String() + target("state") + target("plan")
	return kp.String() + public, public
}

func encSpec(n int, kubeconfig, public string) Spec {
	backend := string(kubernetesBackendFile("enc", kubeconfig))
	backend = strings.TrimSuffix(strings.TrimSpace(backend), "}") + "  encryption {\n" + public + "  }\n}\n"
	s := Spec{Name: "enc", Files: map[string][]byte{
		"main.tf":           []byte(encModule),
		"backend.tf":        []byte(backend),
		"tfccm.auto.tfvars": []byte(fmt.Sprintf("n = %d\n", n)),
	}, Backend: kubernetesBackendInfo("enc", kubeconfig)}
	s.Hash = s.ContentHash()
	return s
}

// stoppableEngine is newTestEngine with a stop: engines of the same
// workspace name must not run at once (each ends the tofu processes it
// finds left of its workspaces).
func stoppableEngine(t *testing.T, opts Options) (*Engine, func()) {
	t.Helper()
	if opts.Binary == "" {
		opts.Binary = repo.Tofu(t)
	}
	opts.Timeout, opts.GracePeriod = time.Minute, 10*time.Second
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.Start(ctx)
	stop := func() { cancel(); <-e.Done(); killStrays(t, opts.WorkDir) }
	t.Cleanup(stop)
	return e, stop
}

// TestEncryptionAtRest: with OpenTofu's encryption, the state Secret in the
// real apiserver and the review plan saved in the work dir hold no
// plaintext of a value only state and plans know; a wrong key fails the run
// naming the problem and changes nothing; a rotated key (the old one as
// fallback) re-encrypts the state by the next apply, replacing nothing.
func TestEncryptionAtRest(t *testing.T) {
	c := devcluster.ForTest(t)
	kube := c.Client()
	ctx := context.Background()
	work := t.TempDir()
	oldKey := [2]string{"old", "old-passphrase-0123456789"}
	newKey := [2]string{"new", "new-passphrase-9876543210"}
	oldEnv, oldPublic := encryption(oldKey)

	stateSecret := func() (string, string) {
		t.Helper()
		s, err := kube.CoreV1().Secrets("default").Get(ctx, "tfstate-default-enc", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(s.Data["tfstate"]))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return string(b), s.ResourceVersion
	}
	noPlaintext := func(what, known string) {
		t.Helper()
		st, _ := stateSecret()
		if strings.Contains(st, known) || !strings.Contains(st, "encrypted_data") {
			t.Errorf("%s: the state Secret is not ciphertext:\n%.300s", what, st)
		}
		_ = filepath.WalkDir(work, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(known)) {
				t.Errorf("%s: %s holds %q in plaintext", what, p, known)
			}
			return nil
		})
	}
	created := func() string {
		b, _ := os.ReadFile(filepath.Join(work, "created.log"))
		return string(b)
	}

	// Apply: the state Secret is ciphertext.
	e1, stop1 := stoppableEngine(t, Options{WorkDir: work, Encryption: oldEnv, EncryptionSecrets: []string{oldKey[1]}})
	s1 := encSpec(1, c.Kubeconfig(), oldPublic)
	if _, err := e1.Apply(s1); err != nil {
		t.Fatal(err)
	}
	if st := waitApplied(t, e1, s1); string(st.Outputs["n"]) != "1" {
		t.Fatalf("outputs %v", st.Outputs)
	}
	noPlaintext("after apply", "known-1-plaintext")
	stop1()

	// Review mode: the saved plan is ciphertext too.
	e2, stop2 := stoppableEngine(t, Options{WorkDir: t.TempDir(), Review: true, Encryption: oldEnv})
	s2 := encSpec(2, c.Kubeconfig(), oldPublic)
	if _, err := e2.Apply(s2); err != nil {
		t.Fatal(err)
	}
	awaitPlan(t, e2, s2)
	work2 := e2.opts.WorkDir
	plan, err := os.ReadFile(filepath.Join(work2, "enc", planFile))
	if err != nil {
		t.Fatalf("no saved plan: %v", err)
	}
	if bytes.Contains(plan, []byte("known-2-plaintext")) {
		t.Error("the saved plan holds the planned value in plaintext")
	}
	_ = filepath.WalkDir(work2, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte("known-2-plaintext")) {
				t.Errorf("review: %s holds the planned value in plaintext", p)
			}
		}
		return err
	})

	stop2()

	// A wrong key: the run fails naming the problem; nothing changes.
	_, before := stateSecret()
	wrongEnv, _ := encryption([2]string{"old", "not-the-passphrase-000000"})
	e3, stop3 := stoppableEngine(t, Options{WorkDir: t.TempDir(), Encryption: wrongEnv})
	s3 := encSpec(3, c.Kubeconfig(), oldPublic)
	if _, err := e3.Apply(s3); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	st, err := e3.Wait(wctx, s3.Name, s3.Hash)
	if err == nil || st.Phase != PhaseFailed || !strings.Contains(err.Error(), "decryption failed") {
		t.Fatalf("wrong key: %+v, %v; want a failure naming the decryption", st, err)
	}
	if strings.Contains(err.Error(), "not-the-passphrase") {
		t.Errorf("the error shows the key: %v", err)
	}
	if _, after := stateSecret(); after != before {
		t.Errorf("a run with the wrong key changed the state Secret (%s -> %s)", before, after)
	}

	stop3()

	// Rotation: the new key encrypts, the old one is the fallback; the next
	// apply re-encrypts and replaces nothing; the new key alone then reads it.
	rotEnv, rotPublic := encryption(newKey, oldKey)
	work4 := work
	e4, _ := stoppableEngine(t, Options{WorkDir: work4, Encryption: rotEnv})
	s4 := encSpec(1, c.Kubeconfig(), rotPublic)
	if _, err := e4.Apply(s4); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e4, s4)
	if got := created(); got != "created\n" {
		t.Errorf("rotation replaced the resource (created.log %q)", got)
	}
	newEnv, _ := encryption(newKey)
	if out := statePull(t, c.Kubeconfig(), newEnv); !strings.Contains(out, "known-1-plaintext") {
		t.Errorf("the new key alone cannot read the state after the rotation's apply:\n%s", out)
	}
	noPlaintext("after rotation", "known-1-plaintext")
}

// statePull reads the enc workspace's state through the kubernetes backend
// with the encryption configuration env, from a scratch directory.
func statePull(t *testing.T, kubeconfig, env string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "backend.tf"), kubernetesBackendFile("enc", kubeconfig), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		cmd := exec.Command(repo.Tofu(t), args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TF_ENCRYPTION="+env, "TF_CLI_CONFIG_FILE=/dev/null", "CHECKPOINT_DISABLE=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Sprintf("tofu %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := run("init", "-input=false", "-no-color"); strings.Contains(out, "tofu [init") {
		return out
	}
	return run("state", "pull")
}
