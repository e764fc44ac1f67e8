package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/tfccm/tfccm/internal/secret"
	"github.com/tfccm/tfccm/internal/tfenv"
	"github.com/tfccm/tfccm/workspace/locks"
	"github.com/tfccm/tfccm/workspace/plans"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// ErrSuperseded is returned by Wait when a newer spec replaced the one
// waited for before it was applied.
var ErrSuperseded = errors.New("superseded by a newer spec")

// ErrNotFound is returned by Outputs for a workspace never applied.
var ErrNotFound = errors.New("workspace not applied")

// Engine runs Terraform for workspaces. It is safe for concurrent use.
type Engine struct {
	opts Options
	// tofu is what every runner shares (package workspace/tofu).
	tofu *tofu.Setup
	// passes runs one pass of a workspace (run.go).
	passes *passes
	tombs  tombstones // of destroyed workspaces (tombstone.go)
	plans  planKeeper // Options.Plans (planstore.go)

	// queue holds the names of workspaces with work to do (queue.go): one
	// worker per name at a time, a name added while it is processed is
	// processed again afterwards, failed ones come back after retries' delay.
	queue   workqueue.TypedRateLimitingInterface[string]
	retries *retryBackoff
	// budget is the tofu slots passes and probes share (budget.go).
	budget *budget
	// driftCheck is called for each workspace in a drift round
	// (Reconcile; tests replace it).
	driftCheck func(name string)

	// catalog is nil unless Options.Catalog (catalog.go).
	catalog *catalog

	mu sync.Mutex
	ws map[string]*entry

	started bool
	done    chan struct{}
}

// entry is the engine's memory of one workspace. Guarded by Engine.mu.
type entry struct {
	name    string
	desired *Spec
	destroy bool
	status  Status
	rec     record
	loaded  bool
	changed chan struct{} // closed and replaced on every status change
	secrets []string      // sensitive output values, scrubbed from messages
	drift   bool          // re-plan although the hash is applied (Reconcile)
	// tombstone: Destroy was asked for; Apply is refused (tombstone.go).
	tombstone bool
	// burst is when the first update of the current burst arrived, due
	// when its run may start (Options.Coalesce); zero when none waits.
	burst, due time.Time

	// Review mode (review.go).
	pending      *plans.PendingPlan // saved plan awaiting approval
	replaced     string             // hash of a pending plan new work replaced
	replacedWhy  string             // why it can no longer be approved
	approved     string             // plan hash approved, to apply next
	lastApproved string             // plan hash last approved (repeat approvals are no-ops)
	// verdict is the gate's verdict on the pending plan (gate.go).
	verdict      plans.GateVerdict
	stored       bool // the pending plan is in Options.Plans (planstore.go)
	restoreTried bool // Options.Plans was asked for a stored plan
}

// encryptionID identifies opts' encryption configuration without its
// secrets ("" without encryption): the key values are scrubbed before the
// configuration is hashed.
func encryptionID(opts Options) string {
	if opts.Encryption == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(secret.NewScrubber(opts.EncryptionSecrets).Scrub(opts.Encryption)))
	return hex.EncodeToString(sum[:])
}

// New checks opts and returns an engine; call Start to run workers.
func New(opts Options) (*Engine, error) {
	if err := opts.complete(); err != nil {
		return nil, fmt.Errorf("workspace engine: %w", err)
	}
	settings := tfenv.Settings{
		Env: opts.Env, PassEnv: opts.PassEnv,
		CLIConfigFile: opts.CLIConfigFile, PluginCacheDir: opts.PluginCacheDir,
		Home: opts.WorkDir, Encryption: opts.Encryption, EncryptionSecrets: opts.EncryptionSecrets,
	}
	if !opts.ProviderMTLS {
		dir, err := tfenv.PluginSocketDir(filepath.Join(opts.WorkDir, tofu.SocketsDir))
		if err != nil {
			return nil, fmt.Errorf("workspace engine: %w", err)
		}
		settings.PluginSocketDir = dir
	}
	env, creds, secrets, err := tfenv.Workspace(settings)
	if err != nil {
		return nil, fmt.Errorf("workspace engine: %w", err)
	}
	var pinned []byte
	if opts.ProviderLockFile != "" {
		if pinned, err = tofu.ReadProviderLock(opts.ProviderLockFile); err != nil {
			return nil, fmt.Errorf("workspace engine: %w", err)
		}
	}
	registerMetrics()
	e := &Engine{
		opts:    opts,
		retries: newRetryBackoff(opts.Backoff),
		ws:      map[string]*entry{},
		done:    make(chan struct{}),
		budget:  newBudget(opts.Parallelism),
		tombs:   tombstones(filepath.Join(opts.WorkDir, tombstoneDir)),
		plans:   planKeeper{store: opts.Plans, review: opts.Review, workDir: opts.WorkDir},
	}
	e.tofu = &tofu.Setup{
		Binary: opts.Binary, WorkDir: opts.WorkDir, Timeout: opts.Timeout, GracePeriod: opts.GracePeriod,
		GoneLockHolder: opts.GoneLockHolder, Env: env, Credentials: creds,
		Inits: tofu.NewInitCache(opts.Binary, opts.CLIConfigFile, opts.WorkDir, pinned),
		Scrub: secret.NewScrubber(secrets), Self: locks.SelfClaim(opts.Identity, ""),
		Sockets: tofu.SocketDir(settings.PluginSocketDir), Metrics: engineMetrics{},
	}
	if x := opts.Exec; x != nil {
		e.tofu.Exec = &tofu.Exec{Path: x.Path, Env: x.Env}
	}
	if opts.Catalog != nil {
		e.catalog = newCatalog(e.tofu, opts.Catalog, opts.Parallelism)
	}
	e.passes = &passes{t: e.tofu, opts: &e.opts, encryption: encryptionID(opts), catalog: e.catalog, plans: e.plans}
	e.queue = newQueue(e.retries)
	e.driftCheck = e.Reconcile
	return e, nil
}

