package workspace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/tfccm/tfccm/internal/fsutil"
	"github.com/tfccm/tfccm/internal/keyserver"
	"github.com/tfccm/tfccm/internal/secret"
)

// record is what the engine persists in a workspace's .tfccm directory so
// that a restarted controller knows what is already applied.
type record struct {
	// AppliedHash is the content hash last applied successfully.
	AppliedHash string `json:"applied_hash,omitempty"`
	// AppliedAt is when.
	AppliedAt time.Time `json:"applied_at,omitzero"`
	// Outputs are the non-sensitive outputs after that apply (sensitive
	// ones are stored redacted).
	Outputs map[string]json.RawMessage `json:"outputs,omitempty"`
	// InitHash is the init-relevant hash tofu init last succeeded with.
	InitHash string `json:"init_hash,omitempty"`
	// Encryption identifies the encryption configuration the state was
	// last written with (encryptionID): a new one (a rotated key) makes
	// the next apply write the state even without changes, re-encrypting it.
	Encryption string `json:"encryption,omitempty"`
	// Catalogued is the applied hash last recorded in the catalog
	// (catalog.go); a put that failed is tried again by the next run, and
	// a new work dir (a new leader) learns it from the catalog entry.
	Catalogued string `json:"catalogued,omitempty"`
}

func recordPath(dir string) string { return filepath.Join(dir, recordFile) }

func readRecord(dir string) (record, error) {
	var r record
	b, err := os.ReadFile(recordPath(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("read applied record: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		// A corrupt record only costs a re-plan.
		return record{}, nil
	}
	return r, nil
}

func writeRecord(dir string, r record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode applied record: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, metaDir), 0o700); err != nil {
		return fmt.Errorf("write applied record: %w", err)
	}
	if err := fsutil.WriteFileAtomic(recordPath(dir), b, 0o600); err != nil {
		return fmt.Errorf("write applied record: %w", err)
	}
	return nil
}

// outputMeta is one root output, as in state files and `tofu output -json`.
type outputMeta struct {
	Sensitive bool            `json:"sensitive"`
	Value     json.RawMessage `json:"value"`
}

// splitOutputs redacts sensitive outputs and returns their values (as
// strings for scrubbing) separately.
func splitOutputs(all map[string]outputMeta) (public map[string]json.RawMessage, secrets []string) {
	public = make(map[string]json.RawMessage, len(all))
	for k, o := range all {
		if o.Sensitive {
			public[k] = secret.PlaceholderJSON
			secrets = append(secrets, secret.Strings(o.Value)...)
			continue
		}
		var buf bytes.Buffer
		if json.Compact(&buf, o.Value) == nil {
			public[k] = buf.Bytes()
		} else {
			public[k] = o.Value
		}
	}
	return public, secrets
}

// localStateOutputs reads outputs straight from a local state file, which
// saves a tofu process per apply.
func localStateOutputs(path string) (map[string]outputMeta, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	o, err := stateOutputs(b)
	if errors.Is(err, errEncryptedState) {
		// Written with a tfccm_pbkdf2 key of this process: opened here,
		// without starting tofu. Anything else is left to tofu.
		if plain, derr := keyserver.DecryptState(b); derr == nil {
			return stateOutputs(plain)
		}
	}
	return o, err
}

// errEncryptedState is stateOutputs' error for a state OpenTofu encrypted.
var errEncryptedState = errors.New("the state is encrypted")

// stateOutputs reads the outputs of a plain (not encrypted) state document.
func stateOutputs(b []byte) (map[string]outputMeta, error) {
	var st struct {
		Version   int                   `json:"version"`
		Outputs   map[string]outputMeta `json:"outputs"`
		Encrypted json.RawMessage       `json:"encrypted_data"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("decode state: %w", err)
	}
	if st.Encrypted != nil {
		return nil, errEncryptedState
	}
	if st.Version != 4 {
		return nil, fmt.Errorf("state format version %d is not supported", st.Version)
	}
	if st.Outputs == nil {
		st.Outputs = map[string]outputMeta{}
	}
	return st.Outputs, nil
}

// stateResources counts the resource instances in a state document (the
// JSON of a local state file or of `tofu state pull`). An empty document
// (no state yet) has none.
func stateResources(b []byte) (int, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return 0, nil
	}
	var st struct {
		Resources []struct {
			Instances []json.RawMessage `json:"instances"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return 0, fmt.Errorf("decode state: %w", err)
	}
	n := 0
	for _, r := range st.Resources {
		n += len(r.Instances)
	}
	return n, nil
}
