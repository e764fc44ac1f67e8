package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/tfccm/tfccm/test/backends"
	ws "github.com/tfccm/tfccm/workspace/backends"
	"github.com/tfccm/tfccm/workspace/locks"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// backendFixture is a state backend of a real server for one test: the
// settings of its backend block per workspace key and the secret ones
// tfccm passes to tofu apart (Spec.BackendConfig). JSON, so that the
// crash helper process gets it too (crashBackendEnv).
type backendFixture struct {
	Type     string            `json:"type"`
	Settings map[string]string `json:"settings"`
	// KeyAttr is the setting that keeps workspaces apart; KeyFormat makes
	// its value from the key (fmt, one %s).
	KeyAttr   string                       `json:"key_attr"`
	KeyFormat string                       `json:"key_format"`
	Objects   map[string]map[string]string `json:"objects,omitempty"` // object-valued settings (s3's endpoints)
	Secrets   map[string]string            `json:"secrets"`
}

// file is the workspace's backend file for key, with the encryption
// configuration public (encryption() in encryption_test.go) when set.
func (f backendFixture) file(key, public string) []byte {
	hf := hclwrite.NewEmptyFile()
	tb := hf.Body().AppendNewBlock("terraform", nil).Body()
	b := tb.AppendNewBlock("backend", []string{f.Type}).Body()
	for k, v := range f.Settings {
		b.SetAttributeValue(k, cty.StringVal(v))
	}
	for k, obj := range f.Objects {
		attrs := map[string]cty.Value{}
		for a, v := range obj {
			attrs[a] = cty.StringVal(v)
		}
		b.SetAttributeValue(k, cty.ObjectVal(attrs))
	}
	b.SetAttributeValue(f.KeyAttr, cty.StringVal(fmt.Sprintf(f.KeyFormat, key)))
	out := hf.Bytes()
	if public != "" {
		s := strings.TrimSuffix(strings.TrimSpace(string(out)), "}")
		out = []byte(s + "  encryption {\n" + public + "  }\n}\n")
	}
	return out
}

// set makes spec keep its state in the fixture's backend under key.
func (f backendFixture) set(spec *Spec, key string) {
	spec.Files["backend.tf"] = f.file(key, "")
	spec.Backend = ws.Info{Type: f.Type, Attributes: map[string]cty.Value{f.KeyAttr: cty.StringVal(fmt.Sprintf(f.KeyFormat, key))}}
	spec.BackendConfig = f.Secrets
	spec.Hash = ""
}

// realBackend is a backend fixture with a reader of what its server
// stores for a key (the raw bytes, not through tofu) and how its lock
// behaves when tofu is killed.
type realBackend struct {
	name    string
	fixture backendFixture
	raw     func(t *testing.T, key string) string
	// rawEntry reads what the server stores for Terraform workspace ws
	// under key (the catalog's entries).
	rawEntry func(t *testing.T, key, ws string) string
	// lockOutlivesTofu: the lock is an object tofu must remove (s3's lock
	// file); pg's advisory lock goes with tofu's connection.
	lockOutlivesTofu bool
	// lockNamesHolder: a held lock's info is the holder's (s3), not the
	// asking run's own (pg).
	lockNamesHolder bool
}

func pgBackend(t *testing.T) realBackend {
	pg := backends.StartPostgres(t)
	return realBackend{
		name: "pg",
		fixture: backendFixture{Type: "pg", KeyAttr: "schema_name", KeyFormat: "tfccm_%s",
			Secrets: map[string]string{"conn_str": pg.ConnStr}},
		raw: func(t *testing.T, key string) string {
			return pg.States(t, "tfccm_"+key)["default"]
		},
		rawEntry: func(t *testing.T, key, ws string) string {
			return pg.States(t, "tfccm_"+key)[ws]
		},
	}
}

func s3Backend(t *testing.T) realBackend {
	s3 := backends.StartS3(t)
	return realBackend{
		name: "s3",
		fixture: backendFixture{Type: "s3", KeyAttr: "key", KeyFormat: "tfccm/%s.tfstate",
			Settings: s3.Settings(), Objects: map[string]map[string]string{"endpoints": {"s3": s3.Endpoint}},
			Secrets: s3.Secrets()},
		raw: func(t *testing.T, key string) string {
			return s3.Object(t, "tfccm/"+key+".tfstate")
		},
		rawEntry: func(t *testing.T, key, ws string) string {
			return s3.Object(t, "env:/"+ws+"/tfccm/"+key+".tfstate")
		},
		lockOutlivesTofu: true,
		lockNamesHolder:  true,
	}
}

