package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
)

// backendRecordFile is tofu's backend record in a workspace's .terraform:
// the backend init configured, its recorded settings and tofu's hash of
// them.
const backendRecordFile = "terraform.tfstate"

// backendRecord is a decoded backend record. The whole document is kept
// (doc, backend) so that a record made from it (withSettings) carries every
// field tofu wrote, also those tfccm does not read.
type backendRecord struct {
	// raw is the record as read.
	raw []byte
	// config is the recorded settings, each as tofu wrote its JSON value
	// (nil when the record has none).
	config map[string]json.RawMessage
	// hash is tofu's hash of the settings (nil when the record has none);
	// 0 is what withSettings writes, which tofu replaces once it adopts
	// the record.
	hash *uint64

	doc     map[string]json.RawMessage
	backend map[string]json.RawMessage
}

// loadBackendRecord reads the backend record of the workspace in dir
// (an error wrapping fs.ErrNotExist when init has not written one).
func loadBackendRecord(dir string) (*backendRecord, error) {
	b, err := os.ReadFile(filepath.Join(dir, ".terraform", backendRecordFile))
	if err != nil {
		return nil, fmt.Errorf("read the backend record: %w", err)
	}
	return parseBackendRecord(b)
}

// parseBackendRecord decodes a backend record's JSON.
func parseBackendRecord(b []byte) (*backendRecord, error) {
	r := &backendRecord{raw: b}
	if err := json.Unmarshal(b, &r.doc); err != nil {
		return nil, fmt.Errorf("decode the backend record: %w", err)
	}
	if raw, ok := r.doc["backend"]; ok {
		if err := json.Unmarshal(raw, &r.backend); err != nil {
			return nil, fmt.Errorf("decode the backend record: %w", err)
		}
	}
	if raw, ok := r.backend["config"]; ok {
		if err := json.Unmarshal(raw, &r.config); err != nil {
			return nil, fmt.Errorf("decode the backend record's settings: %w", err)
		}
	}
	if raw, ok := r.backend["hash"]; ok {
		if err := json.Unmarshal(raw, &r.hash); err != nil {
			return nil, fmt.Errorf("decode the backend record's hash: %w", err)
		}
	}
	return r, nil
}

// settings is the recorded settings, an error when the record has none.
func (r *backendRecord) settings() (map[string]json.RawMessage, error) {
	if r.config == nil {
		return nil, errors.New("the backend record has no settings")
	}
	return r.config, nil
}

// unadopted reports whether tofu never adopted the record: its hash is
// still the 0 withSettings wrote.
func (r *backendRecord) unadopted() bool { return r.hash != nil && *r.hash == 0 }

// withSettings is the record with values replacing recorded settings and
// hash 0: tofu compares the recorded settings with the configuration when
// their hash differs, and records its own hash when they are equal. Every
// value must name a setting the record has.
func (r *backendRecord) withSettings(values map[string]json.RawMessage) ([]byte, error) {
	config, err := r.settings()
	if err != nil {
		return nil, err
	}
	config = maps.Clone(config)
	for k, v := range values {
		if _, ok := config[k]; !ok {
			return nil, fmt.Errorf("backend setting %s is not in the backend record", k)
		}
		config[k] = v
	}
	backend := maps.Clone(r.backend)
	if backend["config"], err = json.Marshal(config); err != nil {
		return nil, err
	}
	backend["hash"] = json.RawMessage("0")
	doc := maps.Clone(r.doc)
	if doc["backend"], err = json.Marshal(backend); err != nil {
		return nil, err
	}
	return json.MarshalIndent(doc, "", "  ")
}
