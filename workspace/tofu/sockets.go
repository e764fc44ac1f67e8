package tofu

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/tfccm/tfccm/internal/tfenv"
)

// Provider sockets without mTLS (Options.ProviderMTLS, tfenv.PluginSocketDir):
// each tofu command's providers put their unix sockets in a directory of
// the command's own under the engine's socket directory, removed when the
// command ends, so that a provider killed with its command leaves nothing.

// SocketDir is the providers' socket directory ("" with mTLS).
type SocketDir string

// SocketsDir is the engine's socket directory under the work dir.
const SocketsDir = ".plugins"

// CommandSockets makes the socket directory of run id's providers and
// returns the environment that names it (nil with mTLS) and what removes
// it once the command ended.
func (s SocketDir) CommandSockets(id string) (map[string]string, func()) {
	if string(s) == "" {
		return nil, func() {}
	}
	dir := filepath.Join(string(s), runDirName(id))
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		// The providers then use the engine's directory itself.
		return nil, func() {}
	}
	return map[string]string{tfenv.SocketDirVar: dir}, func() { _ = os.RemoveAll(dir) }
}

// runDirName is the name of run id's socket directory: the run's number
// (the id's last part), at most tfenv.MaxRunDir bytes.
func runDirName(id string) string {
	n := id[strings.LastIndexByte(id, ':')+1:]
	if len(n) > tfenv.MaxRunDir-1 {
		n = n[len(n)-(tfenv.MaxRunDir-1):]
	}
	return "r" + n
}

// Clear removes what an earlier incarnation's commands left in the
// socket directory (Start, once their processes are ended).
func (s SocketDir) Clear() {
	if string(s) == "" {
		return
	}
	entries, err := os.ReadDir(string(s))
	if err != nil {
		return
	}
	for _, d := range entries {
		_ = os.RemoveAll(filepath.Join(string(s), d.Name()))
	}
}
