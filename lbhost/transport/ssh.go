// The ssh transport: commands on a remote host over SSH, optionally through
// sudo.

package transport

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHConfig says how to reach a host over SSH. There is deliberately no
// field for private key material: the key comes from an agent socket or a
// key file on the machine running the provider, so it is never part of a
// Terraform configuration, plan or state.
type SSHConfig struct {
	Host string
	Port int
	User string
	// HostKey pins the host's public key ("ssh-ed25519 AAAA..."), or
	// KnownHostsFile names an OpenSSH known_hosts file. One is required:
	// host keys are never skipped.
	HostKey        string
	KnownHostsFile string
	// AgentSocket (e.g. $SSH_AUTH_SOCK) and/or PrivateKeyFile authenticate.
	AgentSocket    string
	PrivateKeyFile string
	// Sudo runs every command on the host as root through `sudo -n --`
	// (non-interactive: a missing sudoers rule fails at once, never
	// prompts): User may then be an unprivileged login with exactly the
	// rules of lbhost/hostfiles/sudoers. HAProxy's master socket is reached
	// as User itself (group access, see docs/install-baremetal.md).
	Sudo bool
}

// SudoPrefix is what a command runs behind with SSHConfig.Sudo; the
// command's own argv follows "--", so nothing of it is an option of sudo.
var SudoPrefix = []string{"sudo", "-n", "--"}

