package jobrunner

import (
	"slices"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/internal/tfenv"
)

// TestPodEnvSockets: providers in a pod put their sockets in the pod's
// private tmp, never in the directory the engine named (which exists only
// in the CCM's pod); the rest of the engine's environment travels.
func TestPodEnvSockets(t *testing.T) {
	env := podEnv(map[string]string{
		tfenv.SocketDirVar:      "/var/lib/tfccm/.plugins/r12",
		"TF_DISABLE_PLUGIN_TLS": "1",
		"TF_IN_AUTOMATION":      "1",
	}, "/work/home", "/work/tmp", "/cache")
	var dirs []string
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); k == tfenv.SocketDirVar {
			dirs = append(dirs, v)
		}
	}
	if !slices.Equal(dirs, []string{"/work/tmp"}) {
		t.Errorf("%s in the pod: %v, want only the pod's tmp", tfenv.SocketDirVar, dirs)
	}
	for _, want := range []string{"TF_DISABLE_PLUGIN_TLS=1", "TF_IN_AUTOMATION=1", "TMPDIR=/work/tmp"} {
		if !slices.Contains(env, want) {
			t.Errorf("pod environment lacks %s: %v", want, env)
		}
	}
}
