package workspace

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tfccm/tfccm/workspace/backends"
)

// httpStateServer is a real `http` state backend requiring basic auth.
type httpStateServer struct {
	mu       sync.Mutex
	states   map[string][]byte
	password string
	denied   int
}

func (s *httpStateServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if u, p, ok := r.BasicAuth(); !ok || u != "tfccm" || p != s.password {
		s.mu.Lock()
		s.denied++
		s.mu.Unlock()
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		b, ok := s.states[r.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		_, _ = w.Write(b)
	case http.MethodPost:
		b, _ := io.ReadAll(r.Body)
		s.states[r.URL.Path] = b
	case http.MethodDelete:
		delete(s.states, r.URL.Path)
	default:
		http.Error(w, "unsupported", http.StatusMethodNotAllowed)
	}
}

// TestSecretBackendSettingsStayOffDisk: a secret backend setting the
// backend can read from its environment (the http backend's password)
// reaches every tofu process but is never written anywhere under the work
// dir (tofu records -backend-config values in .terraform/terraform.tfstate),
// through init, plan, apply and destroy, nor shown in a status.
func TestSecretBackendSettingsStayOffDisk(t *testing.T) {
	const password = "pw-9f3b1c7e-never-on-disk"
	srv := &httpStateServer{states: map[string][]byte{}, password: password}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	work := t.TempDir()
	e := newTestEngine(t, Options{WorkDir: work})
	spec := testSpec("httpstate", 7, 0)
	spec.Files["backend.tf"] = []byte("terraform {\n  backend \"http\" {\n    address  = \"" + ts.URL + "/state/httpstate\"\n    username = \"tfccm\"\n  }\n}\n")
	spec.Backend = backends.Info{Type: "http"}
	spec.BackendConfig = map[string]string{"password": password}
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	st := waitApplied(t, e, spec)
	if got := string(st.Outputs["value"]); got != "7" {
		t.Fatalf("output value = %s, want 7", got)
	}
	srv.mu.Lock()
	_, stored := srv.states["/state/httpstate"]
	srv.mu.Unlock()
	if !stored {
		t.Fatal("state was not stored in the http backend")
	}
	grepTree(t, work, password)
	if _, err := e.Destroy(spec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if st, err := e.Wait(ctx, spec.Name, spec.ContentHash()); err != nil || st.Phase != PhaseDestroyed {
		t.Fatalf("destroy: %v %+v", err, st)
	}
	grepTree(t, work, password)
	if srv.denied != 0 {
		t.Errorf("%d backend requests without the password", srv.denied)
	}
}

// grepTree fails if any file under dir contains secret.
func grepTree(t *testing.T, dir, secret string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("secret found in %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
