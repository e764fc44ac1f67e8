package localcloud

import (
	"fmt"
	"io"
	"net"
	"strconv"
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

// HAProxyReloads is how often the cloud's HAProxy has reloaded (its
// master's count in show proc).
func (c *Cloud) HAProxyReloads() (int, error) {
	out, err := haproxyCommand(c.MasterSocket, "show proc")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[1] == "master" {
			return strconv.Atoi(f[2])
		}
	}
	return 0, fmt.Errorf("HAProxy master CLI %s: show proc has no master line: %q", c.MasterSocket, out)
}