var (
	reUser = regexp.MustCompile(`^[a-z_][a-z0-9_.-]{0,31}$`)
	reHost = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.:-]{0,252}[A-Za-z0-9])?$`)
)

// SSH is a host reached over SSH. OpenSSH allows 10 sessions per
// connection (MaxSessions), and OpenTofu applies up to 10 resources at
// once: commands share maxRun session slots, and a lock path is taken by
// one goroutine of this process at a time before its (long-lived) flock
// session is opened, so lock waiters never starve the lock holder of
// sessions.
type SSH struct {
	cfg    SSHConfig
	client *ssh.Client
	slots  chan struct{}

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// maxRun is the number of concurrent command sessions (plus one flock
// session per lock path, below OpenSSH's default MaxSessions of 10).
const maxRun = 6

// HostKeyCallback returns the verifier for cfg: the pinned key or the
// known_hosts file. There is no insecure fallback.
func (cfg SSHConfig) HostKeyCallback() (ssh.HostKeyCallback, error) {
	switch {
	case cfg.HostKey != "" && cfg.KnownHostsFile != "":
		return nil, fmt.Errorf("ssh: host_key and known_hosts_file are exclusive")
	case cfg.HostKey != "":
		pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(cfg.HostKey))
		if err != nil {
			return nil, fmt.Errorf("ssh: host_key: %w", err)
		}
		want := pub.Marshal()
		return func(hostname string, _ net.Addr, key ssh.PublicKey) error {
			if !bytes.Equal(key.Marshal(), want) {
				return fmt.Errorf("host key mismatch for %s: got %s %s, pinned %s %s", hostname,
					key.Type(), ssh.FingerprintSHA256(key), pub.Type(), ssh.FingerprintSHA256(pub))
			}
			return nil
		}, nil
	case cfg.KnownHostsFile != "":
		cb, err := knownhosts.New(cfg.KnownHostsFile)
		if err != nil {
			return nil, fmt.Errorf("ssh: known_hosts_file: %w", fileError(cfg.KnownHostsFile, "an OpenSSH known_hosts file", err))
		}
		return cb, nil
	default:
		return nil, fmt.Errorf("ssh: host_key or known_hosts_file is required (host keys are always verified)")
	}
}

func (cfg SSHConfig) auth() ([]ssh.AuthMethod, func(), error) {
	var methods []ssh.AuthMethod
	cleanup := func() {}
	if cfg.AgentSocket != "" {
		conn, err := net.Dial("unix", cfg.AgentSocket)
		if err != nil {
			return nil, cleanup, fmt.Errorf("ssh: agent_socket: %w", err)
		}
		cleanup = func() { conn.Close() }
		methods = append(methods, ssh.PublicKeysCallback(agent.NewClient(conn).Signers))
	}
	if cfg.PrivateKeyFile != "" {
		pem, err := os.ReadFile(cfg.PrivateKeyFile)
		if err != nil {
			cleanup()
			return nil, func() {}, fmt.Errorf("ssh: private_key_file: %w", err)
		}
		signer, err := ssh.ParsePrivateKey(pem)
		if err != nil {
			cleanup()
			return nil, func() {}, fmt.Errorf("ssh: private_key_file: %w", fileError(cfg.PrivateKeyFile, "an unencrypted private key (PEM or OpenSSH format)", err))
		}
		methods = append(methods, ssh.PublicKeys(signer))
	}
	if len(methods) == 0 {
		return nil, cleanup, fmt.Errorf("ssh: agent_socket or private_key_file is required")
	}
	return methods, cleanup, nil
}

// fileError is the error of a file named by a setting that could not be
// used: the file system's error as it is (it names the file, never its
// content); a parse error only as what the file is not, since parsers
// quote what they read (knownhosts quotes a line's marker, ssh a PEM
// block's type) and the error reaches a Service's Events.
func fileError(path, want string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return err
	}
	return fmt.Errorf("%s is not %s (its content is not shown)", path, want)
}

// DialTimeout bounds connecting to a host, so an unreachable host fails
// an operation in seconds rather than after TCP's retries.
const DialTimeout = 10 * time.Second

// DialSSH connects and authenticates.
func DialSSH(ctx context.Context, cfg SSHConfig) (*SSH, error) {
	if cfg.Port == 0 {
		cfg.Port = 22
	}
	if !reHost.MatchString(cfg.Host) {
		return nil, fmt.Errorf("ssh: host %q is not a host name or address", cfg.Host)
	}
	if !reUser.MatchString(cfg.User) {
		return nil, fmt.Errorf("ssh: user %q is not a user name", cfg.User)
	}
	hk, err := cfg.HostKeyCallback()
	if err != nil {
		return nil, err
	}
	methods, cleanup, err := cfg.auth()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	conn, err := (&net.Dialer{Timeout: DialTimeout}).DialContext(ctx, "tcp", addr)
	if err != nil {
		cleanup()
		return nil, &UnreachableError{Host: fmt.Sprintf("ssh %s@%s", cfg.User, addr), Err: err}
	}
	_ = conn.SetDeadline(time.Now().Add(DialTimeout)) // the handshake too
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, &ssh.ClientConfig{User: cfg.User, Auth: methods, HostKeyCallback: hk})
	cleanup() // the agent is only needed for the handshake
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("ssh %s@%s: %w", cfg.User, addr, err)
	}
	_ = conn.SetDeadline(time.Time{})
	s := &SSH{cfg: cfg, client: ssh.NewClient(c, chans, reqs), slots: make(chan struct{}, maxRun), locks: map[string]*sync.Mutex{}}
	go s.keepalive(KeepaliveInterval)
	return s, nil
}

// KeepaliveInterval is how often an idle or busy connection is probed; a
// host that does not answer two probes in a row (it went away mid-apply)
// has its connection closed, so every command waiting on it fails instead
// of hanging for TCP's retransmission timeout (~15 minutes).
const KeepaliveInterval = 5 * time.Second

func (s *SSH) keepalive(every time.Duration) {
	for {
		time.Sleep(every)
		reply := make(chan error, 1)
		go func() {
			_, _, err := s.client.SendRequest("keepalive@openssh.com", true, nil)
			reply <- err
		}()
		select {
		case err := <-reply:
			if err != nil {
				return // closed
			}
		case <-time.After(2 * every):
			_ = s.client.Close()
			return
		}
	}
}

func (s *SSH) String() string {
	sudo := ""
	if s.cfg.Sudo {
		sudo = " (sudo)"
	}
	return fmt.Sprintf("ssh %s@%s%s", s.cfg.User, net.JoinHostPort(s.cfg.Host, strconv.Itoa(s.cfg.Port)), sudo)
}

// Quote makes one argv element one literal word for the remote shell
// (sshd always runs commands through the user's shell). Every element is
// single-quoted; a single quote inside becomes '\”.
func Quote(arg string) string {
	return "'" + strings.ReplaceAll(arg, "'", `'\''`) + "'"
}

// CommandLine is argv as the remote shell must see it.
func CommandLine(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}

// Run runs argv on the host (behind sudo with Sudo).
func (s *SSH) Run(ctx context.Context, stdin []byte, argv ...string) ([]byte, error) {
	return s.run(ctx, stdin, s.privileged(argv))
}

// RunAsLogin runs argv as the login user itself, never through sudo (to
// ask sudo what the login may run).
func (s *SSH) RunAsLogin(ctx context.Context, argv ...string) ([]byte, error) {
	return s.run(ctx, nil, argv)
}

func (s *SSH) run(ctx context.Context, stdin []byte, argv []string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("run: empty command")
	}
	for _, a := range argv {
		if strings.ContainsAny(a, "\x00\n") {
			return nil, fmt.Errorf("%s: refusing an argument with a NUL or newline", s)
		}
	}
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %s: %w", s, strings.Join(argv, " "), ctx.Err())
	}
	defer func() { <-s.slots }()
	sess, err := s.client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	defer sess.Close()
	var stdout, stderr bytes.Buffer
	sess.Stdout, sess.Stderr = &stdout, &stderr
	if stdin != nil {
		sess.Stdin = bytes.NewReader(stdin)
	}
	done := make(chan error, 1)
	go func() { done <- sess.Run(CommandLine(argv)) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = sess.Signal(ssh.SIGKILL)
		return nil, fmt.Errorf("%s: %s: %w", s, strings.Join(argv, " "), ctx.Err())
	}
	if err != nil {
		return stdout.Bytes(), &RunError{Host: s.String(), Argv: argv, Err: err, Stderr: strings.TrimSpace(stderr.String())}
	}
	return stdout.Bytes(), nil
}

// privileged is argv as it runs on the host: behind SudoPrefix with Sudo.
func (s *SSH) privileged(argv []string) []string {
	if !s.cfg.Sudo {
		return argv
	}
	return append(append([]string(nil), SudoPrefix...), argv...)
}

// ReadFile runs cat on the host (in the C locale, so that a missing file
// is recognised by its message).
func (s *SSH) ReadFile(ctx context.Context, path string) ([]byte, error) {
	if err := CheckPath(path); err != nil {
		return nil, err
	}
	out, err := s.Run(ctx, nil, "env", "LC_ALL=C", "cat", "--", path)
	var re *RunError
	if errors.As(err, &re) && strings.HasSuffix(re.Stderr, "No such file or directory") {
		return nil, fmt.Errorf("%s: %s: %w", s, path, fs.ErrNotExist)
	}
	return out, err
}

// writeScript is constant: the path reaches it as $1, never as code.
const writeScript = `set -e; d=$(dirname -- "$1"); mkdir -p -- "$d"; cat > "$1.lbhost-tmp"; mv -f -- "$1.lbhost-tmp" "$1"`

// WriteFile streams data to a temporary file and renames it over path,
// in one session.
func (s *SSH) WriteFile(ctx context.Context, path string, data []byte) error {
	if err := CheckPath(path); err != nil {
		return err
	}
	if _, err := s.Run(ctx, data, "sh", "-c", writeScript, "sh", path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ReadFiles fetches a directory as one tar stream.
func (s *SSH) ReadFiles(ctx context.Context, dir string) (map[string][]byte, error) {
	if err := CheckPath(dir); err != nil {
		return nil, err
	}
	out, err := s.Run(ctx, nil, "env", "LC_ALL=C", "tar", "-C", dir, "-cf", "-", ".")
	var re *RunError
	if errors.As(err, &re) && strings.Contains(re.Stderr, "No such file or directory") {
		return map[string][]byte{}, nil
	}
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: read %s: %w", s, dir, err)
		}
		name := strings.TrimPrefix(h.Name, "./")
		if h.Typeflag != tar.TypeReg || name == "" || strings.Contains(name, "/") {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: read %s: %w", s, dir, err)
		}
		files[name] = b
	}
}

// Remove deletes a file on the host.
func (s *SSH) Remove(ctx context.Context, path string) error {
	if err := CheckPath(path); err != nil {
		return err
	}
	_, err := s.Run(ctx, nil, "rm", "-f", "--", path)
	return err
}

// ReadDir lists a directory on the host.
func (s *SSH) ReadDir(ctx context.Context, dir string) ([]string, error) {
	if err := CheckPath(dir); err != nil {
		return nil, err
	}
	if _, err := s.Run(ctx, nil, "test", "-d", dir); err != nil {
		return nil, nil
	}
	out, err := s.Run(ctx, nil, "ls", "-1A", "--", dir)
	if err != nil {
		return nil, err
	}
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if sc.Text() != "" {
			names = append(names, sc.Text())
		}
	}
	return names, nil
}

// MkdirAll creates a directory on the host.
func (s *SSH) MkdirAll(ctx context.Context, dir string) error {
	if err := CheckPath(dir); err != nil {
		return err
	}
	_, err := s.Run(ctx, nil, "mkdir", "-p", "--", dir)
	return err
}

// lockScript is a constant; the lock path reaches flock as its own
// argument, so nothing user-supplied is part of the script.
const lockScript = "echo locked; exec cat >/dev/null"

// Lock holds flock(1) on path in a session that lives until unlock (or
// until the connection drops, which releases the lock on the host).
func (s *SSH) Lock(ctx context.Context, path string) (func(), error) {
	if err := CheckPath(path); err != nil {
		return nil, err
	}
	s.mu.Lock()
	local := s.locks[path]
	if local == nil {
		local = &sync.Mutex{}
		s.locks[path] = local
	}
	s.mu.Unlock()
	if !tryLock(ctx, local) {
		return nil, fmt.Errorf("%s: lock %s: %w", s, path, ctx.Err())
	}
	unlock, err := s.remoteLock(ctx, path)
	if err != nil {
		local.Unlock()
		return nil, err
	}
	return func() { unlock(); local.Unlock() }, nil
}

// tryLock takes m unless ctx ends first.
func tryLock(ctx context.Context, m *sync.Mutex) bool {
	for !m.TryLock() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true
}

// remoteLock holds flock(1) on the host.
func (s *SSH) remoteLock(ctx context.Context, path string) (func(), error) {
	sess, err := s.client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("%s: lock %s: %w", s, path, err)
	}
	stdin, err := sess.StdinPipe()
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("%s: lock %s: %w", s, path, err)
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("%s: lock %s: %w", s, path, err)
	}
	if err := sess.Start(CommandLine(s.privileged([]string{"flock", "-w", "300", path, "sh", "-c", lockScript}))); err != nil {
		sess.Close()
		return nil, fmt.Errorf("%s: lock %s: %w", s, path, err)
	}
	got := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err == nil && line != "locked\n" {
			err = fmt.Errorf("unexpected %q", line)
		}
		got <- err
	}()
	select {
	case err = <-got:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("%s: lock %s: %w", s, path, err)
	}
	return func() {
		stdin.Close()
		_ = sess.Wait()
		sess.Close()
	}, nil
}

// DialUnix connects to a Unix socket on the host (OpenSSH streamlocal).
func (s *SSH) DialUnix(_ context.Context, path string) (net.Conn, error) {
	if err := CheckPath(path); err != nil {
		return nil, err
	}
	c, err := s.client.Dial("unix", path)
	if err != nil {
		return nil, fmt.Errorf("%s: dial %s: %w", s, path, err)
	}
	return c, nil
}

// Close ends the connection.
func (s *SSH) Close() error { return s.client.Close() }

// Fingerprint is the SHA256 fingerprint of an authorized_keys-format key.
func Fingerprint(authorizedKey string) (string, error) {
	pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(authorizedKey))
	if err != nil {
		return "", err
	}
	return ssh.FingerprintSHA256(pub), nil
}
