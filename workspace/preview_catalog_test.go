package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/secret"
	"github.com/tfccm/tfccm/workspace/backends"
)

// TestPreviewCatalogEntryErrors: without a catalog (the local backend)
// the reader says so; a backend that fails is an error naming the
// backend type and the tofu step, with the backend's secret settings
// and the environment's secrets scrubbed even when tofu quotes them.
func TestPreviewCatalogEntryErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, ok, err := PreviewCatalogEntry(ctx, PreviewOptions{}, nil, "bgp-peering", t.TempDir()); ok || !errors.Is(err, ErrNoCatalog) {
		t.Errorf("no catalog: ok %v, err %v; want ErrNoCatalog", ok, err)
	}

	const connStr, token = "postgres://tfccm:hunter2-conn@127.0.0.1:1/tfccm", "env-token-5f4e3d"
	// tofu that fails init quoting both secrets, as a chatty backend might.
	dir := t.TempDir()
	bin := filepath.Join(dir, "tofu")
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = init ]; then echo \"Error: cannot reach %s as %s\" >&2; exit 1; fi\nexec '%s' \"$@\"\n", connStr, token, repo.Tofu(t))
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	catalog := &Spec{Name: backends.CatalogName, Files: map[string][]byte{"tfccm_backend.tf": []byte("terraform {\n  backend \"pg\" {\n    schema_name = \"tfccm_tfccm_catalog\"\n  }\n}\n")},
		Backend: backends.Info{Type: "pg"}, BackendConfig: map[string]string{"conn_str": connStr}}
	o := PreviewOptions{Binary: bin, Env: map[string]string{"HCLOUD_TOKEN": token}, Scrub: secret.NewScrubber([]string{token})}
	_, ok, err := PreviewCatalogEntry(ctx, o, catalog, "bgp-peering", filepath.Join(dir, "catalog"))
	if err == nil || ok {
		t.Fatalf("ok %v, err %v; want the init's failure", ok, err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "pg backend: tofu init") || !strings.Contains(msg, "cannot reach") {
		t.Errorf("error %q does not name the backend and the step", msg)
	}
	if strings.Contains(msg, "hunter2-conn") || strings.Contains(msg, token) {
		t.Errorf("error quotes a secret: %q", msg)
	}
}
