package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	const svc = "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  type: LoadBalancer\n"
	const node = "apiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n"
	for _, tc := range []struct {
		name, src string
		nodes     bool
		err       string // "" for success
	}{
		{"service", "# comment\n---\n" + svc, false, ""},
		{"service json", `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}}`, false, ""},
		{"two documents", svc + "---\n" + svc, false, "want exactly one Service, found 2 documents"},
		{"not a service", strings.Replace(svc, "Service", "ConfigMap", 1), false, "want a v1 Service, found v1 ConfigMap"},
		{"misspelt field", strings.Replace(svc, "type:", "tpye:", 1), false, "tpye"},
		{"nodes", strings.ReplaceAll(node, "%s", "a") + "---\n" + strings.ReplaceAll(node, "%s", "b"), true, ""},
		{"node list", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: a\n", true, ""},
		{"node twice", strings.ReplaceAll(node, "%s", "a") + "---\n" + strings.ReplaceAll(node, "%s", "a"), true, `Node "a" appears twice`},
		{"node without name", "apiVersion: v1\nkind: Node\n", true, "has no metadata.name"},
		{"not a node", svc, true, "want a v1 Node or NodeList, found v1 Service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "objects.yaml")
			if err := os.WriteFile(path, []byte(tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			var err error
			if tc.nodes {
				_, err = ReadNodes(path)
			} else {
				_, err = ReadService(path)
			}
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
		})
	}
}

func TestReadCluster(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "cluster.yaml")
	src := "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Service\n  metadata: { name: web, namespace: shop }\n  spec: { type: LoadBalancer }\n- apiVersion: v1\n  kind: Node\n  metadata: { name: a }\n---\napiVersion: v1\nkind: Node\nmetadata: { name: b }\n"
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	svcs, nodes, err := ReadCluster(p)
	if err != nil || len(svcs) != 1 || svcs[0].Name != "web" || len(nodes) != 2 || nodes[1].Name != "b" {
		t.Fatalf("ReadCluster = %v, %v, %v", svcs, nodes, err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nkind: List\nitems:\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: { name: x }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadCluster(bad); err == nil || !strings.Contains(err.Error(), "want a v1 Service or Node, found apps/v1 Deployment") {
		t.Errorf("a Deployment: %v", err)
	}
}
