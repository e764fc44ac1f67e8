package keyserver

import (
	"bufio"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The derivation of the keys a process writes with: OpenTofu's pbkdf2
// defaults.
const (
	DefaultIterations = 600000
	DefaultHash       = "sha512"
	DefaultKeyLength  = 32
	saltLength        = 32
	// MinPassphrase is OpenTofu's pbkdf2 minimum passphrase length.
	MinPassphrase = 16
)

// Bounds on the metadata of a state being read (it comes from the state
// backend): a forged iteration count must not stall the server.
const (
	minIterations = 200000
	maxIterations = 10000000
	minSalt       = 16
)

var hashes = map[string]func() hash.Hash{"sha256": sha256.New, "sha512": sha512.New}

// Server serves keys derived from registered passphrases on a unix socket.
type Server struct {
	dir, socket string
	ln          *net.UnixListener
	exe         string

	mu      sync.Mutex
	keys    map[string]*key   // by id
	byPass  map[string]string // passphrase -> id
	derived map[string]*derivation

	derivations atomic.Int64 // PBKDF2 runs, for tests and the bench
}

type key struct {
	passphrase []byte
	salt       []byte // the salt this process encrypts with
}

type derivation struct {
	once sync.Once
	key  []byte
	err  error
}

// New starts a server on a socket in a new private directory under dir
// (os.TempDir() when empty). The helper command is exe (the running
// binary when empty).
func New(dir, exe string) (*Server, error) {
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("encryption key server: the running binary: %w", err)
		}
	}
	d, err := os.MkdirTemp(dir, "tfccm-keys-")
	if err != nil {
		return nil, fmt.Errorf("encryption key server: %w", err)
	}
	if err := os.Chmod(d, 0o700); err != nil {
		_ = os.RemoveAll(d)
		return nil, fmt.Errorf("encryption key server: %w", err)
	}
	s := &Server{dir: d, socket: filepath.Join(d, "k.sock"), exe: exe,
		keys: map[string]*key{}, byPass: map[string]string{}, derived: map[string]*derivation{}}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: s.socket, Net: "unix"})
	if err != nil {
		_ = os.RemoveAll(d)
		return nil, fmt.Errorf("encryption key server: %w", err)
	}
	s.ln = ln
	go s.serve()
	return s, nil
}

// Close stops the server and removes its socket.
func (s *Server) Close() error {
	err := s.ln.Close()
	_ = os.RemoveAll(s.dir)
	return err
}

// Socket is the server's socket path (not a secret).
func (s *Server) Socket() string { return s.socket }

// Derivations is how many times PBKDF2 ran.
func (s *Server) Derivations() int64 { return s.derivations.Load() }

// Register adds passphrase (the same passphrase gets the same id) and
// returns the command of OpenTofu's external key provider that answers
// with its keys: no passphrase in it. The id is random, not derived from
// the passphrase.
func (s *Server) Register(passphrase string) ([]string, error) {
	if len(passphrase) < MinPassphrase {
		return nil, fmt.Errorf("the passphrase is %d characters long, at least %d are needed", len(passphrase), MinPassphrase)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.byPass[passphrase]
	if !ok {
		b := make([]byte, 12)
		salt := make([]byte, saltLength)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("encryption key server: %w", err)
		}
		if _, err := rand.Read(salt); err != nil {
			return nil, fmt.Errorf("encryption key server: %w", err)
		}
		id = hex.EncodeToString(b)
		s.keys[id] = &key{passphrase: []byte(passphrase), salt: salt}
		s.byPass[passphrase] = id
	}
	return []string{s.exe, Marker, s.socket, id}, nil
}

func (s *Server) serve() {
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			return
		}
		go s.handle(c)
	}
}

func (s *Server) handle(c *net.UnixConn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
	var resp response
	if err := checkPeer(c); err != nil {
		resp.Error = err.Error()
	} else {
		var req request
		line, err := bufio.NewReader(c).ReadBytes('\n')
		if err == nil {
			err = json.Unmarshal(line, &req)
		}
		if err != nil {
			resp.Error = fmt.Sprintf("bad request: %v", err)
		} else if out, err := s.answer(req); err != nil {
			resp.Error = err.Error()
		} else {
			resp.Output = out
		}
	}
	b, _ := json.Marshal(resp)
	_, _ = c.Write(append(b, '\n'))
}

