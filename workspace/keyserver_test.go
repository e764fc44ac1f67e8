package workspace

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/internal/keyserver"
	"github.com/tfccm/tfccm/test/devcluster"
)

// keyServerModule is encModule whose local-exec also copies the arguments
// and environment of every process of the machine into dump (tofu's own
// environment, which its providers inherit, included) while tofu runs.
const keyServerModule = `variable "n" {
  type = number
}

resource "terraform_data" "k" {
  input = sensitive("known-${var.n}-plaintext")
  provisioner "local-exec" {
    command     = <<-SH
      mkdir -p "$DUMP/$N" && env > "$DUMP/$N/local-exec.env"
      for p in /proc/[0-9]*; do
        i=$${p#/proc/}
        cat "$p/cmdline" > "$DUMP/$N/$i.cmdline" 2>/dev/null
        cat "$p/environ" > "$DUMP/$N/$i.environ" 2>/dev/null
      done
      true
    SH
    environment = { DUMP = %q, N = var.n }
  }
}

output "n" {
  value = var.n
}
`

// keyServerConfig parses a cloud config whose encryption block is body,
// with the process's key server replaced by srv (a controller process).
func keyServerConfig(t *testing.T, srv *keyserver.Server, body string) *config.Encryption {
	t.Helper()
	restore := keyserver.Swap(srv)
	defer restore()
	c, err := config.Parse([]byte("cluster_name = \"enc\"\nencryption {\n"+body+"}\n"), "cloud.hcl")
	if err != nil {
		t.Fatal(err)
	}
	return c.Encryption
}

