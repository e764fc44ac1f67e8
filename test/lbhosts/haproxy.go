package lbhosts

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"time"
)

// WaitHAProxy waits until HAProxy's master CLI at sock lists a worker:
// `haproxy -D` returns before the master has settled, and a test that
// touches the socket (or reloads) earlier races its start.
func WaitHAProxy(sock string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		out, err := masterCommand(sock, "show proc")
		if err == nil && strings.Contains(out, "worker") {
			return nil
		}
		last = err
		if err == nil {
			last = fmt.Errorf("no worker yet: %q", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("HAProxy master CLI %s not ready after %s: %v", sock, timeout, last)
}

func masterCommand(sock, cmd string) (string, error) {
	conn, err := net.DialTimeout("unix", sock, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := fmt.Fprintln(conn, cmd); err != nil {
		return "", err
	}
	var b strings.Builder
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return b.String(), nil
}
