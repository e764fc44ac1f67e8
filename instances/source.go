package instances

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/internal/secret"
	"github.com/tfccm/tfccm/internal/tfenv"
)

// Source reads one Terraform state. Read is never called concurrently for
// the same Source by a Store.
type Source interface {
	// Name identifies the source in errors and logs.
	Name() string
	// Read returns the current state.
	Read(ctx context.Context) (*tfjson.State, error)
}

// TofuSource reads raw state (the format `tofu state pull` prints) and
// maps it without any provider's schema, so a state of providers tfccm does
// not have installed (bpg/proxmox, vsphere, ...) reads all the same. A state
// file is read directly, or with `tofu state pull` when it is encrypted
// (tofu decrypts with the configured encryption); a working directory is
// read with `tofu state pull` through its backend from a scratch directory
// of tfccm's own holding only that backend (see backendsource.go), never
// touching the directory.
type TofuSource struct {
	name      string
	dir       string // working directory (dir sources)
	stateFile string // state file (file sources)
	binary    string
	env       map[string]string
	scrub     *secret.Scrubber
	timeout   time.Duration
	// allowEmpty accepts an empty read after one with instances (see
	// emptiedError).
	allowEmpty bool

	mu        sync.Mutex
	tf        *tfexec.Terraform
	tmpDir    string // scratch working directory
	workspace string // the directory's selected workspace
	plaintext bool   // the state was last found unencrypted (pull)
}

var (
	_ Source       = (*TofuSource)(nil)
	_ emptyAllower = (*TofuSource)(nil)
)

// newDirSource reads the state of the Terraform working directory dir
// through the backend its configuration declares (no `tofu init` of dir
// needed).
func newDirSource(name, dir string, tf *config.Terraform) (*TofuSource, error) {
	return newTofuSource(name, dir, "", tf)
}

// newFileSource reads a state file.
func newFileSource(name, stateFile string, tf *config.Terraform) (*TofuSource, error) {
	return newTofuSource(name, "", stateFile, tf)
}

func newTofuSource(name, dir, file string, tf *config.Terraform) (*TofuSource, error) {
	if tf == nil {
		tf = &config.Terraform{}
	}
	env, secrets, err := Env(tf)
	if err != nil {
		return nil, fmt.Errorf("state source %q: %w", name, err)
	}
	bin := tf.Binary
	if bin == "" {
		bin = config.DefaultBinary
	}
	return &TofuSource{name: name, dir: dir, stateFile: file, binary: bin, env: env, scrub: secret.NewScrubber(secrets), timeout: tf.Timeout}, nil
}

// SourcesFromConfig builds the configured sources. Relative paths are
// resolved against base (the cloud config's directory) and made absolute:
// tofu runs in a directory of its own.
func SourcesFromConfig(in *config.Instances, tf *config.Terraform, base string) ([]Source, error) {
	var out []Source
	for _, s := range in.Sources {
		abs := func(p string) string {
			if p == "" || filepath.IsAbs(p) {
				return p
			}
			if a, err := filepath.Abs(filepath.Join(base, p)); err == nil {
				return a
			}
			return filepath.Join(base, p)
		}
		var src *TofuSource
		var err error
		if s.Dir != "" {
			src, err = newDirSource(s.Name, abs(s.Dir), tf)
		} else {
			src, err = newFileSource(s.Name, abs(s.StateFile), tf)
		}
		if err != nil {
			return nil, err
		}
		src.allowEmpty = s.AllowEmpty
		out = append(out, src)
	}
	return out, nil
}

// Env is the explicit environment tofu runs with (see internal/tfenv);
// the second result lists the secret values to redact.
func Env(tf *config.Terraform) (map[string]string, []string, error) {
	return tfenv.Build(tf.EnvSettings(os.TempDir()))
}

// Name implements Source.
func (s *TofuSource) Name() string { return s.name }

// AllowEmpty implements emptyAllower.
func (s *TofuSource) AllowEmpty() bool { return s.allowEmpty }

// Read implements Source.
func (s *TofuSource) Read(ctx context.Context) (*tfjson.State, error) {
	if s.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	file, err := s.localFile()
	if err != nil {
		return nil, err
	}
	if file != "" {
		// A state file (also a directory's local backend) is decoded
		// directly unless it is encrypted. A missing file is an error, never
		// an empty state: tofu would read it as one, and every instance
		// would look gone.
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("state source %q: %w", s.name, err)
		}
		st, err := decodeRawState(b)
		if !errors.Is(err, ErrEncrypted) || !s.encrypted() {
			if err != nil {
				return nil, fmt.Errorf("state source %q: %s: %w", s.name, file, err)
			}
			return st, nil
		}
	}
	tf, err := s.terraform(ctx)
	if err != nil {
		return nil, s.scrub.ScrubError(err)
	}
	out, err := s.pull(ctx, tf)
	if err != nil {
		return nil, s.scrub.ScrubError(fmt.Errorf("state source %q: tofu state pull: %w", s.name, err))
	}
	st, err := decodeRawState([]byte(out))
	if err != nil {
		return nil, fmt.Errorf("state source %q: %w", s.name, err)
	}
	return st, nil
}

