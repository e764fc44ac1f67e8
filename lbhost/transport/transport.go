// Transport, what host needs of a way to reach a host; the path check and the errors every transport reports.

package transport

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path"
	"regexp"
	"strings"
)

// Transport is one host. Paths are absolute paths on that host.
type Transport interface {
	// String names the host in error messages.
	String() string
	// ReadFile returns an error satisfying errors.Is(err, fs.ErrNotExist)
	// when the file does not exist.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// WriteFile replaces path atomically (a temporary file in the same
	// directory renamed over it), creating the directory if needed.
	WriteFile(ctx context.Context, path string, data []byte) error
	// Remove deletes path; a missing file is not an error.
	Remove(ctx context.Context, path string) error
	// ReadDir lists the names in dir (missing dir: none).
	ReadDir(ctx context.Context, dir string) ([]string, error)
	// ReadFiles returns every regular file directly in dir by name
	// (missing dir: none), in one round trip.
	ReadFiles(ctx context.Context, dir string) (map[string][]byte, error)
	// MkdirAll creates dir and its parents.
	MkdirAll(ctx context.Context, dir string) error
	// Run runs argv on the host (in the namespace, for netns) with stdin
	// and returns its stdout; the error carries stderr.
	Run(ctx context.Context, stdin []byte, argv ...string) ([]byte, error)
	// Lock takes an exclusive lock on the host (flock on path) that other
	// lbhost processes and the local cloud's scripts honour.
	Lock(ctx context.Context, path string) (unlock func(), err error)
	// DialUnix connects to a Unix socket on the host.
	DialUnix(ctx context.Context, path string) (net.Conn, error)
	Close() error
}

var rePath = regexp.MustCompile(`^/[A-Za-z0-9._/-]*$`)

// CheckPath refuses paths with anything but letters, digits, '.', '_',
// '-' and '/', and any '..' component.
func CheckPath(p string) error {
	if !rePath.MatchString(p) || path.Clean(p) != p || strings.Contains(p, "/../") || strings.HasSuffix(p, "/..") {
		return fmt.Errorf("path %q must be a clean absolute path of letters, digits, '.', '_', '-' and '/'", p)
	}
	return nil
}

// IsNotExist reports whether err means a missing file.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// UnreachableError is a host that could not be connected to at all (no
// route, refused, timed out), as opposed to one that answered wrongly
// (host key mismatch, authentication): only what was last applied is
// known about it.
type UnreachableError struct {
	Host string
	Err  error
}

func (e *UnreachableError) Error() string { return fmt.Sprintf("%s is unreachable: %v", e.Host, e.Err) }
func (e *UnreachableError) Unwrap() error { return e.Err }

// IsUnreachable reports whether err is an *UnreachableError.
func IsUnreachable(err error) bool {
	var u *UnreachableError
	return errors.As(err, &u)
}
