package instances

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/test/devcluster"
)

// TestKubernetesBackendSource: the infrastructure's state lives encrypted
// in the kubernetes backend of a real apiserver; the source is a directory
// holding only that backend block (as the chart mounts it from a
// ConfigMap), never initialized: it is read through the backend with the
// cloud config's encryption and no provider plugin.
func TestKubernetesBackendSource(t *testing.T) {
	c := devcluster.ForTest(t)
	backend := fmt.Sprintf(`terraform {
  backend "kubernetes" {
    secret_suffix = "infra-src"
    namespace     = "default"
    config_path   = %q
  }
}
`, c.Kubeconfig())
	const key = `key_provider "pbkdf2" "k" {
  passphrase = "kubernetes-source-passphrase"
}
method "aes_gcm" "m" {
  keys = key_provider.pbkdf2.k
}
state {
  method   = method.aes_gcm.m
  enforced = true
}
`
	// The infrastructure, applied through that backend.
	inf := newInfra(t)
	if err := os.WriteFile(filepath.Join(inf.dir, "backend.tf"), []byte(backend), 0o644); err != nil {
		t.Fatal(err)
	}
	env, _, err := Env(&config.Terraform{Encryption: &config.Encryption{Source: key}})
	if err != nil {
		t.Fatal(err)
	}
	if err := inf.tf.SetEnv(env); err != nil {
		t.Fatal(err)
	}
	if err := inf.tf.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	inf.apply(twoNodes())
	sec, err := c.Client().CoreV1().Secrets("default").Get(context.Background(), "tfstate-default-infra-src", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sec.Data["tfstate"]) == 0 {
		t.Fatal("no state in the backend's Secret")
	}

	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "backend.tf"), []byte(backend), 0o644); err != nil {
		t.Fatal(err)
	}
	tfc := tfConfig(t)
	tfc.Encryption = &config.Encryption{Source: key, Secrets: []string{"kubernetes-source-passphrase"}}
	s, err := newDirSource("k8s", src, tfc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	st, err := s.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ix := BuildIndex(localMapping(t), st)
	if n := ix.Len(); n != 2 {
		t.Fatalf("%d instances, want 2", n)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("the source directory was written to: %v", entries)
	}

	// Without the key: an error naming the encryption.
	_, err = func() (*TofuSource, error) {
		s2, err := newDirSource("k8s-nokey", src, tfConfig(t))
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = s2.Close() })
		_, err = s2.Read(context.Background())
		return s2, err
	}()
	if err == nil || !strings.Contains(err.Error(), "encrypted") {
		t.Errorf("read without the key: %v, want an error naming the encryption", err)
	}
}
