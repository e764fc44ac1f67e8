package localcloud

import (
	"fmt"
	"strings"
)

// serverStatus maps server name => status (UP, DOWN, ...) of a backend.
func serverStatus(socket, backend string) (map[string]string, error) {
	out, err := haproxyCommand(socket, "show stat")
	if err != nil {
		return nil, err
	}
	st := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, ",")
		if len(f) > 17 && f[0] == backend && f[1] != "BACKEND" && f[1] != "FRONTEND" {
			st[f[1]] = f[17]
		}
	}
	if len(st) == 0 {
		return nil, fmt.Errorf("backend %s not found", backend)
	}
	return st, nil
}
