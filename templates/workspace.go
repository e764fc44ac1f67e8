package templates

import (
	"io/fs"

	"github.com/zclconf/go-cty/cty"

	"github.com/tfccm/tfccm/workspace"
)

// rendered is a render's workspace with the typed inputs written to its
// tfvars file (tests compare the two).
type rendered struct {
	*workspace.Spec
	inputs map[string]cty.Value
}

func newSpec(name string) *workspace.Spec {
	return &workspace.Spec{Name: name, Files: map[string][]byte{}, Modes: map[string]fs.FileMode{}, StateWorkspace: "default"}
}

func addFile(w *workspace.Spec, p string, data []byte, exec bool) {
	w.Files[p] = data
	w.Modes[p] = 0o644
	if exec {
		w.Modes[p] = 0o755
	}
}
