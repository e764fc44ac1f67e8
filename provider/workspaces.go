package provider

import (
	"fmt"
	"os"

	"github.com/tfccm/tfccm/workspace"
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
	spec.Backend = workspace.BackendInfo{Type: b.BackendType, Attributes: b.BackendAttributes}
	spec.StateWorkspace, spec.BackendConfig = b.StateWorkspace, b.BackendConfig
	spec.Hash = spec.ContentHash()
	return spec, nil
}
