package workspace

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/internal/tfenv"
	"github.com/tfccm/tfccm/workspace/plans"
)

// Options configure an Engine. They mirror config.Terraform plus the work
// dir, an identity and the result hook.
type Options struct {
	// Binary is the tofu or terraform executable: a path, or a name looked
	// up on PATH. Default "tofu".
	Binary string
	// WorkDir holds one directory per workspace. Required.
	WorkDir string
	// Parallelism is the number of queue workers, which bounds concurrent
	// tofu runs across workspaces. Default 4.
	Parallelism int
	// Timeout bounds one tofu command (init, plan, apply, destroy).
	// Default 10 minutes.
	Timeout time.Duration
	// GracePeriod is how long a cancelled tofu gets after SIGINT to write
	// its state and release its lock before it is killed. Default 60s.
	GracePeriod time.Duration
	// Env is extra environment for tofu (credentials). Its values are
	// secret: they are scrubbed from every message the engine produces.
	Env map[string]string
	// PassEnv names process environment variables passed to tofu. Their
	// values are scrubbed like Env's.
	PassEnv []string
	// CLIConfigFile is passed as TF_CLI_CONFIG_FILE.
	CLIConfigFile string
	// ProviderLockFile, when set, is the dependency lock file every init
	// starts from (the cluster admin's: written by the build beside the
	// provider mirror, internal/providerlock): a provider package that
	// does not match it is refused (workspace/tofu/integrity.go).
	ProviderLockFile string
	// PluginCacheDir is passed as TF_PLUGIN_CACHE_DIR.
	PluginCacheDir string
	// ProviderMTLS keeps go-plugin's automatic mTLS between tofu and its
	// providers. Without it each command's providers put their sockets in
	// a directory of its own under <WorkDir>/.plugins (mode 0700), removed
	// when the command ends (internal/tfenv/sockets.go).
	ProviderMTLS bool
	// Encryption is OpenTofu's encryption configuration, passed to every
	// tofu run as TF_ENCRYPTION (secret, like EncryptionSecrets, the key
	// values in it).
	Encryption        string
	EncryptionSecrets []string
	// Identity names this controller deployment in the claim file written
	// before each run. A state lock whose claim carries the same identity
	// and whose process is gone is released. Default: the host name.
	Identity string
	// GoneLockHolder, when set, tells whether a state lock's holder (tofu's
	// "user@host") is an earlier incarnation of this controller that is
	// known to be gone (a previous leader, once this one leads): such a
	// lock is released although no claim file survived (no persistent
	// work_dir). Any other holder's lock is only reported.
	GoneLockHolder func(who string) bool
	// Exec, when set, is what terraform-exec starts for every tofu command
	// instead of Binary, with Exec.Env added to the command's environment:
	// terraform { runner = "job" } makes it the CCM's own binary as the
	// stand-in that runs the command in a Kubernetes Job (package
	// workspace/jobrunner). Binary still names the tool in messages.
	Exec *Exec
	// Coalesce gathers a burst of updates to an applied workspace into one
	// run: an update starts once no newer one arrived for Coalesce.Quiet,
	// and at the latest Coalesce.Max after the burst's first update.
	// Creates, destroys and approved plans start at once. Zero values
	// disable it.
	Coalesce Coalesce
	// DriftInterval, when positive, re-plans every applied workspace this
	// often and applies the plan if the infrastructure drifted (Reconcile).
	// A round starts every interval (+ up to 10% jitter), the first one an
	// interval after Start, and spreads its workspaces' checks evenly over
	// the interval (interval/N apart, at a random phase per round).
	DriftInterval time.Duration
	// OnResult, if set, is called after every plan/apply/destroy attempt
	// (not for no-ops), from a worker goroutine, and when a pending plan
	// is taken back from Plans after a restart (from Apply or Destroy).
	OnResult func(name string, r Result)
	// OnApplyStart, if set, is called when a plan with changes is about to
	// be applied (outside review mode), with the plan's summary ("2 to
	// add, 1 to change, 0 to destroy"), from the worker goroutine.
	OnApplyStart func(name, summary string)
	// Backoff shapes retries of a failed workspace.
	Backoff Backoff
	// Review, when true, applies no plan with changes (destroys included)
	// until Approve is called with the saved plan's hash (see review.go).
	Review bool
	// Gate, when set, judges every plan with changes before it is applied
	// or published: policy and change windows (gate.go).
	Gate plans.Gate
	// Plans, when set in review mode, keeps pending plans outside the work
	// dir so that they survive a restart (planstore.go). In any mode, the
	// stored plan of a workspace the engine destroys is deleted.
	Plans plans.Store
	// Catalog, when set, is the backend (files and settings; no module) of
	// the catalog (catalog.go): every workspace with an Owner is recorded
	// there after an apply and removed after its destroy. Nil keeps none
	// (the local backend, or a backend without Terraform workspaces).
	Catalog *Spec
}

