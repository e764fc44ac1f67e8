// Staging frontend fragments and committing them in batches: one check, one
// reload, rollback on refusal.

package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tfccm/tfccm/lbhost/haproxy"
	"github.com/tfccm/tfccm/lbhost/transport"
)

// Frontend changes take effect in group commits. A change is staged under
// the host's lock, outside the configuration HAProxy loads: the new
// fragment goes to Dir/pending/NAME.cfg and is checked there on its own,
// then Dir/pending/NAME.json records the change (a removal has no .cfg).
// The stager then waits for Dir/commit.lock. Whoever holds that lock
// commits every staged change at once: under the host's lock it moves the
// staged fragments into Dir/fragments (keeping what they replace), then
// reloads HAProxy once, and writes each change's result into its record.
// Nothing but a commit writes Dir/fragments, so what a commit reloads is
// what it moved there. A configuration HAProxy refuses at the reload is
// taken apart as commitBatch says. A
// change whose record carries a result when its turn comes was committed
// by someone else. Changes that arrive while a commit runs (one reload of a
// few hundred frontends takes a second on a busy host) share the next one,
// so N concurrent applies cost about one check and one reload instead of
// N.
//
// Any process may commit (another apply's provider, a later apply after a
// crash): a change staged by a process that died is committed by the next
// one. Only the staging process reads its result and removes its record.

// pendingChange is a staged change of one load balancer's fragment.
type pendingChange struct {
	// Token identifies the staging call.
	Token string `json:"token"`
	// Remove: the change removes the fragment (else pending/NAME.cfg
	// holds the new one).
	Remove bool `json:"remove,omitempty"`
	// Result is set by the commit that took the change.
	Result *commitResult `json:"result,omitempty"`
}

// commitResult is a commit's outcome for one change.
type commitResult struct {
	// Err is empty on success.
	Err string `json:"err,omitempty"`
	// Partial: the configuration is on the host but the reload failed.
	Partial bool `json:"partial,omitempty"`
	// At is when the commit ended: a result nobody took (its process
	// died) is removed by a commit staleResult later.
	At time.Time `json:"at"`
}

// staleResult is how long a commit's result waits for the process that
// staged the change.
const staleResult = 10 * time.Minute

func (r *commitResult) err() error {
	switch {
	case r.Err == "":
		return nil
	case r.Partial:
		return &PartialError{Err: errors.New(r.Err)}
	default:
		return errors.New(r.Err)
	}
}

func (h *Host) pendingFile(name string) string    { return h.p("pending", name+".json") }
func (h *Host) stagedFragment(name string) string { return h.p("pending", name+".cfg") }

// readPending returns name's staged change, nil if there is none.
func (h *Host) readPending(ctx context.Context, name string) (*pendingChange, error) {
	data, err := h.T.ReadFile(ctx, h.pendingFile(name))
	if transport.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: read the staged change of %s: %w", h.T, name, err)
	}
	var c pendingChange
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, nil // not ours: nothing to commit
	}
	return &c, nil
}

func (h *Host) writePending(ctx context.Context, name string, c *pendingChange) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := h.T.WriteFile(ctx, h.pendingFile(name), data); err != nil {
		return fmt.Errorf("%s: record the staged change of %s: %w", h.T, name, err)
	}
	return nil
}

// stagedFrontends returns the fragments staged and not committed yet, by
// load balancer name.
func (h *Host) stagedFrontends(ctx context.Context) (map[string][]byte, error) {
	files, err := h.T.ReadFiles(ctx, h.p("pending"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.T, err)
	}
	out := map[string][]byte{}
	for file, data := range files {
		name, ok := strings.CutSuffix(file, ".json")
		var c pendingChange
		if !ok || json.Unmarshal(data, &c) != nil || c.Result != nil || c.Remove {
			continue
		}
		if f, ok := files[name+".cfg"]; ok {
			out[name] = f
		}
	}
	return out, nil
}

