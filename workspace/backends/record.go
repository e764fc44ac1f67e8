package backends

// tofu's backend record in a workspace's .terraform: reading it, its
// settings, and a record made from it with other settings (the prepared
// .terraform a new workspace starts from).

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
)

// RecordFile is tofu's backend record in a workspace's .terraform:
// the backend init configured, its recorded settings and tofu's hash of
// them.
const RecordFile = "terraform.tfstate"

// Record is a decoded backend record. The whole document is kept
// (doc, backend) so that a record made from it (WithSettings) carries every
// field tofu wrote, also those tfccm does not read.
type Record struct {
	// raw is the record as read.
	raw []byte
	// config is the recorded settings, each as tofu wrote its JSON value
	// (nil when the record has none).
	config map[string]json.RawMessage
	// hash is tofu's hash of the settings (nil when the record has none);
	// 0 is what WithSettings writes, which tofu replaces once it adopts
	// the record.
	hash *uint64

	doc     map[string]json.RawMessage
	backend map[string]json.RawMessage
}

// LoadRecord reads the backend record of the workspace in dir
// (an error wrapping fs.ErrNotExist when init has not written one).
func LoadRecord(dir string) (*Record, error) {
	b, err := os.ReadFile(filepath.Join(dir, ".terraform", RecordFile))
	if err != nil {
		return nil, fmt.Errorf("read the backend record: %w", err)
	}
	return ParseRecord(b)
}

// ParseRecord decodes a backend record's JSON.
func ParseRecord(b []byte) (*Record, error) {
	r := &Record{raw: b}
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

// Raw is the record as read.
func (r *Record) Raw() []byte { return r.raw }

// Settings is the recorded settings, an error when the record has none.
func (r *Record) Settings() (map[string]json.RawMessage, error) {
	if r.config == nil {
		return nil, errors.New("the backend record has no settings")
	}
	return r.config, nil
}

// Unadopted reports whether tofu never adopted the record: its hash is
// still the 0 WithSettings wrote.
func (r *Record) Unadopted() bool { return r.hash != nil && *r.hash == 0 }

// WithSettings is the record with values replacing recorded settings and
// hash 0: tofu compares the recorded settings with the configuration when
// their hash differs, and records its own hash when they are equal. Every
// value must name a setting the record has.
func (r *Record) WithSettings(values map[string]json.RawMessage) ([]byte, error) {
	config, err := r.Settings()
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
