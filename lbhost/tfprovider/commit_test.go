package tfprovider_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfccm/tfccm/lbhost/haproxy"
	"github.com/tfccm/tfccm/lbhost/host"
	"github.com/tfccm/tfccm/lbhost/transport"
)

// showProc is the master's reload count (show proc) and its current
// workers' pids.
func showProc(t *testing.T, c *cloud) (reloads int, workers []string) {
	t.Helper()
	conn, err := net.Dial("unix", filepath.Join(c.dir, "master.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "show proc\n"); err != nil {
		t.Fatal(err)
	}
	_ = conn.(*net.UnixConn).CloseWrite() // the CLI answers once its input ends
	out, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	reloads = -1
	section := ""
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "#") {
			section = line
			continue
		}
		f := strings.Fields(line)
		if len(f) >= 3 && f[1] == "master" {
			if reloads, err = strconv.Atoi(f[2]); err != nil {
				t.Fatalf("show proc: %q", line)
			}
		}
		if section == "# workers" && len(f) >= 2 && f[1] == "worker" {
			workers = append(workers, f[0])
		}
	}
	if reloads < 0 {
		t.Fatalf("show proc without the master's line:\n%s", out)
	}
	return reloads, workers
}

func reloads(t *testing.T, c *cloud) int {
	n, _ := showProc(t, c)
	return n
}

func frontendOn(c *cloud, i int) haproxy.Frontend {
	return haproxy.Frontend{
		Name: fmt.Sprintf("gc_%02d", i), Address: c.gateway, SessionAffinity: "None",
		Ports:    []haproxy.Port{{Port: 20000 + i, NodePort: 30080}},
		Backends: []haproxy.Backend{{Name: "node-a", Address: c.nodeA}},
	}
}

// applyAll applies fronts at once, each on a host of its own (a provider
// process each, as concurrent applies have), and returns their errors.
func applyAll(t *testing.T, c *cloud, fronts []haproxy.Frontend) []error {
	t.Helper()
	errs := make([]error, len(fronts))
	var wg sync.WaitGroup
	for i, f := range fronts {
		h, err := host.New(&transport.Netns{Name: c.netns}, c.dir)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			errs[i] = h.ApplyFrontend(ctx, f)
		}()
	}
	wg.Wait()
	return errs
}

