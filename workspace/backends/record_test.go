package backends

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A backend record as tofu init writes one (local backend).
const adoptedRecord = `{
  "version": 3,
  "terraform_version": "1.10.6",
  "backend": {
    "type": "local",
    "config": {
      "path": "/state/a.tfstate",
      "workspace_dir": null
    },
    "hash": 2917134596
  }
}`

// TestBackendRecord: a workspace's backend record is read with its
// Settings and hash, a seeded one (hash 0) is told from one tofu adopted,
// and a missing or malformed one is an error; the record WithSettings
// makes has the new settings, hash 0 and every other field tofu wrote.
func TestBackendRecord(t *testing.T) {
	for _, tc := range []struct {
		name      string
		file      string // "" for no file
		wantErr   string // substring; "" for none
		missing   bool   // the error wraps fs.ErrNotExist
		unadopted bool
		path      string // the recorded path setting
	}{
		{name: "adopted", file: adoptedRecord, path: `"/state/a.tfstate"`},
		{name: "hash 0", file: `{"version":3,"backend":{"type":"local","config":{"path":"/state/b.tfstate"},"hash":0}}`, unadopted: true, path: `"/state/b.tfstate"`},
		{name: "no hash", file: `{"version":3,"backend":{"type":"local","config":{"path":"/state/c.tfstate"}}}`, path: `"/state/c.tfstate"`},
		{name: "no settings", file: `{"version":3,"backend":{"type":"local","hash":0}}`, unadopted: true},
		{name: "missing file", wantErr: "read the backend record", missing: true},
		{name: "malformed JSON", file: `{"backend": {"config": `, wantErr: "decode the backend record"},
		{name: "backend not an object", file: `{"backend": []}`, wantErr: "decode the backend record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.file != "" {
				if err := os.MkdirAll(filepath.Join(dir, ".terraform"), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, ".terraform", RecordFile), []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			r, err := LoadRecord(dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				if got := errors.Is(err, fs.ErrNotExist); got != tc.missing {
					t.Errorf("errors.Is(err, fs.ErrNotExist) = %v, want %v", got, tc.missing)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Unadopted(); got != tc.unadopted {
				t.Errorf("Unadopted() = %v, want %v", got, tc.unadopted)
			}
			if string(r.raw) != tc.file {
				t.Errorf("raw record %q, want the file as read", r.raw)
			}
			settings, err := r.Settings()
			if tc.path == "" {
				if err == nil {
					t.Errorf("settings() of a record without settings: %v, want an error", settings)
				}
				if _, err := r.WithSettings(nil); err == nil {
					t.Error("WithSettings of a record without settings: no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(settings["path"]); got != tc.path {
				t.Errorf("recorded path %s, want %s", got, tc.path)
			}

			// A seeded record: the new path, hash 0, the rest kept.
			b, err := r.WithSettings(map[string]json.RawMessage{"path": json.RawMessage(`"/state/new.tfstate"`)})
			if err != nil {
				t.Fatal(err)
			}
			seeded, err := ParseRecord(b)
			if err != nil {
				t.Fatalf("WithSettings wrote a record that does not decode: %v\n%s", err, b)
			}
			if !seeded.Unadopted() {
				t.Errorf("WithSettings' record is not hash 0:\n%s", b)
			}
			if got, _ := seeded.Settings(); string(got["path"]) != `"/state/new.tfstate"` {
				t.Errorf("WithSettings' record has path %s, want the new one", got["path"])
			}
			for k, v := range r.doc {
				if k != "backend" && string(seeded.doc[k]) != string(v) {
					t.Errorf("WithSettings' record has %s = %s, want %s as read", k, seeded.doc[k], v)
				}
			}
			if string(seeded.backend["type"]) != string(r.backend["type"]) || len(seeded.config) != len(r.config) {
				t.Errorf("WithSettings' record lost settings or the type:\n%s", b)
			}
			// The record read is unchanged.
			if got, _ := r.Settings(); string(got["path"]) != tc.path {
				t.Errorf("WithSettings changed the record it was made from (path %s)", got["path"])
			}
			if _, err := r.WithSettings(map[string]json.RawMessage{"bucket": json.RawMessage(`"b"`)}); err == nil {
				t.Error("WithSettings of a setting the record does not have: no error")
			}
		})
	}
}
