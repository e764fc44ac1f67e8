package tfenv

import (
	"fmt"
	"os"
	"syscall"
)

// Provider plugin sockets without mTLS.
//
// tofu starts a provider process for each provider it loads: for its
// schema, again to validate, again to plan or apply. Each start, go-plugin
// makes a client and a server certificate (automatic mTLS) so that no
// other local process can talk to the provider's unix socket. tfccm gets
// the same protection from the file system instead: the sockets live in a
// directory only the controller's user may enter, and a process of that
// user could read the certificates from the provider's environment
// anyway. What is saved is the certificates' CPU time on every provider
// start (terraform.provider_mtls keeps them).

// SocketDirVar is go-plugin's variable naming the directory a provider
// creates its unix socket in.
const SocketDirVar = "PLUGIN_UNIX_SOCKET_DIR"

// MaxRunDir is the longest name of a subdirectory of the socket
// directory a caller may give each command (its providers' sockets then
// go with the command).
const MaxRunDir = 12

// maxSocketDir is the longest socket directory whose sockets' paths fit
// a unix socket address (107 bytes on Linux), with a subdirectory of up
// to MaxRunDir bytes: go-plugin names a socket "plugin" and ten digits.
const maxSocketDir = 107 - len("/plugin") - 10 - 1 - MaxRunDir

// PluginSocketDir makes dir, or when its path is too long for a unix
// socket a new directory under the system's temporary directory, a
// directory of this user's with mode 0700, and returns it. A dir that is
// a symbolic link or belongs to another user is an error.
func PluginSocketDir(dir string) (string, error) {
	if len(dir) > maxSocketDir {
		d, err := os.MkdirTemp("", "tfccm-plugins-")
		if err != nil {
			return "", fmt.Errorf("provider socket directory: %w", err)
		}
		return d, nil
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return "", fmt.Errorf("provider socket directory: %w", err)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("provider socket directory: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	switch {
	case !st.IsDir():
		return "", fmt.Errorf("provider socket directory %s is not a directory", dir)
	case !ok || int(sys.Uid) != os.Geteuid():
		return "", fmt.Errorf("provider socket directory %s belongs to another user", dir)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", fmt.Errorf("provider socket directory: %w", err)
	}
	return dir, nil
}