// TestConcurrentFrontendsShareReloads: load balancers applied at the same
// time are committed together, one whole-configuration check and one
// reload for the changes staged meanwhile; every one is loaded when its
// apply returns. A configuration HAProxy rejects as a whole (a broken
// fragment not lbhost's) fails every change of the commit, restores their
// fragments and leaves HAProxy's workers running; a change HAProxy rejects on its own fails
// alone. A change staged by a provider that died goes in with the next
// commit.
func TestConcurrentFrontendsShareReloads(t *testing.T) {
	c := newCloud(t)
	h, err := host.New(&transport.Netns{Name: c.netns}, c.dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	const n = 16
	fronts := make([]haproxy.Frontend, n)
	for i := range fronts {
		fronts[i] = frontendOn(c, i)
	}
	before := reloads(t, c)
	for i, err := range applyAll(t, c, fronts) {
		if err != nil {
			t.Errorf("apply %s: %v", fronts[i].Name, err)
		}
	}
	for _, f := range fronts {
		if got, err := h.ReadFrontend(ctx, f.Name); err != nil || got == nil {
			t.Errorf("%s after its apply returned: %v, %v (want it loaded)", f.Name, got, err)
		}
	}
	took := reloads(t, c) - before
	t.Logf("%d concurrent applies, %d reloads", n, took)
	if took < 1 || took > n*3/4 {
		t.Errorf("%d concurrent applies took %d reloads, want between 1 and %d", n, took, n*3/4)
	}
	if left, _ := os.ReadDir(filepath.Join(c.dir, "pending")); len(left) != 0 {
		t.Errorf("staged changes left after every apply returned: %v", left)
	}

	// A fragment HAProxy rejects that is not lbhost's: every change of
	// the commit fails, nothing reloads, their fragments are as before.
	broken := filepath.Join(c.dir, "fragments", "zz_hand.cfg")
	if err := os.WriteFile(broken, []byte("frontend hand\n  no_such_keyword on\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	changed := make([]haproxy.Frontend, 4)
	for i := range changed {
		changed[i] = frontendOn(c, n+i)
	}
	changed[0] = fronts[0]
	changed[0].Ports = []haproxy.Port{{Port: 21000, NodePort: 30080}}
	_, running := showProc(t, c)
	for i, err := range applyAll(t, c, changed) {
		if err == nil || !strings.Contains(err.Error(), "HAProxy rejected the configuration") || !strings.Contains(err.Error(), "restored and the running HAProxy keeps it") {
			t.Errorf("apply %s with a broken fragment on the host: %v, want the rejection", changed[i].Name, err)
		}
	}
	if _, now := showProc(t, c); !slices.Equal(now, running) {
		t.Errorf("a rejected configuration replaced HAProxy's workers %v with %v", running, now)
	}
	for _, f := range changed[1:] {
		if _, err := os.Stat(filepath.Join(c.dir, "fragments", f.Name+".cfg")); !os.IsNotExist(err) {
			t.Errorf("rejected new load balancer %s left its fragment: %v", f.Name, err)
		}
	}
	if got, err := h.ReadFrontend(ctx, fronts[0].Name); err != nil || got == nil || got.Ports[0].Port != fronts[0].Ports[0].Port {
		t.Errorf("rejected change of %s: reads %+v, %v, want it as it was", fronts[0].Name, got, err)
	}
	if left, _ := os.ReadDir(filepath.Join(c.dir, "pending")); len(left) != 0 {
		t.Errorf("staged changes left after a rejected commit: %v", left)
	}

	// Fixed, the same changes go through, but for one HAProxy rejects on
	// its own (it overflows HAProxy's timers): that one fails and is
	// rolled back, the others of its commit are loaded.
	if err := os.Remove(broken); err != nil {
		t.Fatal(err)
	}
	changed[2].Timeouts.Server = "999999999d"
	for i, err := range applyAll(t, c, changed) {
		switch {
		case i == 2 && (err == nil || !strings.Contains(err.Error(), "HAProxy rejected the configuration") || !strings.Contains(err.Error(), "nothing was changed")):
			t.Errorf("apply %s, whose timeout HAProxy rejects: %v, want the rejection", changed[i].Name, err)
		case i != 2 && err != nil:
			t.Errorf("apply %s after the fix: %v", changed[i].Name, err)
		}
	}
	for i, f := range changed {
		got, err := h.ReadFrontend(ctx, f.Name)
		if i == 2 && (err != nil || got != nil) {
			t.Errorf("the rejected %s reads %+v, %v; want no load balancer", f.Name, got, err)
		}
		if i != 2 && (err != nil || got == nil || got.Ports[0].Port != f.Ports[0].Port) {
			t.Errorf("%s committed with a rejected change: reads %+v, %v", f.Name, got, err)
		}
	}
	if left, _ := os.ReadDir(filepath.Join(c.dir, "pending")); len(left) != 0 {
		t.Errorf("staged changes left after a commit with a rejected change: %v", left)
	}
	// A change whose provider died after staging it is committed by the
	// next commit.
	dead := frontendOn(c, 40)
	data, err := haproxy.Render(dead)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.dir, "pending", dead.Name+".cfg"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.dir, "pending", dead.Name+".json"), []byte(`{"token":"died"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := h.ApplyFrontend(ctx, frontendOn(c, 41)); err != nil {
		t.Fatal(err)
	}
	if got, err := h.ReadFrontend(ctx, dead.Name); err != nil || got == nil {
		t.Errorf("the change staged by a provider that died: %+v, %v after the next commit, want it loaded", got, err)
	}

	for _, f := range fronts[1:] {
		if err := h.DeleteFrontend(ctx, f.Name); err != nil {
			t.Fatal(err)
		}
		if got, err := h.ReadFrontend(ctx, f.Name); err != nil || got != nil {
			t.Errorf("%s after its delete: %v, %v", f.Name, got, err)
		}
	}
}
