package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tfccm/tfccm/internal/fsutil"
)

// ProbeSpec reads a read-only root module rendered whole, with no
// workspace of its own (a template set's hosts health module: one probe
// for many load balancers), as Probe reads a workspace's health module:
// one refresh-only apply in a copy under the work dir's probes
// (<work dir>/.probes/<spec.Name>/module), within the engine's budget of
// tofu processes, never touching any state. spec's files are the module
// and its inputs; the copy keeps tofu's own files (.terraform, the lock
// file) between probes, so only its first probe runs init.
func (e *Engine) ProbeSpec(ctx context.Context, spec *Spec) (map[string]json.RawMessage, error) {
	if !validName(spec.Name) {
		return nil, fmt.Errorf("probe: invalid name %q", spec.Name)
	}
	dir := filepath.Join(e.opts.WorkDir, probesDir, spec.Name, "module")
	mu, _ := probes.LoadOrStore(dir, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if err := e.budget.acquireProbe(ctx, e.queue.Len, probeMaxWait); err != nil {
		return nil, fmt.Errorf("probe %s: %w", spec.Name, err)
	}
	defer e.budget.release()
	if err := syncProbeFiles(spec.Files, dir); err != nil {
		return nil, fmt.Errorf("probe %s: %w", spec.Name, err)
	}
	return e.probeRun(ctx, dir, dir)
}

// syncProbeFiles makes dir hold exactly files (slash-separated relative
// paths), writing only what changed; dot files, tofu's own, stay.
func syncProbeFiles(files map[string][]byte, dir string) error {
	for rel, data := range files {
		if !fs.ValidPath(rel) || strings.HasPrefix(filepath.Base(rel), ".") {
			return fmt.Errorf("file %q: not a module file", rel)
		}
		dst := filepath.Join(dir, filepath.FromSlash(rel))
		if cur, err := os.ReadFile(dst); err == nil && bytes.Equal(cur, data) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return err
		}
		if err := fsutil.WriteFileAtomic(dst, data, 0o600); err != nil {
			return err
		}
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if _, ok := files[filepath.ToSlash(rel)]; !ok && !d.IsDir() && rel != probeStateFile {
			return os.Remove(p)
		}
		return nil
	})
}
