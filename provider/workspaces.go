package provider

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tfccm/tfccm/provider/workspace"
	"github.com/tfccm/tfccm/templates"
)

// specOf turns a rendered workspace into the engine's unit of work.
func specOf(c *Cloud, ws *templates.Workspace) workspace.Spec {
	return workspace.Spec{
		Name:           ws.Name,
		Files:          ws.Files,
		Modes:          ws.Modes,
		Hash:           ws.Hash,
		Backend:        workspace.BackendInfo{Type: ws.BackendType, Attributes: ws.BackendAttributes},
		StateWorkspace: ws.StateWorkspace,
		BackendConfig:  ws.BackendConfig,
	}
}

// workspaceDirExists reports whether the engine has a directory for name.
func (c *Cloud) workspaceDirExists(name string) bool {
	_, err := os.Stat(c.engine.Dir(name))
	return err == nil
}

// specFromDir rebuilds a workspace's spec from the files last written to
// its directory (everything but Terraform's and the engine's own data). It
// lets a Service whose annotations no longer render still be destroyed.
func specFromDir(c *Cloud, name string) (workspace.Spec, error) {
	dir := c.engine.Dir(name)
	spec := workspace.Spec{
		Name:    name,
		Files:   map[string][]byte{},
		Modes:   map[string]fs.FileMode{},
		Backend: workspace.BackendInfo{Type: c.cfg.Backend.Type, Attributes: c.cfg.Backend.Attributes},
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "terraform.tfstate.d") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") || strings.Contains(d.Name(), ".tfstate") || strings.HasSuffix(d.Name(), ".tfplan") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		spec.Files[rel] = b
		spec.Modes[rel] = info.Mode().Perm()
		return nil
	})
	if err != nil {
		return workspace.Spec{}, fmt.Errorf("read workspace %s: %w", name, err)
	}
	if len(spec.Files) == 0 {
		return workspace.Spec{}, fmt.Errorf("read workspace %s: no files", name)
	}
	spec.Hash = spec.ContentHash()
	return spec, nil
}