// checkPeer refuses a caller of another uid than the server's.
func checkPeer(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("peer credentials: %w", err)
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return fmt.Errorf("peer credentials: %w", err)
	}
	if cerr != nil {
		return fmt.Errorf("peer credentials: %w", cerr)
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("caller uid %d is not the controller's", cred.Uid)
	}
	return nil
}

// answer computes the keys for req: the encryption key from the process's
// salt, and the decryption key from the salt of the input metadata, if any.
func (s *Server) answer(req request) (*output, error) {
	s.mu.Lock()
	k := s.keys[req.ID]
	s.mu.Unlock()
	if k == nil {
		return nil, errors.New("unknown key id (the controller that started this tofu has restarted?)")
	}
	var in providerMeta
	if len(req.Meta) > 0 && string(req.Meta) != "null" {
		if err := json.Unmarshal(req.Meta, &in); err != nil {
			return nil, fmt.Errorf("invalid metadata: %w", err)
		}
	}
	if m := in.ExternalData; m != nil {
		if err := m.validate(); err != nil {
			return nil, err
		}
	}
	own := meta{Salt: k.salt, Iterations: DefaultIterations, HashFunction: DefaultHash, KeyLength: DefaultKeyLength}
	enc, err := s.derive(req.ID, k, own)
	if err != nil {
		return nil, err
	}
	out := &output{Keys: keys{EncryptionKey: enc}, Meta: providerMeta{ExternalData: &own}}
	if m := in.ExternalData; m != nil {
		if out.Keys.DecryptionKey, err = s.derive(req.ID, k, *m); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (m meta) validate() error {
	switch {
	case len(m.Salt) < minSalt:
		return fmt.Errorf("invalid metadata: salt of %d bytes, at least %d", len(m.Salt), minSalt)
	case m.Iterations < minIterations || m.Iterations > maxIterations:
		return fmt.Errorf("invalid metadata: %d iterations, not within [%d, %d]", m.Iterations, minIterations, maxIterations)
	case hashes[m.HashFunction] == nil:
		return fmt.Errorf("invalid metadata: hash function %q (sha256 or sha512)", m.HashFunction)
	case m.KeyLength != 16 && m.KeyLength != 24 && m.KeyLength != 32:
		return fmt.Errorf("invalid metadata: key length %d (16, 24 or 32)", m.KeyLength)
	}
	return nil
}

// derive runs PBKDF2 once per key id and parameters; concurrent callers of
// the same wait for the one run.
func (s *Server) derive(id string, k *key, m meta) ([]byte, error) {
	ck := fmt.Sprintf("%s/%x/%d/%s/%d", id, m.Salt, m.Iterations, m.HashFunction, m.KeyLength)
	s.mu.Lock()
	d := s.derived[ck]
	if d == nil {
		d = &derivation{}
		s.derived[ck] = d
	}
	s.mu.Unlock()
	d.once.Do(func() {
		s.derivations.Add(1)
		d.key, d.err = pbkdf2.Key(hashes[m.HashFunction], string(k.passphrase), m.Salt, m.Iterations, m.KeyLength)
		if d.err != nil {
			d.err = fmt.Errorf("key derivation: %w", d.err)
		}
	})
	return d.key, d.err
}

var (
	defaultMu     sync.Mutex // guards defaultServer after defaultOnce
	defaultOnce   sync.Once
	defaultServer *Server
	defaultErr    error
)

// Default is the process's server, started on first use.
func Default() (*Server, error) {
	defaultOnce.Do(func() {
		s, err := New("", "")
		defaultMu.Lock()
		defaultServer, defaultErr = s, err
		defaultMu.Unlock()
	})
	defaultMu.Lock()
	defer defaultMu.Unlock()
	return defaultServer, defaultErr
}

// Swap makes s the process's server until restore is called: for tests
// that restart the controller within one process (a new server has new
// salts and an empty cache, as a new process would).
func Swap(s *Server) (restore func()) {
	defaultOnce.Do(func() {})
	defaultMu.Lock()
	defer defaultMu.Unlock()
	old, oldErr := defaultServer, defaultErr
	defaultServer, defaultErr = s, nil
	return func() {
		defaultMu.Lock()
		defer defaultMu.Unlock()
		defaultServer, defaultErr = old, oldErr
	}
}

// Shutdown closes the process's server, if it was started, removing its
// socket: for a binary's main before it exits.
func Shutdown() {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if defaultServer != nil {
		_ = defaultServer.Close()
	}
}