// Start runs Parallelism workers (and, with a DriftInterval, the drift
// loop) until ctx is done. Cancelling ctx shuts the queue down: queued
// work and scheduled retries are dropped (the desired state is recorded
// again by the next Apply of a restarted controller), and running tofu
// processes get SIGINT (they then write their state and release their
// locks; what they leave running is killed, see procs.go). Done is closed
// when every worker and loop has returned. Before its workers start, Start
// ends what an earlier incarnation left running under the work dir.
func (e *Engine) Start(ctx context.Context) {
	e.mu.Lock()
	if e.started {
		e.mu.Unlock()
		return
	}
	collector.set(e)
	e.started = true
	e.mu.Unlock()
	e.tombs.pruneTombstones()
	tofu.EndLeftovers(e.opts.WorkDir)
	e.tofu.Sockets.Clear()
	// A new incarnation may come with another provider mirror (a new
	// image): the lock files shared by the last one are not reused.
	e.tofu.Inits.Drop()
	var wg sync.WaitGroup
	for range e.opts.Parallelism {
		wg.Go(func() { e.worker(ctx) })
	}
	if e.opts.DriftInterval > 0 {
		wg.Go(func() { driftLoop(ctx, e.opts.DriftInterval, e.driftable, e.driftCheck) })
	}
	wg.Go(func() {
		<-ctx.Done()
		e.queue.ShutDown()
	})
	go func() {
		wg.Wait()
		close(e.done)
	}()
}

// Done is closed after Start's context ended and all workers returned.
func (e *Engine) Done() <-chan struct{} { return e.done }

// Dir is the directory of workspace name.
func (e *Engine) Dir(name string) string { return filepath.Join(e.opts.WorkDir, name) }

// Tool is the name of the binary the engine runs ("tofu", "terraform"),
// for messages.
func (e *Engine) Tool() string { return filepath.Base(e.opts.Binary) }

// Apply records spec as the desired state of its workspace and returns at
// once. If spec's hash is already applied, nothing runs. While a run is in
// flight only the newest spec is kept. An invalid spec is refused and
// changes nothing.
func (e *Engine) Apply(spec Spec) (Status, error) {
	return e.submit(spec, false)
}

// Destroy records that the workspace must be destroyed: its resources,
// then its state and directory. It returns at once. A destroy is final:
// from now on Apply refuses the workspace name (ErrDestroyed), also after
// a restart.
func (e *Engine) Destroy(spec Spec) (Status, error) {
	return e.submit(spec, true)
}

// coalesceDelay is how long new work for en waits for more updates of
// the same burst (Options.Coalesce c): only updates of an applied workspace
// wait. It records the burst's start and the run's due time. The caller
// holds Engine.mu.
func (en *entry) coalesceDelay(c Coalesce, spec *Spec, destroy bool) time.Duration {
	if c.Quiet <= 0 || destroy || !spec.Coalesce || en.rec.AppliedHash == "" {
		return 0
	}
	now := time.Now()
	if en.burst.IsZero() {
		en.burst = now
	}
	en.due = now.Add(c.Quiet)
	if c.Max > 0 && en.due.After(en.burst.Add(c.Max)) {
		en.due = en.burst.Add(c.Max)
	}
	return en.due.Sub(now)
}

// nothingToDestroy: a local-backend workspace with no directory dir has
// no state, so there is nothing to destroy.
func nothingToDestroy(en *entry, spec *Spec, dir string) bool {
	if !spec.Backend.IsLocal() || en.rec.AppliedHash != "" {
		return false
	}
	_, err := os.Stat(dir)
	return errors.Is(err, os.ErrNotExist)
}

