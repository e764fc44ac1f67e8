package backends

// A workspace's state backend as the engine knows it: its type and the
// settings of its backend block, and where the local backend keeps state.

import (
	"path/filepath"

	"github.com/zclconf/go-cty/cty"
)

// Info is the state backend of a workspace (config.Backend). The engine
// needs it to find local state and to remove kubernetes state after a
// destroy; other backends pass through to tofu.
type Info struct {
	// Type is the backend type; "" means local.
	Type string
	// Attributes are the backend settings as written in the backend file.
	Attributes map[string]cty.Value
}

// IsLocal reports whether b is the local backend.
func (b Info) IsLocal() bool { return b.Type == "" || b.Type == "local" }

// LocalStatePath is where the local backend keeps state for dir.
func (b Info) LocalStatePath(dir string) string {
	if v, ok := b.Attributes["path"]; ok && v.IsKnown() && !v.IsNull() && v.Type().FriendlyName() == "string" {
		p := v.AsString()
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return p
	}
	return filepath.Join(dir, "terraform.tfstate")
}
