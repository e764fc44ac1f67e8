package state

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// TofuSource reads state with `tofu show -json`, either through a working
// directory's configured backend or from a state file.
type TofuSource struct {
	name      string
	dir       string // working directory (dir sources)
	stateFile string // state file (file sources)
	binary    string
	env       map[string]string
	scrub     *secret.Scrubber
	timeout   time.Duration

	mu     sync.Mutex
	tf     *tfexec.Terraform
	tmpDir string // empty working directory for file sources
}

var _ Source = (*TofuSource)(nil)

// newDirSource reads the state of the Terraform working directory dir
// through its configured backend (`tofu show -json` in dir). dir must be
// initialized (`tofu init`).
func newDirSource(name, dir string, tf *config.Terraform) (*TofuSource, error) {
	return newTofuSource(name, dir, "", tf)
}

// newFileSource reads a state file (`tofu show -json FILE`).
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

// Read implements Source.
func (s *TofuSource) Read(ctx context.Context) (*tfjson.State, error) {
	tf, err := s.terraform()
	if err != nil {
		return nil, s.scrub.ScrubError(err)
	}
	if s.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	var st *tfjson.State
	if s.stateFile != "" {
		if _, err := os.Stat(s.stateFile); err != nil {
			return nil, fmt.Errorf("state source %q: %w", s.name, err)
		}
		st, err = tf.ShowStateFile(ctx, s.stateFile)
	} else {
		st, err = tf.Show(ctx)
	}
	if err != nil {
		return nil, s.scrub.ScrubError(fmt.Errorf("state source %q: tofu show: %w", s.name, err))
	}
	return st, nil
}

func (s *TofuSource) terraform() (*tfexec.Terraform, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tf != nil {
		return s.tf, nil
	}
	dir := s.dir
	if s.stateFile != "" {
		// An empty working directory: the state file is read on its own,
		// never together with whatever configuration sits next to it.
		if s.tmpDir == "" {
			d, err := os.MkdirTemp("", "tfccm-state-")
			if err != nil {
				return nil, fmt.Errorf("state source %q: %w", s.name, err)
			}
			s.tmpDir = d
		}
		dir = s.tmpDir
	}
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("state source %q: %w", s.name, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("state source %q: %s is not a directory", s.name, dir)
	}
	tf, err := tfexec.NewTerraform(dir, s.binary)
	if err != nil {
		return nil, fmt.Errorf("state source %q: %w", s.name, err)
	}
	if err := tf.SetEnv(s.env); err != nil {
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
