package templates

import (
	"bytes"
	"testing"
)

// TestBackendMatchesRender: the backend of a workspace name alone is the
// one a full render of that workspace generates.
func TestBackendMatchesRender(t *testing.T) {
	cfg := testConfig(t, baseConfig+"\nbackend \"kubernetes\" {\n  namespace = \"kube-system\"\n}\n")
	ws, err := fullSet(t).RenderLoadBalancer(cfg, svc(nil), testNodes())
	if err != nil {
		t.Fatal(err)
	}
	b, err := Backend(cfg, ws.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Files[BackendFile], ws.Files[BackendFile]) || b.StateWorkspace != ws.StateWorkspace || b.Backend.Type != "kubernetes" {
		t.Errorf("backend of %s:\n%s\nrender:\n%s", ws.Name, b.Files[BackendFile], ws.Files[BackendFile])
	}
	if got := b.Backend.Attributes["secret_suffix"].AsString(); got != ws.Name {
		t.Errorf("secret_suffix = %q, want %q", got, ws.Name)
	}
}
