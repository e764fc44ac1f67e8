// The netns transport: commands in a network namespace of this machine.

package transport

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

var reNetns = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

// Netns is the local machine with commands run inside network namespace
// Name (ip netns exec). Files and sockets are the local machine's.
type Netns struct {
	Name string
}

// NewNetns checks the namespace name and that it exists.
func NewNetns(name string) (*Netns, error) {
	if !reNetns.MatchString(name) {
		return nil, fmt.Errorf("netns %q: not a valid namespace name", name)
	}
	if _, err := os.Stat(filepath.Join("/run/netns", name)); err != nil {
		return nil, fmt.Errorf("netns %q does not exist: %w", name, err)
	}
	return &Netns{Name: name}, nil
}

func (n *Netns) String() string { return "netns " + n.Name }

// ReadFile reads a local file.
func (n *Netns) ReadFile(_ context.Context, path string) ([]byte, error) {
	if err := CheckPath(path); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}

// WriteFile writes a temporary file next to path and renames it over path.
func (n *Netns) WriteFile(_ context.Context, path string, data []byte) error {
	if err := CheckPath(path); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".lbhost-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Remove deletes a local file.
func (n *Netns) Remove(_ context.Context, path string) error {
	if err := CheckPath(path); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// ReadDir lists a local directory.
func (n *Netns) ReadDir(_ context.Context, dir string) ([]string, error) {
	if err := CheckPath(dir); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names, nil
}

// ReadFiles reads every regular file in a local directory.
func (n *Netns) ReadFiles(ctx context.Context, dir string) (map[string][]byte, error) {
	names, err := n.ReadDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, name := range names {
		p := filepath.Join(dir, name)
		if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue // removed meanwhile
		}
		out[name] = b
	}
	return out, nil
}

// MkdirAll creates a local directory.
func (n *Netns) MkdirAll(_ context.Context, dir string) error {
	if err := CheckPath(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("mkdir %s: %w", dir, err)
	}
	return nil
}

// Run runs argv inside the namespace.
func (n *Netns) Run(ctx context.Context, stdin []byte, argv ...string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("run: empty command")
	}
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.Name}, argv...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &RunError{Host: n.String(), Argv: argv, Err: err, Stderr: strings.TrimSpace(stderr.String())}
	}
	return stdout.Bytes(), nil
}

// Lock takes flock(LOCK_EX) on a local file, polling until ctx ends.
func (n *Netns) Lock(ctx context.Context, path string) (func(), error) {
	if err := CheckPath(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// DialUnix connects to a local Unix socket.
func (n *Netns) DialUnix(ctx context.Context, path string) (net.Conn, error) {
	if err := CheckPath(path); err != nil {
		return nil, err
	}
	return (&net.Dialer{}).DialContext(ctx, "unix", path)
}

// Close does nothing for the local machine.
func (n *Netns) Close() error { return nil }

// RunError is a failed command on a host.
type RunError struct {
	Host   string
	Argv   []string
	Err    error
	Stderr string
}

func (e *RunError) Error() string {
	msg := fmt.Sprintf("%s: %s: %v", e.Host, strings.Join(e.Argv, " "), e.Err)
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

func (e *RunError) Unwrap() error { return e.Err }