// stage checks data (name's new fragment; nil removes it) on its own and
// records the change for the next commit. The caller holds the host's
// lock; it returns the change's token.
func (h *Host) stage(ctx context.Context, name string, data []byte) (string, error) {
	c := &pendingChange{Token: newToken(), Remove: data == nil}
	if data != nil {
		if err := h.T.WriteFile(ctx, h.stagedFragment(name), data); err != nil {
			return "", fmt.Errorf("%s: %w", h.T, err)
		}
		if err := h.checkOne(ctx, h.stagedFragment(name)); err != nil {
			_ = h.T.Remove(ctx, h.stagedFragment(name))
			return "", fmt.Errorf("%w; nothing was changed and HAProxy was not reloaded", err)
		}
	}
	if err := h.writePending(ctx, name, c); err != nil {
		return "", err
	}
	return c.Token, nil
}

// writeFragment writes name's fragment, or removes it when !exists.
func (h *Host) writeFragment(ctx context.Context, name string, data []byte, exists bool) error {
	var err error
	if exists {
		err = h.T.WriteFile(ctx, h.fragment(name), data)
	} else {
		err = h.T.Remove(ctx, h.fragment(name))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", h.T, err)
	}
	return nil
}

// commit waits until name's staged change (token) is committed, by this
// call or another, and returns its result.
func (h *Host) commit(ctx context.Context, name, token string) error {
	unlockCommit, err := h.T.Lock(ctx, h.p("commit.lock"))
	if err != nil {
		return fmt.Errorf("%s: %w", h.T, err)
	}
	defer unlockCommit()
	mine, err := h.take(ctx, name, token)
	if err != nil || mine != nil {
		if err != nil {
			return err
		}
		return mine.err()
	}
	batch, err := h.batch(ctx)
	if err != nil {
		return err
	}
	res := h.commitBatch(ctx, batch)
	if err := h.settle(ctx, batch, res); err != nil {
		return err
	}
	mine, err = h.take(ctx, name, token)
	if err != nil {
		return err
	}
	if mine == nil {
		return fmt.Errorf("%s: the staged change of load balancer %s was not committed", h.T, name)
	}
	return mine.err()
}

// take returns the result of the change token of name and removes its
// record, or nil if it has no result yet. A record with another token
// means a later change of the same load balancer replaced this one
// before it was committed; no record, that the host lost its state
// (wiped or reinstalled) under the change.
func (h *Host) take(ctx context.Context, name, token string) (*commitResult, error) {
	unlock, err := h.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, err := h.readPending(ctx, name)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("%s: the record of the staged change of load balancer %s is gone (the host's state directory was removed or reinstalled meanwhile): whether HAProxy loaded it is unknown", h.T, name)
	}
	if c.Token != token {
		return nil, fmt.Errorf("%s: the staged change of load balancer %s was replaced by another before HAProxy loaded it", h.T, name)
	}
	if c.Result == nil {
		return nil, nil
	}
	if err := h.T.Remove(ctx, h.pendingFile(name)); err != nil {
		return nil, fmt.Errorf("%s: %w", h.T, err)
	}
	return c.Result, nil
}

// staged is one change in a commit: its record, the fragment it replaced
// (old; hadOld false: none) and the load balancer as it was (prev) and
// will be (next, nil when removed), for the server state carried over the
// reload.
type staged struct {
	name       string
	change     pendingChange
	old        []byte
	hadOld     bool
	prev, next *haproxy.Frontend
}