// TestRealBackends runs the engine against the pg and s3 backends of real
// servers (Debian's PostgreSQL, SeaweedFS's S3 gateway): one workspace is
// never applied by two runs at once, a run killed mid-apply is followed
// by one that finishes with no manual unlock, and with encryption the
// stored state is ciphertext.
func TestRealBackends(t *testing.T) {
	for name, start := range map[string]func(*testing.T) realBackend{"pg": pgBackend, "s3": s3Backend} {
		t.Run(name, func(t *testing.T) {
			b := start(t)
			t.Run("locking", func(t *testing.T) { testBackendLocking(t, b) })
			t.Run("kill9", func(t *testing.T) { testBackendKill9(t, b) })
			t.Run("encryption", func(t *testing.T) { testBackendEncryption(t, b) })
			t.Run("catalog", func(t *testing.T) { testBackendCatalog(t, b) })
		})
	}
}

// testBackendLocking: a second controller (another work dir: a second
// replica, or one whose work dir was lost) asked to apply the workspace
// while the first one is applying it is refused by the backend's lock,
// names the holder, and takes nothing over.
func testBackendLocking(t *testing.T, b realBackend) {
	work1, work2 := t.TempDir(), t.TempDir()
	hold := filepath.Join(work1, "hold")
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	spec := func(n int) Spec {
		s := Spec{Name: "locked", Files: map[string][]byte{"main.tf": []byte(leakModule), "tfccm.auto.tfvars": []byte(fmt.Sprintf("n = %d\n", n))}}
		b.fixture.set(&s, "locked")
		s.Hash = s.ContentHash()
		return s
	}
	e1, _ := stoppableEngine(t, Options{WorkDir: work1})
	s1 := spec(1)
	if _, err := e1.Apply(s1); err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(work1, "locked", "applied.log.start")
	waitFile(t, started)

	e2, _ := stoppableEngine(t, Options{WorkDir: work2, Backoff: Backoff{Initial: time.Hour}})
	s2 := spec(2)
	if _, err := e2.Apply(s2); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := e2.Wait(ctx, s2.Name, s2.Hash)
	if !errors.Is(err, tofu.ErrLocked) || !strings.Contains(err.Error(), locks.TofuWho()) {
		t.Fatalf("second controller: %+v, %v; want tofu.ErrLocked naming the holder", st, err)
	}
	// pg's advisory lock cannot tell who holds it: tofu reports the
	// asking run's own lock info (Plan); s3's lock file names the apply.
	if b.lockNamesHolder && !strings.Contains(err.Error(), "Apply") {
		t.Fatalf("second controller: %v; want the holder's operation (Apply)", err)
	}
	if exists(filepath.Join(work2, "locked", "applied.log.start")) {
		t.Fatal("the second controller applied while the first held the lock")
	}
	if err := os.Remove(hold); err != nil {
		t.Fatal(err)
	}
	if st := waitApplied(t, e1, s1); string(st.Outputs["value"]) != "1" {
		t.Fatalf("the lock holder's apply: %+v", st)
	}
}

// testBackendKill9: the controller is SIGKILLed while tofu applies; the
// next one (same work dir) applies with no manual unlock.
func testBackendKill9(t *testing.T, b realBackend) {
	fixture, err := json.Marshal(b.fixture)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(crashBackendEnv, string(fixture))
	work := t.TempDir()
	killMidApply(t, work, "")
	if exists(filepath.Join(work, "crash", "applied.log")) {
		t.Fatal("the apply finished before the kill; the test proves nothing")
	}
	bin, calls := countingBinary(t)
	e, _ := stoppableEngine(t, Options{WorkDir: work, Binary: bin})
	spec := crashSpec("")
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	if st := waitApplied(t, e, spec); string(st.Outputs["value"]) != "1" {
		t.Fatalf("outputs after recovery: %v", st.Outputs)
	}
	want := 0
	if b.lockOutlivesTofu {
		want = 1 // the engine's own stale lock (its claim names it)
	}
	if got := calls(); count(got, "force-unlock") != want || count(got, "apply") != 1 {
		t.Fatalf("recovery ran %v; want %d force-unlock and 1 apply", got, want)
	}
	if raw := b.raw(t, "crash"); !strings.Contains(raw, `"value"`) {
		t.Fatalf("the backend's state after recovery has no outputs:\n%.400s", raw)
	}
}

