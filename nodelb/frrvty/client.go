// The client: one connection to one daemon, one command at a time.

package frrvty

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// DefaultDir is where FRR's daemons put their vty sockets.
const DefaultDir = "/var/run/frr"

// Return codes of FRR's commands (lib/command.h's CMD_*), as the daemon
// sends them after a command's output.
const (
	CodeSuccess        = 0
	CodeWarning        = 1
	CodeNoMatch        = 2
	CodeAmbiguous      = 3
	CodeIncomplete     = 4
	CodeConfigFailed   = 13
	codeNothingToDo    = 6
	codeSuccessDaemon  = 10
	codeSuccessNoSpace = 14
)

// CommandError is a command the daemon refused: its return code and
// what it printed.
type CommandError struct {
	Daemon, Command string
	Code            byte
	Output          string
}

func (e *CommandError) Error() string {
	out := strings.TrimSpace(e.Output)
	if out == "" {
		out = codeText(e.Code)
	}
	return fmt.Sprintf("%s: %q: %s (code %d)", e.Daemon, e.Command, out, e.Code)
}

func codeText(c byte) string {
	switch c {
	case CodeWarning:
		return "warning"
	case CodeNoMatch:
		return "unknown command"
	case CodeAmbiguous:
		return "ambiguous command"
	case CodeIncomplete:
		return "incomplete command"
	case CodeConfigFailed:
		return "configuration failed"
	}
	return "failed"
}

// Conn is one connection to one daemon's vty socket.
type Conn struct {
	Daemon string
	mu     sync.Mutex
	c      net.Conn
	r      *bufio.Reader
	// Timeout bounds one command (default 10 s).
	Timeout time.Duration
}

// Dial connects to daemon's socket (e.g. "bgpd") in dir (DefaultDir when
// empty). The connection starts in the daemon's view node: Enable and
// Configure move it on.
func Dial(ctx context.Context, dir, daemon string) (*Conn, error) {
	if dir == "" {
		dir = DefaultDir
	}
	path := filepath.Join(dir, daemon+".vty")
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &Conn{Daemon: daemon, c: c, r: bufio.NewReader(c), Timeout: 10 * time.Second}, nil
}

// Close closes the connection (the daemon leaves any node it was in).
func (c *Conn) Close() error { return c.c.Close() }

// Run sends one command and returns its output; a refused command is a
// *CommandError.
func (c *Conn) Run(cmd string) (string, error) {
	if strings.ContainsAny(cmd, "\x00\n\r") {
		return "", fmt.Errorf("%s: command %q has a NUL or line break", c.Daemon, cmd)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.c.SetDeadline(time.Now().Add(c.Timeout)); err != nil {
		return "", err
	}
	if _, err := c.c.Write(append([]byte(cmd), 0)); err != nil {
		return "", fmt.Errorf("%s: sending %q: %w", c.Daemon, cmd, err)
	}
	out, code, err := readReply(c.r)
	if err != nil {
		return "", fmt.Errorf("%s: reading the answer to %q: %w", c.Daemon, cmd, err)
	}
	switch code {
	case CodeSuccess, codeNothingToDo, codeSuccessDaemon, codeSuccessNoSpace:
		return out, nil
	}
	return out, &CommandError{Daemon: c.Daemon, Command: cmd, Code: code, Output: out}
}

// RunAll runs cmds in order, stopping at the first error.
func (c *Conn) RunAll(cmds ...string) error {
	for _, cmd := range cmds {
		if _, err := c.Run(cmd); err != nil {
			return err
		}
	}
	return nil
}

// readReply reads one answer: output up to three NULs, then the code.
func readReply(r *bufio.Reader) (string, byte, error) {
	var out bytes.Buffer
	zeros := 0
	for {
		b, err := r.ReadByte()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return "", 0, err
			}
			return "", 0, err
		}
		if zeros == 3 {
			return out.String(), b, nil
		}
		if b == 0 {
			zeros++
			continue
		}
		// NULs inside output (none in practice) are kept.
		for ; zeros > 0; zeros-- {
			out.WriteByte(0)
		}
		out.WriteByte(b)
	}
}