func newKeyServer(t *testing.T) *keyserver.Server {
	t.Helper()
	s, err := keyserver.New(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

const tfccmKeyBody = `  key_provider "tfccm_pbkdf2" "main" {
    passphrase = env.TFCCM_TEST_KEYSERVER_PASSPHRASE
  }
  method "aes_gcm" "main" {
    keys = key_provider.tfccm_pbkdf2.main
  }
  state {
    method   = method.aes_gcm.main
    enforced = true
  }
  plan {
    method   = method.aes_gcm.main
    enforced = true
  }
`

// TestTfccmKeyProvider: with key_provider "tfccm_pbkdf2", real tofu
// encrypts the state (the Secret holds ciphertext, the external key
// provider's metadata) with keys the controller derived once; the
// passphrase is in no process's arguments or environment while tofu runs
// (tofu's, which its providers inherit, included), in no file of the work
// dir and no error; a restarted controller (a new key server: another
// salt, an empty cache) reads and rewrites the state; a wrong passphrase
// fails the run naming the decryption and changes nothing; a state
// encrypted by OpenTofu's pbkdf2 migrates through fallback.
func TestTfccmKeyProvider(t *testing.T) {
	c := devcluster.ForTest(t)
	kube := c.Client()
	ctx := context.Background()
	dump := t.TempDir()
	rnd := make([]byte, 12)
	_, _ = rand.Read(rnd)
	pass := "kspass-" + hex.EncodeToString(rnd)
	t.Setenv("TFCCM_TEST_KEYSERVER_PASSPHRASE", pass)

	spec := func(n int, suffix string, enc *config.Encryption) Spec {
		backend := string(kubernetesBackendFile(suffix, c.Kubeconfig()))
		backend = strings.TrimSuffix(strings.TrimSpace(backend), "}") + "  encryption {\n" + string(enc.Public) + "  }\n}\n"
		s := Spec{Name: "kenc-" + suffix, Files: map[string][]byte{
			"main.tf":           fmt.Appendf(nil, keyServerModule, dump),
			"backend.tf":        []byte(backend),
			"tfccm.auto.tfvars": fmt.Appendf(nil, "n = %d\n", n),
		}, Backend: kubernetesBackendInfo(suffix, c.Kubeconfig())}
		s.Hash = s.ContentHash()
		return s
	}
	stateSecret := func(suffix string) (string, string) {
		t.Helper()
		s, err := kube.CoreV1().Secrets("default").Get(ctx, "tfstate-default-"+suffix, metav1.GetOptions{})
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
	ciphertext := func(what, suffix, known string) {
		t.Helper()
		st, _ := stateSecret(suffix)
		if strings.Contains(st, known) || !strings.Contains(st, "encrypted_data") || !strings.Contains(st, "key_provider.external.main") {
			t.Errorf("%s: the state Secret is not ciphertext of the external key provider:\n%.400s", what, st)
		}
	}
	nowhere := func(what string, dirs ...string) {
		t.Helper()
		for _, dir := range dirs {
			_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				if strings.HasPrefix(p, dump) {
					// The test process's own dump is its environment.
					if pid, _, _ := strings.Cut(filepath.Base(p), "."); pid == strconv.Itoa(os.Getpid()) {
						return nil
					}
				}
				if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(pass)) {
					t.Errorf("%s: %s holds the passphrase", what, p)
				}
				return nil
			})
		}
	}
	apply := func(e *Engine, s Spec) (Status, error) {
		t.Helper()
		if _, err := e.Apply(s); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		return e.Wait(wctx, s.Name, s.Hash)
	}

	// A controller: apply, the state is ciphertext, one derivation.
	srv1 := newKeyServer(t)
	enc1 := keyServerConfig(t, srv1, tfccmKeyBody)
	if strings.Contains(enc1.Source, pass) {
		t.Errorf("TF_ENCRYPTION holds the passphrase:\n%s", enc1.Source)
	}
	work1 := t.TempDir()
	e1, stop1 := stoppableEngine(t, Options{WorkDir: work1, Encryption: enc1.Source, EncryptionSecrets: enc1.Secrets})
	if st, err := apply(e1, spec(1, "kenc", enc1)); err != nil || string(st.Outputs["n"]) != "1" {
		t.Fatalf("apply: %v, outputs %v", err, st.Outputs)
	}
	ciphertext("after apply", "kenc", "known-1-plaintext")
	if n := srv1.Derivations(); n != 1 {
		t.Errorf("%d key derivations for init, plan and apply, want 1", n)
	}
	if env, err := os.ReadFile(filepath.Join(dump, "1", "local-exec.env")); err != nil || !bytes.Contains(env, []byte("TF_ENCRYPTION=")) {
		t.Errorf("no dump of tofu's environment (%v): the scan below would prove nothing", err)
	}
	nowhere("controller 1", work1, dump)
	stop1()

	// A restarted controller, empty work dir: reads the state (the first
	// salt), writes it with its own.
	srv2 := newKeyServer(t)
	enc2 := keyServerConfig(t, srv2, tfccmKeyBody)
	work2 := t.TempDir()
	e2, stop2 := stoppableEngine(t, Options{WorkDir: work2, Encryption: enc2.Source, EncryptionSecrets: enc2.Secrets})
	if st, err := apply(e2, spec(2, "kenc", enc2)); err != nil || string(st.Outputs["n"]) != "2" {
		t.Fatalf("apply after a restart: %v, outputs %v", err, st.Outputs)
	}
	ciphertext("after the restart", "kenc", "known-2-plaintext")
	if n := srv2.Derivations(); n != 2 {
		t.Errorf("%d key derivations after the restart, want 2 (its own salt, the state's)", n)
	}
	nowhere("controller 2", work2, dump)
	stop2()

	// A wrong passphrase: fails naming the decryption, changes nothing.
	_, before := stateSecret("kenc")
	t.Setenv("TFCCM_TEST_KEYSERVER_PASSPHRASE", "not-the-passphrase-0000")
	srv3 := newKeyServer(t)
	enc3 := keyServerConfig(t, srv3, tfccmKeyBody)
	t.Setenv("TFCCM_TEST_KEYSERVER_PASSPHRASE", pass)
	e3, stop3 := stoppableEngine(t, Options{WorkDir: t.TempDir(), Encryption: enc3.Source, EncryptionSecrets: enc3.Secrets})
	st, err := apply(e3, spec(3, "kenc", enc3))
	if err == nil || st.Phase != PhaseFailed || !strings.Contains(err.Error(), "decryption failed") {
		t.Fatalf("wrong passphrase: %+v, %v; want a failure naming the decryption", st, err)
	}
	if strings.Contains(err.Error(), "not-the-passphrase") {
		t.Errorf("the error shows the passphrase: %v", err)
	}
	if _, after := stateSecret("kenc"); after != before {
		t.Errorf("a run with the wrong passphrase changed the state Secret (%s -> %s)", before, after)
	}
	stop3()

	// Migration: a state OpenTofu's pbkdf2 "main" encrypted is read through
	// the fallback and written with the key server's key; the key server's
	// key alone then reads it.
	oldEnv, oldPublic := encryption([2]string{"main", pass})
	e4, stop4 := stoppableEngine(t, Options{WorkDir: t.TempDir(), Encryption: oldEnv, EncryptionSecrets: []string{pass}})
	if _, err := apply(e4, spec(1, "kmig", &config.Encryption{Public: []byte(oldPublic)})); err != nil {
		t.Fatal(err)
	}
	stop4()
	if st, _ := stateSecret("kmig"); !strings.Contains(st, "key_provider.pbkdf2.main") {
		t.Fatalf("the state to migrate is not pbkdf2's:\n%.300s", st)
	}
	srv5 := newKeyServer(t)
	enc5 := keyServerConfig(t, srv5, `  key_provider "pbkdf2" "main" {
    passphrase = env.TFCCM_TEST_KEYSERVER_PASSPHRASE
  }
  key_provider "tfccm_pbkdf2" "main" {
    passphrase = env.TFCCM_TEST_KEYSERVER_PASSPHRASE
  }
  method "aes_gcm" "old" {
    keys = key_provider.pbkdf2.main
  }
  method "aes_gcm" "main" {
    keys = key_provider.tfccm_pbkdf2.main
  }
  state {
    method   = method.aes_gcm.main
    enforced = true
    fallback {
      method = method.aes_gcm.old
    }
  }
  plan {
    method   = method.aes_gcm.main
    enforced = true
    fallback {
      method = method.aes_gcm.old
    }
  }
`)
	e5, stop5 := stoppableEngine(t, Options{WorkDir: t.TempDir(), Encryption: enc5.Source, EncryptionSecrets: enc5.Secrets})
	if _, err := apply(e5, spec(1, "kmig", enc5)); err != nil {
		t.Fatalf("migration apply: %v", err)
	}
	stop5()
	if st, _ := stateSecret("kmig"); strings.Contains(st, "key_provider.pbkdf2.main") || !strings.Contains(st, "key_provider.external.main") {
		t.Errorf("after the migration's apply the state is not the key server's:\n%.300s", st)
	}
	srv6 := newKeyServer(t)
	enc6 := keyServerConfig(t, srv6, tfccmKeyBody)
	e6, _ := stoppableEngine(t, Options{WorkDir: t.TempDir(), Encryption: enc6.Source, EncryptionSecrets: enc6.Secrets})
	if st, err := apply(e6, spec(2, "kmig", enc6)); err != nil || string(st.Outputs["n"]) != "2" {
		t.Fatalf("the key server's key alone after the migration: %v, outputs %v", err, st.Outputs)
	}
}
