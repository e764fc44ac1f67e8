// What of a file or a command's output an error may quote.

package host

// What of a file or a command's output may go into an error. lbhost's
// errors reach the Service's Events and the CCM's log (through tofu), which
// a namespace tenant may read; the files lbhost reads are named by
// settings (config_dir, keepalived_config, keepalived_pid_file), so a
// file's content, or a command's echo of it, is never quoted: an error
// names the file and what was wrong with it, not what it holds.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tfccm/tfccm/lbhost/transport"
)

// ownOutput keeps, of a failed command's stderr, only the lines that name
// one of lbhost's own files (ours: paths lbhost wrote); every other line
// (keepalived -t and haproxy -c echo the lines of a configuration they
// reject, and the main configuration is named by a setting) is left out
// and counted. Any other error is returned as it is.
func ownOutput(err error, ours ...string) error {
	var re *transport.RunError
	if !errors.As(err, &re) || re.Stderr == "" {
		return err
	}
	var kept []string
	dropped := 0
	for _, line := range strings.Split(re.Stderr, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if namesOneOf(line, ours) {
			kept = append(kept, line)
		} else {
			dropped++
		}
	}
	if dropped > 0 {
		kept = append(kept, fmt.Sprintf("(%d more lines of output about files lbhost did not write are not shown)", dropped))
	}
	out := *re
	out.Stderr = strings.Join(kept, "\n")
	return &out
}

func namesOneOf(line string, paths []string) bool {
	for _, p := range paths {
		if p != "" && strings.Contains(line, p) {
			return true
		}
	}
	return false
}

// notLbhosts is the reason a file lbhost reads back is not what it wrote:
// which file, never what it holds (the parser's error quotes it).
func notLbhosts(file string) string {
	return fmt.Sprintf("%s changed outside lbhost: it is not what lbhost writes (its content is not shown)", file)
}
