// The record of the VIPs this node's agent added, kept across restarts.

package announce

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// Held is one VIP on one interface.
type Held struct {
	Interface string     `json:"interface"`
	Address   netip.Addr `json:"address"`
}

// Record is the file listing the VIPs the agent added (on the node's
// /run: a reboot clears both the file and the addresses).
type Record struct {
	path string
	mu   sync.Mutex
}

// NewRecord keeps the record in path ("" keeps none).
func NewRecord(path string) *Record { return &Record{path: path} }

// List is the recorded VIPs.
func (r *Record) List() ([]Held, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.read()
}

// Set records h as held (held) or not.
func (r *Record) Set(h Held, held bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	list, err := r.read()
	if err != nil {
		return err
	}
	i := slices.Index(list, h)
	switch {
	case held && i < 0:
		list = append(list, h)
	case !held && i >= 0:
		list = slices.Delete(list, i, i+1)
	default:
		return nil
	}
	return r.write(list)
}

func (r *Record) read() ([]Held, error) {
	if r.path == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(r.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read VIP record: %w", err)
	}
	var list []Held
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("VIP record %s: %w", r.path, err)
	}
	return list, nil
}

func (r *Record) write(list []Held) error {
	if r.path == "" {
		return nil
	}
	raw, err := json.Marshal(list)
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(r.path), "."+filepath.Base(r.path)+".tmp")
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return fmt.Errorf("write VIP record: %w", err)
	}
	if err := os.Rename(tmp, r.path); err != nil {
		return fmt.Errorf("write VIP record: %w", err)
	}
	return nil
}
