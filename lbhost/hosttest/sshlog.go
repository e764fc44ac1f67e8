// Counting a host's SSH logins.

package hosttest

import (
	"bytes"
	"os"
	"path/filepath"
)

// SSHLogins counts the logins the host's sshd accepted so far (its log's
// "Accepted " lines): one per connection a transport opens.
func (h *Host) SSHLogins() (int, error) {
	data, err := os.ReadFile(filepath.Join(h.dir, "sshd.log"))
	if err != nil {
		return 0, err
	}
	return bytes.Count(data, []byte("Accepted ")), nil
}