// Status returns the workspace's state. A workspace this process has not
// seen is loaded from its directory: Applied if an earlier incarnation
// applied it, else Unknown.
func (e *Engine) Status(name string) Status {
	if !validName(name) {
		return Status{Name: name}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.entry(name).status
}

// Outputs returns the outputs of the last successful apply (sensitive
// ones redacted), from memory or from the workspace's record.
func (e *Engine) Outputs(name string) (map[string]json.RawMessage, error) {
	st := e.Status(name)
	if st.AppliedHash == "" {
		return nil, fmt.Errorf("outputs of %s: %w", name, ErrNotFound)
	}
	out := make(map[string]json.RawMessage, len(st.Outputs))
	for k, v := range st.Outputs {
		out[k] = append(json.RawMessage(nil), v...)
	}
	return out, nil
}

// Written returns the files the engine last wrote into workspace name
// (its manifest lists them) with their modes on disk. Backend,
// StateWorkspace and BackendConfig are left for the caller to fill in.
func (e *Engine) Written(name string) (Spec, error) {
	if !validName(name) {
		return Spec{}, fmt.Errorf("workspace name %q is not valid", name)
	}
	spec, err := ReadDir(e.Dir(name))
	if err != nil {
		return Spec{}, fmt.Errorf("workspace %s: %w", name, err)
	}
	return spec, nil
}

// Reconcile re-plans an applied workspace although its content is
// unchanged, and applies the plan if the infrastructure drifted from the
// state (Result.Drift is set; Changed tells whether anything was repaired).
// Workspaces that are not applied, or whose spec this process has not been
// given, are left alone.
func (e *Engine) Reconcile(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	en, ok := e.ws[name]
	if !ok || en.desired == nil || en.destroy || en.status.Phase != PhaseApplied {
		return
	}
	en.drift = true
	e.queue.Add(name)
}

// ReconcileAll calls Reconcile for every workspace this process knows.
func (e *Engine) ReconcileAll() {
	e.mu.Lock()
	names := make([]string, 0, len(e.ws))
	for n := range e.ws {
		names = append(names, n)
	}
	e.mu.Unlock()
	for _, n := range names {
		e.Reconcile(n)
	}
}

// Wait blocks until hash is applied to workspace name (or destroyed, for a
// Destroy), the attempt for hash failed (the status and its error are
// returned), a newer spec replaced it (ErrSuperseded) or ctx ends.
func (e *Engine) Wait(ctx context.Context, name, hash string) (Status, error) {
	for {
		e.mu.Lock()
		en := e.entry(name)
		st, ch := en.status, en.changed
		e.mu.Unlock()
		switch {
		case !st.Destroy && st.AppliedHash == hash:
			return st, nil
		case st.Hash != hash:
			return st, fmt.Errorf("wait for %s %s: %w", name, hash, ErrSuperseded)
		case st.Phase == PhaseDestroyed:
			return st, nil
		case st.Phase == PhaseFailed:
			return st, st.Err
		case st.Phase == PhaseAwaitingApproval:
			return st, fmt.Errorf("wait for %s: %w", name, ErrAwaitingApproval)
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("wait for %s: %w", name, ctx.Err())
		case <-ch:
		}
	}
}

// entry returns the workspace's entry, loading its record on first use.
func (e *Engine) entry(name string) *entry {
	en, ok := e.ws[name]
	if !ok {
		en = &entry{name: name, changed: make(chan struct{})}
		en.status.Name = name
		e.ws[name] = en
	}
	if !en.loaded {
		rec, err := readRecord(e.Dir(name))
		if err == nil {
			en.loaded = true
			en.rec = rec
			if rec.AppliedHash != "" && en.status.Phase == PhaseUnknown {
				en.status.Phase = PhaseApplied
				en.status.Hash = rec.AppliedHash
				en.status.AppliedHash = rec.AppliedHash
				en.status.Outputs = rec.Outputs
				en.status.Since = rec.AppliedAt
			}
		}
	}
	return en
}

// setStatus changes en's status with f and wakes its waiters (Wait).
func (en *entry) setStatus(f func(*Status)) {
	old := en.status.Phase
	f(&en.status)
	if en.status.Phase != PhaseAwaitingApproval {
		en.status.Plan, en.status.Verdict = nil, plans.GateVerdict{}
	}
	if en.status.Phase != old {
		en.status.Since = time.Now()
	}
	close(en.changed)
	en.changed = make(chan struct{})
}

func cloneSpec(s Spec) Spec {
	c := s
	c.Files = make(map[string][]byte, len(s.Files))
	for k, v := range s.Files {
		c.Files[k] = append([]byte(nil), v...)
	}
	if s.Modes != nil {
		c.Modes = make(map[string]os.FileMode, len(s.Modes))
		for k, v := range s.Modes {
			c.Modes[k] = v
		}
	}
	if s.Owner != nil {
		o := *s.Owner
		c.Owner = &o
	}
	if s.BackendConfig != nil {
		c.BackendConfig = make(map[string]string, len(s.BackendConfig))
		for k, v := range s.BackendConfig {
			c.BackendConfig[k] = v
		}
	}
	return c
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
