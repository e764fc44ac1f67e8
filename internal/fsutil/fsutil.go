// Package fsutil holds the one way tfccm writes files it must never leave
// half-written (workspace files, the engine's records).
package fsutil

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic writes data to a temporary file next to name and renames
// it into place, creating name's directory if needed, so a crash never
// leaves a half-written file. A file that already has exactly this content
// and mode is not touched (its mtime stays).
func WriteFileAtomic(name string, data []byte, mode fs.FileMode) error {
	if cur, err := os.ReadFile(name); err == nil && bytes.Equal(cur, data) {
		if st, err := os.Stat(name); err == nil && st.Mode().Perm() == mode {
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), ".tmp-"+filepath.Base(name)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}
