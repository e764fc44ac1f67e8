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
// the host's lock: its fragment is written, checked on its own and
// recorded in Dir/pending/NAME.json with what to restore if the whole
// configuration is rejected. It then waits for Dir/commit.lock. Whoever
// holds that lock commits every staged change at once: one haproxy -c over
// the whole configuration and one reload, writing each change's result
// into its record. A change whose record already carries a result when its
// turn comes was committed by someone else. Changes that arrive while a
// commit runs (one reload of a few hundred frontends takes a second on a
// busy host) share the next one, so N concurrent applies cost about one
// check and one reload instead of N.
//
// Any process may commit (another apply's provider, a later apply after a
// crash): a change staged by a process that died is committed by the next
// one. Only the staging process reads its result and removes its record.

// pendingChange is a staged change of one load balancer's fragment.
type pendingChange struct {
	// Token identifies the staging call.
	Token string `json:"token"`
	// Old is the fragment before the first change not yet committed
	// (HadOld false: there was none), restored when the whole
	// configuration is rejected.
	Old    []byte `json:"old,omitempty"`
	HadOld bool   `json:"had_old"`
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

func (h *Host) pendingFile(name string) string { return h.p("pending", name+".json") }

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
		// Not ours to trust: a commit restores nothing for it.
		return nil, nil
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

// stage records a change of name's fragment for the next commit and
// writes it (data; nil removes the fragment). old and exists are the
// fragment as it is, prev its earlier staged change (nil if none). The
// record is written first, so a process that dies in between leaves a
// change the next commit can roll back. The caller holds the host's lock
// and returns the change's token to commit.
func (h *Host) stage(ctx context.Context, name string, prev *pendingChange, old []byte, exists bool, data []byte) (string, error) {
	c := &pendingChange{Token: newToken(), Old: old, HadOld: exists}
	if prev != nil && prev.Result == nil {
		// Staged earlier and not committed yet (its process died):
		// the running HAProxy still has what that change replaced.
		c.Old, c.HadOld = prev.Old, prev.HadOld
	}
	if err := h.writePending(ctx, name, c); err != nil {
		return "", err
	}
	if err := h.writeFragment(ctx, name, data, data != nil); err != nil {
		return "", err
	}
	return c.Token, nil
}

// unstage undoes stage: the fragment is old again and the staged change
// prev. The caller holds the host's lock.
func (h *Host) unstage(ctx context.Context, name string, prev *pendingChange, old []byte, exists bool) error {
	err := h.writeFragment(ctx, name, old, exists)
	if prev != nil {
		err = errors.Join(err, h.writePending(ctx, name, prev))
	} else if rerr := h.T.Remove(ctx, h.pendingFile(name)); rerr != nil {
		err = errors.Join(err, fmt.Errorf("%s: %w", h.T, rerr))
	}
	return err
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
// before it was committed.
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
	if c == nil || c.Token != token {
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

// staged is one change in a commit: its record and the load balancer as
// it was (prev) and will be (next, nil when removed), for the server state
// carried over the reload.
type staged struct {
	name       string
	change     pendingChange
	prev, next *haproxy.Frontend
}

// batch reads every change staged and not committed yet.
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
		if c.HadOld {
			if p, err := haproxy.Parse(c.Old); err == nil {
				s.prev = &p
			}
		}
		if now, err := h.T.ReadFile(ctx, h.fragment(name)); err == nil {
			if n, err := haproxy.Parse(now); err == nil {
				s.next = &n
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// commitBatch checks the whole configuration and reloads HAProxy once for
// batch. A rejected configuration is rolled back (each change's fragment
// restored) and nothing reloads.
func (h *Host) commitBatch(ctx context.Context, batch []staged) commitResult {
	if err := h.check(ctx); err != nil {
		if rerr := h.rollback(ctx, batch); rerr != nil {
			return commitResult{Err: fmt.Sprintf("%v; restoring the previous fragment failed too: %v", err, rerr)}
		}
		return commitResult{Err: fmt.Sprintf("%v; the previous configuration was restored and HAProxy was not reloaded", err)}
	}
	if err := h.reload(ctx, batch); err != nil {
		return commitResult{Err: err.Error(), Partial: true}
	}
	return commitResult{}
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
		if c, err := h.readPending(ctx, s.name); err != nil || c == nil || c.Token != s.change.Token {
			continue // replaced since: the later change rolls back itself
		}
		if err := h.writeFragment(ctx, s.name, s.change.Old, s.change.HadOld); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// settle writes res into the record of every change of batch that was not
// replaced since.
func (h *Host) settle(ctx context.Context, batch []staged, res commitResult) error {
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
		r := res
		r.At = time.Now().UTC()
		c.Result = &r
		if err := h.writePending(ctx, s.name, c); err != nil {
			return err
		}
	}
	return nil
}

// checkOne validates fragment name alone with the base configuration, so a
// fragment HAProxy rejects is refused before it joins a commit.
func (h *Host) checkOne(ctx context.Context, name string) error {
	_, err := h.T.Run(ctx, nil, h.HAProxy, "-c", "-q", "-f", h.p("base.cfg"), "-f", h.fragment(name))
	if err != nil {
		return fmt.Errorf("HAProxy rejected the configuration: %w", err)
	}
	return nil
}

func newToken() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
