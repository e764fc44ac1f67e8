package provider

import (
	"fmt"
	"os"

	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// workspaceDirExists reports whether the engine has a directory for name.
func (c *Cloud) workspaceDirExists(name string) bool {
	_, err := os.Stat(c.engine.Dir(name))
	return err == nil
}

// specFromDir rebuilds a workspace's spec from the files the engine last
// wrote for it and the backend tfccm generates for its name. It lets a
// Service whose annotations no longer render still be destroyed.
func specFromDir(c *Cloud, name string) (workspace.Spec, error) {
	spec, err := c.engine.Written(name)
	if err != nil {
		return workspace.Spec{}, err
	}
	b, err := templates.Backend(c.cfg, name)
	if err != nil {
		return workspace.Spec{}, fmt.Errorf("workspace %s: %w", name, err)
	}
	spec.Backend, spec.StateWorkspace, spec.BackendConfig = b.Backend, b.StateWorkspace, b.BackendConfig
	spec.Hash = spec.ContentHash()
	return spec, nil
}
