package backends

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/zclconf/go-cty/cty"
	"k8s.io/client-go/kubernetes"
)

func kubernetesBackendInfo(suffix, kubeconfig string) Info {
	return Info{Type: "kubernetes", Attributes: map[string]cty.Value{
		"secret_suffix": cty.StringVal(suffix), "config_path": cty.StringVal(kubeconfig), "namespace": cty.StringVal("default"),
	}}
}

func testKubeconfig(t *testing.T, dir, name, server string) string {
	t.Helper()
	doc := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "` + server + `"}
users:
- name: u
  user: {token: t}
contexts:
- name: one
  context: {cluster: c, user: u}
- name: two
  context: {cluster: c, user: u, namespace: other}
current-context: one
`
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBackendClientPerConnection: workspaces of one backend connection
// share one client; another kubeconfig, context or kubeconfig content
// gets a new one; the cache stays bounded and serves concurrent callers.
func TestBackendClientPerConnection(t *testing.T) {
	dir := t.TempDir()
	first := testKubeconfig(t, dir, "first", "https://127.0.0.1:6443")
	second := testKubeconfig(t, dir, "second", "https://127.0.0.1:6443")
	backend := func(suffix, path, context string) Info {
		b := kubernetesBackendInfo(suffix, path)
		if context != "" {
			b.Attributes["config_context"] = cty.StringVal(context)
		}
		return b
	}
	client := func(b Info) kubernetes.Interface {
		t.Helper()
		c, _, _, err := kubernetesBackendClient(b)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	a := client(backend("a", first, ""))
	for _, tc := range []struct {
		name string
		b    Info
		same bool
	}{
		{"same settings", backend("a", first, ""), true},
		{"another workspace of the backend", backend("b", first, ""), true},
		{"another namespace", func() Info {
			b := backend("a", first, "")
			b.Attributes["namespace"] = cty.StringVal("other")
			return b
		}(), true},
		{"another kubeconfig", backend("a", second, ""), false},
		{"another context", backend("a", first, "two"), false},
	} {
		if got := client(tc.b); (got == a) != tc.same {
			t.Errorf("%s: same client = %v, want %v", tc.name, got == a, tc.same)
		}
	}

	// New credentials at the same path: a new client.
	testKubeconfig(t, dir, "first", "https://127.0.0.2:6443")
	if client(backend("a", first, "")) == a {
		t.Error("the kubeconfig changed, the client did not")
	}

	// Bounded: past max, an old connection is dropped.
	cache := &clientCache{max: 2}
	for i := range 5 {
		p := testKubeconfig(t, dir, fmt.Sprint("k", i), fmt.Sprintf("https://127.0.0.%d:6443", i+1))
		if _, err := cache.get(backendConnection{Path: p}); err != nil {
			t.Fatal(err)
		}
		if len(cache.clients) > cache.max {
			t.Fatalf("%d clients cached, want at most %d", len(cache.clients), cache.max)
		}
	}

	// Concurrent callers of one connection get one client.
	cache = &clientCache{max: 2}
	var wg sync.WaitGroup
	got := make([]kubernetes.Interface, 8)
	for i := range got {
		wg.Go(func() {
			c, err := cache.get(backendConnection{Path: second, Context: "two"})
			if err != nil {
				t.Error(err)
			}
			got[i] = c
		})
	}
	wg.Wait()
	for i, c := range got {
		if c == nil || c != got[0] {
			t.Errorf("caller %d got another client", i)
		}
	}

	// A kubeconfig that cannot be read is an error, not a cached client.
	if _, err := cache.get(backendConnection{Path: filepath.Join(dir, "none")}); err == nil {
		t.Error("a missing kubeconfig gave a client")
	}
}