// Exec is the executable that runs tofu commands (Options.Exec).
type Exec struct {
	Path string
	Env  map[string]string
}

// Coalesce configures how updates to an applied workspace are gathered
// (Options.Coalesce).
type Coalesce struct {
	Quiet time.Duration
	Max   time.Duration
}

// Backoff configures the per-workspace exponential backoff with jitter.
type Backoff struct {
	// Initial is the first retry delay. Default 5s.
	Initial time.Duration
	// Max caps the delay. Default 5m.
	Max time.Duration
	// Multiplier grows the delay per failure. Default 2.
	Multiplier float64
	// Jitter is the randomization factor in [0,1). Default 0.2.
	Jitter float64
}

// Defaults for Options.
const (
	DefaultParallelism = config.DefaultParallelism
	DefaultTimeout     = config.DefaultOperationTimeout
	DefaultGracePeriod = 60 * time.Second
)

func (o *Options) complete() error {
	if o.Binary == "" {
		o.Binary = config.DefaultBinary
	}
	if !strings.ContainsRune(o.Binary, filepath.Separator) {
		p, err := exec.LookPath(o.Binary)
		if err != nil {
			return fmt.Errorf("terraform binary %q: %w", o.Binary, err)
		}
		o.Binary = p
	}
	abs, err := filepath.Abs(o.Binary)
	if err != nil {
		return fmt.Errorf("terraform binary %q: %w", o.Binary, err)
	}
	o.Binary = abs
	if st, err := os.Stat(o.Binary); err != nil {
		return fmt.Errorf("terraform binary: %w", err)
	} else if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("terraform binary %s is not an executable file", o.Binary)
	}
	if o.WorkDir == "" {
		return errors.New("work dir is required")
	}
	if o.WorkDir, err = filepath.Abs(o.WorkDir); err != nil {
		return fmt.Errorf("work dir: %w", err)
	}
	if err := os.MkdirAll(o.WorkDir, 0o700); err != nil {
		return fmt.Errorf("work dir: %w", err)
	}
	if o.Parallelism == 0 {
		o.Parallelism = DefaultParallelism
	}
	if o.Parallelism < 0 {
		return fmt.Errorf("parallelism must be positive, got %d", o.Parallelism)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.GracePeriod == 0 {
		o.GracePeriod = DefaultGracePeriod
	}
	if o.Timeout < 0 || o.GracePeriod < 0 {
		return errors.New("timeout and grace period must be positive")
	}
	for k := range o.Env {
		if err := tfenv.CheckName(k); err != nil {
			return fmt.Errorf("env: %w", err)
		}
	}
	for _, k := range o.PassEnv {
		if err := tfenv.CheckName(k); err != nil {
			return fmt.Errorf("pass_env: %w", err)
		}
	}
	if o.Identity == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("identity: %w", err)
		}
		o.Identity = h
	}
	b := &o.Backoff
	if b.Initial <= 0 {
		b.Initial = 5 * time.Second
	}
	if b.Max <= 0 {
		b.Max = 5 * time.Minute
	}
	if b.Multiplier < 1 {
		b.Multiplier = 2
	}
	if b.Jitter <= 0 || b.Jitter >= 1 {
		b.Jitter = 0.2
	}
	return nil
}