// batch moves every change staged and not committed yet into the
// configuration, under the host's lock, and returns them.
func (h *Host) batch(ctx context.Context) ([]staged, error) {
	unlock, err := h.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	files, err := h.T.ReadFiles(ctx, h.p("pending"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.T, err)
	}
	var out []staged
	for file, data := range files {
		name, ok := strings.CutSuffix(file, ".json")
		var c pendingChange
		if !ok || !haproxy.ValidName(name) || json.Unmarshal(data, &c) != nil {
			continue
		}
		if c.Result != nil {
			if time.Since(c.Result.At) > staleResult {
				_ = h.T.Remove(ctx, h.pendingFile(name))
			}
			continue
		}
		s := staged{name: name, change: c}
		var next []byte
		if !c.Remove {
			if next, ok = files[name+".cfg"]; !ok {
				continue // its staging process died before it was checked
			}
		}
		old, err := h.T.ReadFile(ctx, h.fragment(name))
		s.old, s.hadOld = old, err == nil
		if err != nil && !transport.IsNotExist(err) {
			return nil, fmt.Errorf("%s: read %s: %w", h.T, h.fragment(name), err)
		}
		if s.hadOld {
			if p, err := haproxy.Parse(old); err == nil {
				s.prev = &p
			}
		}
		if err := h.writeFragment(ctx, name, next, !c.Remove); err != nil {
			return nil, err
		}
		if !c.Remove {
			if n, err := haproxy.Parse(next); err == nil {
				s.next = &n
			}
			if err := h.T.Remove(ctx, h.stagedFragment(name)); err != nil {
				return nil, fmt.Errorf("%s: %w", h.T, err)
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// commitBatch reloads HAProxy once for batch and returns each change's
// result by name. Every staged fragment passed haproxy -c on its own, so
// the common case needs no check of the whole configuration: HAProxy's
// master parses it at the reload and, if it refuses it, keeps the old
// workers running. Only then is the whole configuration checked (for
// HAProxy's message) and each changed fragment on its own: the ones
// HAProxy rejects are rolled back and fail, the rest is checked and
// reloaded without them. A configuration still rejected without any of
// them (a fragment not lbhost's, base.cfg) fails every change, all rolled
// back; the running workers keep the old configuration.
func (h *Host) commitBatch(ctx context.Context, batch []staged) map[string]commitResult {
	res := make(map[string]commitResult, len(batch))
	settled := func(changes []staged, err error) map[string]commitResult {
		r := commitResult{}
		if err != nil {
			r = commitResult{Err: err.Error(), Partial: true}
		}
		for _, s := range changes {
			res[s.name] = r
		}
		return res
	}
	err := h.reload(ctx, batch)
	if !isRefused(err) {
		return settled(batch, err)
	}
	rejected := h.check(ctx)
	if rejected == nil {
		rejected = err // refused, yet the check passes: say what HAProxy did
	}
	var ok []staged
	for _, s := range batch {
		if s.next != nil {
			if cerr := h.checkOne(ctx, h.fragment(s.name)); cerr != nil {
				res[s.name] = h.rolledBack(ctx, cerr, s)
				continue
			}
		}
		ok = append(ok, s)
	}
	if len(ok) > 0 && len(ok) < len(batch) {
		// Without the changes HAProxy rejects on their own.
		if rejected = h.check(ctx); rejected == nil {
			if err := h.reload(ctx, ok); !isRefused(err) {
				return settled(ok, err)
			}
			rejected = err
		}
	}
	r := h.rolledBack(ctx, rejected, ok...)
	for _, s := range ok {
		res[s.name] = r
	}
	return res
}

// rolledBack restores the fragments of changes after HAProxy rejected
// them (err) and returns the result that says so.
func (h *Host) rolledBack(ctx context.Context, err error, changes ...staged) commitResult {
	if rerr := h.rollback(ctx, changes); rerr != nil {
		return commitResult{Err: fmt.Sprintf("%v; restoring the previous fragment failed too: %v", err, rerr)}
	}
	return commitResult{Err: fmt.Sprintf("%v; the previous configuration was restored and the running HAProxy keeps it", err)}
}

// rollback restores the fragments of batch as they were before their
// changes, under the host's lock.
func (h *Host) rollback(ctx context.Context, batch []staged) error {
	unlock, err := h.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	var errs []error
	for _, s := range batch {
		if err := h.writeFragment(ctx, s.name, s.old, s.hadOld); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// settle writes each change's result into its record, for every change of
// batch that was not replaced since.
func (h *Host) settle(ctx context.Context, batch []staged, res map[string]commitResult) error {
	unlock, err := h.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	for _, s := range batch {
		c, err := h.readPending(ctx, s.name)
		if err != nil {
			return err
		}
		if c == nil || c.Token != s.change.Token {
			continue
		}
		r := res[s.name]
		r.At = time.Now().UTC()
		c.Result = &r
		if err := h.writePending(ctx, s.name, c); err != nil {
			return err
		}
	}
	return nil
}

// checkOne validates the fragment file alone with the base configuration.
func (h *Host) checkOne(ctx context.Context, file string) error {
	_, err := h.T.Run(ctx, nil, h.HAProxy, "-c", "-q", "-f", h.p("base.cfg"), "-f", file)
	if err != nil {
		return fmt.Errorf("HAProxy rejected the configuration: %w", ownOutput(err, file))
	}
	return nil
}

func newToken() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
