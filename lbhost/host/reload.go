// Reloading HAProxy through its master CLI, and waiting for old workers to
// unbind.

package host

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/tfccm/tfccm/lbhost/haproxy"
)

// masterCLI sends one command to HAProxy's master CLI and returns the
// answer (the master closes the connection after one command).
func (h *Host) masterCLI(ctx context.Context, cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := h.T.DialUnix(ctx, h.p("master.sock"))
	if err != nil {
		return "", fmt.Errorf("%s: HAProxy master CLI: %w", h.T, err)
	}
	defer conn.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
	}
	if _, err := io.WriteString(conn, cmd+"\n"); err != nil {
		return "", fmt.Errorf("%s: HAProxy master CLI %q: %w", h.T, cmd, err)
	}
	// Half-close: the CLI answers and closes once it sees the end of input.
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	out, err := io.ReadAll(conn)
	if err != nil {
		return "", fmt.Errorf("%s: HAProxy master CLI %q: %w", h.T, cmd, err)
	}
	return string(out), nil
}

// procs is HAProxy's show proc: the current (not old) workers' pids and
// the master's reload count, and how many reloads failed since the last
// one that succeeded (HAProxy refused the configuration; the old workers
// run on).
type procs struct {
	workers         map[string]bool
	reloads, failed int
}

// showProc reads show proc. An answer without the master's own line (the
// master may close the connection without an answer while it reloads) is
// an error, not "no workers".
func (h *Host) showProc(ctx context.Context) (procs, error) {
	out, err := h.masterCLI(ctx, "show proc")
	if err != nil {
		return procs{}, err
	}
	p := procs{workers: map[string]bool{}}
	master := false
	section := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			section = line
			continue
		}
		f := strings.Fields(line)
		if len(f) >= 3 && f[1] == "master" {
			master = true
			p.reloads, _ = strconv.Atoi(f[2])
			// "<reloads> [failed: <n>]" (HAProxy 2.5+)
			if len(f) >= 5 && f[3] == "[failed:" {
				p.failed, _ = strconv.Atoi(strings.TrimSuffix(f[4], "]"))
			}
		}
		if section == "# workers" && len(f) >= 2 && f[1] == "worker" {
			p.workers[f[0]] = true
		}
	}
	if !master {
		return procs{}, fmt.Errorf("%s: HAProxy's show proc answered %q", h.T, firstLine(out))
	}
	return p, nil
}

// refusedError is a reload HAProxy's master refused: the configuration
// did not load and the old workers run on with the old one.
type refusedError struct{ host string }

func isRefused(err error) bool {
	var r *refusedError
	return errors.As(err, &r)
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("%s: HAProxy refused the new configuration at reload; the running workers keep the old one", e.host)
}

// reload saves the server state (filtered for every load balancer of
// batch: prev is what was running, next what will run, nil when removed),
// reloads the master and waits until a new worker runs the new
// configuration. A configuration the master refuses is a *refusedError.
func (h *Host) reload(ctx context.Context, batch []staged) error {
	before, err := h.showProc(ctx)
	if err != nil {
		return err
	}
	if dump, err := h.masterCLI(ctx, "@1 show servers state"); err == nil && strings.HasPrefix(dump, "1\n") {
		state := []byte(dump)
		for _, s := range batch {
			state = haproxy.FilterServerState(state, s.name, s.prev, s.next)
		}
		if err := h.T.WriteFile(ctx, h.p("server-state"), state); err != nil {
			return fmt.Errorf("%s: save server state: %w", h.T, err)
		}
	} else {
		// No usable dump: load no stale state for these LBs either.
		if data, rerr := h.T.ReadFile(ctx, h.p("server-state")); rerr == nil {
			for _, s := range batch {
				data = haproxy.FilterServerState(data, s.name, nil, nil)
			}
			_ = h.T.WriteFile(ctx, h.p("server-state"), data)
		}
	}
	if _, err := h.masterCLI(ctx, "reload"); err != nil {
		return err
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: waiting for HAProxy's reload: %w", h.T, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
		now, err := h.showProc(ctx)
		if err != nil {
			continue // the master re-executes itself during a reload
		}
		for pid := range now.workers {
			if !before.workers[pid] {
				if !unbinds(batch) {
					return nil
				}
				return h.waitUnbound(ctx, before.workers)
			}
		}
		if now.reloads > before.reloads && now.failed > 0 {
			return &refusedError{host: h.T.String()}
		}
	}
	return fmt.Errorf("%s: HAProxy did not start a worker with the new configuration within 15s (see 'show proc' on %s)", h.T, h.p("master.sock"))
}

// unbinds reports whether a change of batch removes a VIP:port HAProxy
// listens on (or may: a load balancer as it was that cannot be read).
func unbinds(batch []staged) bool {
	for _, s := range batch {
		if s.prev == nil {
			if s.hadOld {
				return true
			}
			continue
		}
		keep := map[string]bool{}
		if s.next != nil {
			for _, b := range haproxy.Binds(*s.next) {
				keep[b] = true
			}
		}
		for _, b := range haproxy.Binds(*s.prev) {
			if !keep[b] {
				return true
			}
		}
	}
	return false
}

// waitUnbound waits until no old worker holds a listening socket, so that
// a port removed by the new configuration no longer answers once the
// apply returns.
func (h *Host) waitUnbound(ctx context.Context, old map[string]bool) error {
	var out []byte
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		out, err = h.T.Run(ctx, nil, "ss", "-Hltnp")
		if err != nil {
			return nil // no ss on the host: the new worker runs, that is what we can tell
		}
		busy := false
		for pid := range old {
			if strings.Contains(string(out), "pid="+pid+",") {
				busy = true
			}
		}
		if !busy {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: waiting for the old HAProxy worker to close its listeners: %w", h.T, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s: an old HAProxy worker still listens 5s after the reload", h.T)
}
