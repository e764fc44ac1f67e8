package localcloud

import (
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// haproxyCommand sends one command to an HAProxy CLI socket.
func haproxyCommand(socket, cmd string) (string, error) {
	conn, err := net.DialTimeout("unix", socket, 3*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, cmd+"; quit\n"); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	return string(b), err
}

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