// pull runs `tofu state pull`, with the encryption configuration unless
// the state was found in plaintext: OpenTofu refuses a plaintext state
// when encryption is configured without an unencrypted fallback, and an
// encrypted one without encryption. The other way is tried once when tofu
// says the state is of the other kind, and remembered.
func (s *TofuSource) pull(ctx context.Context, tf *tfexec.Terraform) (string, error) {
	if !s.encrypted() {
		return tf.StatePull(ctx)
	}
	var out string
	var err error
	for range 2 {
		if err = tf.SetEnv(s.runEnv(!s.plaintext)); err != nil {
			return "", err
		}
		out, err = tf.StatePull(ctx)
		switch {
		case err == nil:
			return out, nil
		case !s.plaintext && strings.Contains(err.Error(), "unencrypted payload"):
			s.plaintext = true
		case s.plaintext && strings.Contains(err.Error(), "encrypted and can not be read"):
			s.plaintext = false
		default:
			return "", err
		}
	}
	return "", err
}

// runEnv is the environment of the source's tofu: with or without the
// encryption configuration, with the directory's workspace selected.
func (s *TofuSource) runEnv(encrypt bool) map[string]string {
	env := maps.Clone(s.env)
	if !encrypt {
		delete(env, tfenv.EncryptionVar)
	}
	if s.workspace != "" {
		env["TF_WORKSPACE"] = s.workspace
	}
	return env
}

// encrypted reports whether tofu is given an encryption configuration.
func (s *TofuSource) encrypted() bool { return s.env[tfenv.EncryptionVar] != "" }

// localFile is the state file this source reads, read again on every
// call: the state file source's, or the file of a directory's local
// backend; "" for a directory with another backend.
func (s *TofuSource) localFile() (string, error) {
	if s.dir == "" {
		return s.stateFile, nil
	}
	if st, err := os.Stat(s.dir); err != nil {
		return "", fmt.Errorf("state source %q: %w", s.name, err)
	} else if !st.IsDir() {
		return "", fmt.Errorf("state source %q: %s is not a directory", s.name, s.dir)
	}
	b, err := readBackend(s.dir)
	if err != nil {
		return "", fmt.Errorf("state source %q: %w", s.name, err)
	}
	return b.localPath, nil
}

// terraform prepares the scratch working directory once: a state file
// linked as its terraform.tfstate (the local backend, no init needed), or
// the directory's backend block, initialized without providers.
func (s *TofuSource) terraform(ctx context.Context) (*tfexec.Terraform, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tf != nil {
		return s.tf, nil
	}
	var backend *sourceBackend
	file := s.stateFile
	if s.dir != "" {
		if st, err := os.Stat(s.dir); err != nil {
			return nil, fmt.Errorf("state source %q: %w", s.name, err)
		} else if !st.IsDir() {
			return nil, fmt.Errorf("state source %q: %s is not a directory", s.name, s.dir)
		}
		b, err := readBackend(s.dir)
		if err != nil {
			return nil, fmt.Errorf("state source %q: %w", s.name, err)
		}
		if b.localPath != "" {
			file = b.localPath
		} else {
			backend = b
		}
	}
	if s.tmpDir == "" {
		d, err := os.MkdirTemp("", "tfccm-state-")
		if err != nil {
			return nil, fmt.Errorf("state source %q: %w", s.name, err)
		}
		s.tmpDir = d
	}
	tf, err := tfexec.NewTerraform(s.tmpDir, s.binary)
	if err != nil {
		return nil, fmt.Errorf("state source %q: %w", s.name, err)
	}
	if backend != nil {
		s.workspace = backend.workspace
	}
	if err := tf.SetEnv(s.runEnv(true)); err != nil {
		return nil, fmt.Errorf("state source %q: %w", s.name, err)
	}
	if backend == nil {
		// The local backend of an empty configuration reads ./terraform.tfstate.
		link := filepath.Join(s.tmpDir, "terraform.tfstate")
		_ = os.Remove(link)
		if err := os.Symlink(file, link); err != nil {
			return nil, fmt.Errorf("state source %q: %w", s.name, err)
		}
	} else if err := backend.init(ctx, tf, s.tmpDir); err != nil {
		return nil, fmt.Errorf("state source %q: %w", s.name, err)
	}
	s.tf = tf
	return tf, nil
}

// Close removes the source's scratch directory, if any.
func (s *TofuSource) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tmpDir == "" {
		return nil
	}
	err := os.RemoveAll(s.tmpDir)
	s.tmpDir, s.tf = "", nil
	return err
}