// testBackendEncryption: with OpenTofu's encryption the state the server
// stores is ciphertext; the work dir holds no plaintext either.
func testBackendEncryption(t *testing.T, b realBackend) {
	key := [2]string{"k", "backend-passphrase-0123456789"}
	env, public := encryption(key)
	work := t.TempDir()
	e, _ := stoppableEngine(t, Options{WorkDir: work, Encryption: env, EncryptionSecrets: []string{key[1]}})
	s := Spec{Name: "enc", Files: map[string][]byte{
		"main.tf":           []byte(encModule),
		"tfccm.auto.tfvars": []byte("n = 7\n"),
	}}
	b.fixture.set(&s, "enc")
	s.Files["backend.tf"] = b.fixture.file("enc", public)
	s.Hash = s.ContentHash()
	if _, err := e.Apply(s); err != nil {
		t.Fatal(err)
	}
	if st := waitApplied(t, e, s); string(st.Outputs["n"]) != "7" {
		t.Fatalf("outputs %v", st.Outputs)
	}
	raw := b.raw(t, "enc")
	if !strings.Contains(raw, "encrypted_data") || strings.Contains(raw, "known-7-plaintext") {
		t.Errorf("the %s server stores the state in plaintext:\n%.300s", b.name, raw)
	}
	_ = filepath.WalkDir(work, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if c, err := os.ReadFile(p); err == nil && bytes.Contains(c, []byte("known-7-plaintext")) {
				t.Errorf("%s holds the state's value in plaintext", p)
			}
		}
		return err
	})
}

// testBackendCatalog: a workspace applied with an owner is listed from the
// backend by a controller whose work dir is empty, with its owner and
// last applied files; the entry the server stores is ciphertext; that
// controller destroys the workspace from the entry alone, which removes
// the entry.
func testBackendCatalog(t *testing.T, b realBackend) {
	ctx := context.Background()
	key := [2]string{"c", "catalog-passphrase-0123456789"}
	env, public := encryption(key)
	cat := &Spec{Name: ws.CatalogName, Files: map[string][]byte{"backend.tf": b.fixture.file("catalog", public)},
		Backend: ws.Info{Type: b.fixture.Type}, BackendConfig: b.fixture.Secrets}
	opts := func() Options {
		return Options{WorkDir: t.TempDir(), Encryption: env, EncryptionSecrets: []string{key[1]}, Catalog: cat}
	}
	spec := testSpec("lb-orphan", 5, 0)
	b.fixture.set(&spec, "lb_orphan")
	spec.Files["backend.tf"] = b.fixture.file("lb_orphan", public)
	spec.Owner = &Owner{Namespace: "default", Name: "web", UID: "3f9c0d6e-owner-uid"}
	spec.Hash = spec.ContentHash()
	e1, stop1 := stoppableEngine(t, opts())
	if _, err := e1.Apply(spec); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e1, spec)
	stop1()

	e2, _ := stoppableEngine(t, opts())
	names, err := e2.Catalogued(ctx)
	if err != nil || len(names) != 1 || names[0] != "lb-orphan" {
		t.Fatalf("catalog lists %v, %v; want [lb-orphan]", names, err)
	}
	entry, err := e2.CatalogEntry(ctx, "lb-orphan")
	if err != nil {
		t.Fatal(err)
	}
	if entry.Owner != *spec.Owner || entry.Hash != spec.Hash || !bytes.Equal(entry.Files["main.tf"], spec.Files["main.tf"]) {
		t.Fatalf("catalog entry %+v does not match the applied workspace", entry)
	}
	raw := b.rawEntry(t, "catalog", "lb-orphan")
	if !strings.Contains(raw, "encrypted_data") || strings.Contains(raw, spec.Owner.UID) || strings.Contains(raw, "terraform_data") {
		t.Errorf("the %s server stores the catalog entry in plaintext:\n%.300s", b.name, raw)
	}

	orphan := entry.Spec()
	b.fixture.set(&orphan, "lb_orphan")
	orphan.Files["backend.tf"] = entry.Files["backend.tf"]
	orphan.Hash = orphan.ContentHash()
	if _, err := e2.Destroy(orphan); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if st, err := e2.Wait(wctx, orphan.Name, orphan.Hash); err != nil || st.Phase != PhaseDestroyed {
		t.Fatalf("destroy from the catalog entry: %+v, %v", st, err)
	}
	if names, err := e2.Catalogued(ctx); err != nil || len(names) != 0 {
		t.Fatalf("catalog after the destroy lists %v, %v; want none", names, err)
	}
}

func waitFile(t *testing.T, p string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !exists(p) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", p)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
