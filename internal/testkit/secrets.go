package testkit

import (
	"archive/zip"
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// FindSecrets walks dir and returns "path: secret" for every file that
// holds one of secrets, reading zip archives (saved plans are) entry by
// entry as well as whole. Provider plugin binaries (under
// .terraform/providers) are skipped.
func FindSecrets(dir string, secrets ...string) ([]string, error) {
	var found []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		if strings.Contains(filepath.ToSlash(path), "/.terraform/providers/") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range SecretsIn(b, secrets...) {
			found = append(found, path+": "+s)
		}
		return nil
	})
	return found, err
}

// SecretsIn returns the secrets that data holds, whole or, for a zip
// archive, in any entry.
func SecretsIn(data []byte, secrets ...string) []string {
	parts := [][]byte{data}
	if zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data))); err == nil {
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(rc)
			rc.Close()
			parts = append(parts, b)
		}
	}
	var out []string
	for _, s := range secrets {
		for _, p := range parts {
			if bytes.Contains(p, []byte(s)) {
				out = append(out, s)
				break
			}
		}
	}
	return out
}
