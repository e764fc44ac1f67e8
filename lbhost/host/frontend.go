// HAProxy frontends on the host: apply, read back (Drift when not in effect)
// and delete.

package host

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/tfccm/tfccm/lbhost/haproxy"
	"github.com/tfccm/tfccm/lbhost/transport"
)

// Drift is an object on the host that is there but not in effect: a
// fragment lbhost cannot read back (edited by hand or truncated) or that
// HAProxy has not loaded, a VIP's claim without its address or the
// reverse, a routed VIP's config without its claim. The next apply writes
// it again; a destroy must still remove it.
type Drift struct{ Reason string }

func (d *Drift) Error() string { return d.Reason }

func (h *Host) fragment(name string) string { return h.p("fragments", name+".cfg") }

// ReadFrontend returns the load balancer as it is on the host, nil if its
// fragment does not exist, or a *Drift error if it cannot be parsed.
func (h *Host) ReadFrontend(ctx context.Context, name string) (*haproxy.Frontend, error) {
	if !haproxy.ValidName(name) {
		return nil, fmt.Errorf("name %q is not a load balancer name", name)
	}
	if err := h.needDir(); err != nil {
		return nil, err
	}
	data, err := h.T.ReadFile(ctx, h.fragment(name))
	if transport.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: read frontend %s: %w", h.T, name, err)
	}
	f, err := haproxy.Parse(data)
	if err != nil {
		return nil, &Drift{Reason: "fragment " + notLbhosts(h.fragment(name))}
	}
	if f.Name != name { // a valid name: Parse checked it
		return nil, &Drift{Reason: fmt.Sprintf("fragment %s.cfg changed outside lbhost: it holds load balancer %s", name, f.Name)}
	}
	if live, err := h.live(ctx, f); err == nil && !live {
		return nil, &Drift{Reason: fmt.Sprintf("fragment %s.cfg is not loaded by the running HAProxy", name)}
	}
	return &f, nil
}

// ApplyFrontend writes f's fragment, checks it and commits it: the whole
// configuration is checked with haproxy -c and HAProxy reloaded, once for
// every change staged at the time (commit.go). A rejected configuration is
// rolled back before anything reloads, so the running load balancer never
// changes. Health state is carried over the reload only for servers whose
// address, port and check are unchanged.
func (h *Host) ApplyFrontend(ctx context.Context, f haproxy.Frontend) error {
	data, err := haproxy.Render(f)
	if err != nil {
		return err
	}
	token, err := h.stageFrontend(ctx, f.Name, &f, data)
	if err != nil || token == "" {
		return err
	}
	return h.commit(ctx, f.Name, token)
}

// DeleteFrontend removes exactly name's fragment and commits the removal.
func (h *Host) DeleteFrontend(ctx context.Context, name string) error {
	if !haproxy.ValidName(name) {
		return fmt.Errorf("name %q is not a load balancer name", name)
	}
	token, err := h.stageFrontend(ctx, name, nil, nil)
	if err != nil || token == "" {
		return err
	}
	return h.commit(ctx, name, token)
}

// stageFrontend stages f's fragment data (f nil: the removal of name's
// fragment) under the host's lock, after checking its ports and the
// fragment on its own. It returns "" when there is nothing to commit: the
// fragment is there and loaded, or (removal) already gone.
func (h *Host) stageFrontend(ctx context.Context, name string, f *haproxy.Frontend, data []byte) (string, error) {
	unlock, err := h.lock(ctx)
	if err != nil {
		return "", err
	}
	defer unlock()
	if f != nil {
		if err := h.checkPortsFree(ctx, *f); err != nil {
			return "", err
		}
	}
	file := h.fragment(name)
	old, err := h.T.ReadFile(ctx, file)
	exists := err == nil
	if err != nil && !transport.IsNotExist(err) {
		return "", fmt.Errorf("%s: read %s: %w", h.T, file, err)
	}
	prev, err := h.readPending(ctx, name)
	if err != nil {
		return "", err
	}
	committed := prev == nil || prev.Result != nil
	switch {
	case f == nil && !exists && committed:
		return "", nil
	case f != nil && exists && committed && bytes.Equal(old, data):
		if live, err := h.live(ctx, *f); err == nil && live {
			return "", nil
		}
		// Written by a commit whose reload failed (or HAProxy could not
		// tell): reload now.
	}
	return h.stage(ctx, name, data)
}

// checkPortsFree refuses a VIP:port another load balancer binds.
// Staged load balancers count: they bind once committed.
func (h *Host) checkPortsFree(ctx context.Context, f haproxy.Frontend) error {
	files, err := h.T.ReadFiles(ctx, h.p("fragments"))
	if err != nil {
		return fmt.Errorf("%s: %w", h.T, err)
	}
	staged, err := h.stagedFrontends(ctx)
	if err != nil {
		return err
	}
	for name, data := range staged {
		files[name+".cfg"] = data
	}
	mine := map[string]int{}
	for i, b := range haproxy.Binds(f) {
		mine[b] = i
	}
	for n, data := range files {
		other, ok := strings.CutSuffix(n, ".cfg")
		if !ok || other == f.Name {
			continue
		}
		of, err := haproxy.Parse(data)
		if err != nil {
			// Not ours (the local cloud's lb.sh writes its own): look for binds.
			for _, line := range strings.Split(string(data), "\n") {
				if b, ok := strings.CutPrefix(strings.TrimSpace(line), "bind "); ok {
					if i, taken := mine[strings.TrimSpace(b)]; taken {
						return &FieldError{Field: fmt.Sprintf("ports[%d].port", i), Msg: fmt.Sprintf("%s is already used by load balancer %s on %s", b, other, h.T)}
					}
				}
			}
			continue
		}
		for _, b := range haproxy.Binds(of) {
			if i, taken := mine[b]; taken {
				return &FieldError{Field: fmt.Sprintf("ports[%d].port", i), Msg: fmt.Sprintf("%s is already used by load balancer %s on %s", b, other, h.T)}
			}
		}
	}
	return nil
}

// check validates the whole configuration as HAProxy will load it.
func (h *Host) check(ctx context.Context) error {
	_, err := h.T.Run(ctx, nil, h.HAProxy, "-c", "-q", "-f", h.p("base.cfg"), "-f", h.p("fragments"))
	if err != nil {
		return fmt.Errorf("HAProxy rejected the configuration: %w", ownOutput(err, h.p("fragments")+"/"))
	}
	return nil
}

// live reports whether the running HAProxy worker has every backend of f.
// An unreachable master CLI is an error, and so is an answer that is not
// a backend list: while HAProxy reloads, the master may close the
// connection without an answer, which says nothing about f.
func (h *Host) live(ctx context.Context, f haproxy.Frontend) (bool, error) {
	out, err := h.masterCLI(ctx, "@1 show backend")
	if err != nil {
		return false, err
	}
	if !strings.HasPrefix(out, "# name\n") {
		return false, fmt.Errorf("%s: HAProxy's show backend answered %q", h.T, firstLine(out))
	}
	have := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		have[strings.TrimSpace(l)] = true
	}
	for _, p := range f.Ports {
		if !have[haproxy.BackendName(f.Name, p.Port)] {
			return false, nil
		}
	}
	return true, nil
}
