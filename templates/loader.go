package templates

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/config"
)

// pollInterval is how often the Loader checks the override directory.
const pollInterval = 2 * time.Second

// Loader owns the built-in set and the override directory layered over it,
// re-reading the override directory when its content changes. An invalid
// override is rejected and the last good set keeps serving.
type Loader struct {
	builtin  *Set
	dir      string
	interval time.Duration

	mu       sync.Mutex
	cur      *Set
	lastSeen string // hash of the override tree last acted on (good or bad)
	lastErr  error
	onChange []func(error)
}

// OnChange registers fn to be called by Run after the override directory
// changed: with nil once a new valid set serves, or with the error of a
// newly rejected override (the last good set keeps serving). Register
// before Run.
func (l *Loader) OnChange(fn func(err error)) {
	l.mu.Lock()
	l.onChange = append(l.onChange, fn)
	l.mu.Unlock()
}

func (l *Loader) notify(err error) {
	l.mu.Lock()
	fns := slices.Clone(l.onChange)
	l.mu.Unlock()
	for _, fn := range fns {
		fn(err)
	}
}

// NewLoader loads the built-in set cfg.TemplateSet and layers
// cfg.OverrideDir over it. An unreadable or invalid override is an error.
func NewLoader(cfg *config.Config) (*Loader, error) {
	b, err := LoadBuiltin(cfg.TemplateSet)
	if err != nil {
		return nil, err
	}
	return newLoader(b, cfg.OverrideDir)
}

func newLoader(base *Set, dir string) (*Loader, error) {
	l := &Loader{builtin: base, dir: dir, interval: pollInterval, cur: base}
	if l.dir != "" {
		if _, err := l.reload(); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Set returns the last good set.
func (l *Loader) Set() *Set {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur
}

// Err returns the error of the last rejected override, or nil once a good
// one has been loaded.
func (l *Loader) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastErr
}

// reload checks the override directory once. It reports whether the
// serving set changed, and an error if the override is invalid or
// unreadable (the previous set keeps serving).
func (l *Loader) reload() (bool, error) {
	if l.dir == "" {
		return false, nil
	}
	fsys := os.DirFS(l.dir)
	t, err := readTree(fsys, ".")
	if err == nil {
		// A ConfigMap update swaps the ..data symlink; a read that spans the
		// swap could mix two versions. Read again and act only on a stable one.
		var again *tree
		again, err = readTree(fsys, ".")
		if err == nil && again.hash() != t.hash() {
			return false, nil // changing right now; next poll
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		err = fmt.Errorf("template override %s: %w", l.dir, err)
		l.lastErr = err
		return false, err
	}
	h := t.hash()
	if h == l.lastSeen {
		return false, l.lastErr
	}
	l.lastSeen = h
	s, diags := buildSet(l.builtin, t, l.dir)
	if diags.HasErrors() {
		l.lastErr = fmt.Errorf("template override %s rejected, keeping the last good templates:\n%s", l.dir, FormatDiagnostics(diags))
		return false, l.lastErr
	}
	changed := l.cur == nil || s.hash != l.cur.hash
	l.cur, l.lastErr = s, nil
	return changed, nil
}

// Run polls the override directory until ctx is done, logging rejected
// overrides (once per distinct content) with klog and telling OnChange
// subscribers about every new set or newly rejected override.
func (l *Loader) Run(ctx context.Context) {
	overrideValid.Set(1) // NewLoader refuses an invalid first content
	if l.dir == "" {
		return
	}
	var lastLogged string
	wait.UntilWithContext(ctx, func(context.Context) {
		changed, err := l.reload()
		overrideValid.Set(boolGauge(err == nil))
		switch {
		case err != nil:
			if msg := err.Error(); msg != lastLogged {
				klog.ErrorS(err, "Invalid template override", "dir", l.dir)
				lastLogged = msg
				overrideRejected.Inc()
				l.notify(err)
			}
		case changed:
			lastLogged = ""
			klog.InfoS("Loaded template override", "dir", l.dir, "hash", l.Set().Hash()[:12], "variants", l.Set().Variants())
			l.notify(nil)
		}
	}, l.interval)
}
