// Waiting for a test host's HAProxy, and commands on its master socket.

package hosttest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/tfccm/tfccm/internal/testkit"
)

// WaitHAProxy waits until HAProxy's master CLI at sock lists a worker:
// `haproxy -D` returns before the master has settled, and a test that
// touches the socket (or reloads) earlier races its start.
func WaitHAProxy(sock string, timeout time.Duration) error {
	return testkit.Poll(context.Background(), 50*time.Millisecond, timeout, "HAProxy master CLI "+sock+" ready", func(context.Context) error {
		out, err := masterCommand(sock, "show proc")
		if err == nil && !strings.Contains(out, "worker") {
			err = fmt.Errorf("no worker yet: %q", out)
		}
		return err
	})
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
