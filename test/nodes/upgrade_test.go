package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/deploy"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/harness"
)

// TestCCMUpgradeOnRealNodes installs tfccm as a user of a release would —
// the release's packaged chart (.tgz) and its image archive imported into
// the nodes' containerd — as the chart's two leader-elected replicas, has
// it serve a LoadBalancer, then `helm upgrade`s it to a second build (the
// image of `make image`, stamped with the tree's version, and logLevel 3:
// the pods roll, so the lead moves to a new process) and `helm rollback`s
// it to the release. Through each, at 10 requests/s to the Service's VIP:
// no request fails, the Lease never names a second holder while the first
// one's pod still runs (never two leaders), and no workspace is re-applied
// (no TerraformApplying Event, no state serial moves).
//
// The release is TFCCM_DIST's (a `make release` dist/), else the test
// builds one for the machine's platform with `make release` (minutes).
func TestCCMUpgradeOnRealNodes(t *testing.T) {
	needNodes(t)
	ctx := context.Background()
	chart, releaseImage := releaseArtifacts(t)
	nextImage := imageArchive(t)
	start := time.Now()
	ic := installInClusterFrom(t, releaseImage, chart, upgradeLayout)
	client := ic.client
	ccmLog := func() string { return ccmPodLogs(client, 40) }
	nextRef, _, err := ic.c.ImportImage(ctx, nextImage)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("installed %s with image %s; upgrading to %s", filepath.Base(chart), ic.ref, nextRef)

	pods := waitRollout(t, client, ic.ref, "2")
	waitLeaderPod(t, client, pods)
	vip, podNames := ic.serveWeb(t, ccmLog)
	t.Logf("web served at %s %s after the start", vip, time.Since(start).Round(time.Second))

	values := func(ref, logLevel string) string {
		v, err := inClusterValues(ic.c, ic.hosts, ref, upgradeLayout+"logLevel: "+logLevel+"\n")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	step := func(name, ref, logLevel string, do func() error) {
		t.Helper()
		// The route and load balancer workspaces have settled once every
		// state is written and the first leader has nothing left to do.
		settle(t, client)
		beforeDocs := stateDocs(t, client)
		before := serialsOf(t, beforeDocs)
		applying := countEvents(t, client, "TerraformApplying")
		holder := leaseHolder(t, client)
		load := startLoad(vip, 100*time.Millisecond)
		lease := watchLease(client)
		leaving := followLogs(client, ccmSelector)
		began := time.Now()
		if err := do(); err != nil {
			t.Fatal(err)
		}
		pods := waitRollout(t, client, ref, logLevel)
		err := harness.Eventually(ctx, time.Minute, "a process of the new pods holds the lease", func(ctx context.Context) error {
			h := leaseHolder(t, client)
			if h == holder || h == "" {
				return fmt.Errorf("holder %q", h)
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s: %v\n%s", name, err, ccmLog())
		}
		rolled := time.Since(began)
		time.Sleep(10 * time.Second) // the new leader's first syncs
		ok, failed := load.stop()
		changes := lease.stop()
		leftLogs := leaving.stop()
		stepFailed := t.Failed()

		t.Logf("%s: pods %s and %s ready %s after helm; %d requests, %d failed; lease %s (longest without a leader: %s); state serials %v",
			name, pods[0].Name, pods[1].Name, rolled.Round(100*time.Millisecond), ok+len(failed), len(failed), changes,
			changes.maxGap().Round(100*time.Millisecond), before)
		if len(failed) > 0 {
			t.Errorf("%s: %d of %d requests to %s failed: %v", name, len(failed), ok+len(failed), vip, failed[:min(len(failed), 5)])
		}
		if ok < int(rolled/time.Second)*5 {
			t.Errorf("%s: only %d requests succeeded in %s; the load did not run", name, ok, rolled)
		}
		if err := changes.check(holder); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if n := countEvents(t, client, "TerraformApplying") - applying; n != 0 {
			t.Errorf("%s: %d TerraformApplying Events: a workspace was re-applied", name, n)
		}
		afterDocs := stateDocs(t, client)
		if after := serialsOf(t, afterDocs); !slices.Equal(before, after) {
			t.Errorf("%s: state serials moved from %v to %v (helm at %s; lease %s):\n%s", name, before, after,
				began.UTC().Format(clock), changes.times(), strings.Join(stateChanges(beforeDocs, afterDocs), "\n"))
		}
		if !stepFailed && t.Failed() {
			t.Logf("%s: the logs of the CCM pods that ran when helm began:\n%s", name, leftLogs)
		}
		waitServes(t, vip, podNames)
	}
	step("upgrade", nextRef, "3", func() error { return ic.rel.Upgrade(chart, values(nextRef, "3")) })
	step("rollback", ic.ref, "2", func() error { return ic.rel.Rollback(0) })
	if t.Failed() {
		return
	}

	// The rolled-back release still applies: a second Service gets a VIP.
	vip2 := createLBService(t, client, "web2", ccmLog)
	waitServes(t, vip2, podNames)
	for _, name := range []string{"web", "web2"} {
		if err := client.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := harness.WaitServiceDeleted(ctx, client, "default", name, 2*time.Minute); err != nil {
			t.Fatalf("%v\n%s", err, ccmLog())
		}
	}
}

// upgradeLayout is haLayout with the CCM's default retry period (750ms,
// defaults.go) instead of 1s: the hand-over bound checked below (2 s after
// a release) is the default's, a standby's retry jittered up to 2.2 times
// the period (1.65 s); with 1s it would be 2.2 s before any apiserver call.
const upgradeLayout = `mode: deployment
replicas: 2
hostNetwork: true
leaderElection:
  enabled: true
  leaseDuration: 8s
  renewDeadline: 5s
`

// releaseArtifacts returns the packaged chart and the machine platform's
// image archive of the release in TFCCM_DIST, or of one `make release`
// builds into a temporary directory when TFCCM_DIST is unset.
func releaseArtifacts(t *testing.T) (chart, image string) {
	t.Helper()
	dist := os.Getenv("TFCCM_DIST")
	if dist == "" {
		root, err := repo.Root()
		if err != nil {
			t.Fatal(err)
		}
		version, err := chartAppVersion(root)
		if err != nil {
			t.Fatal(err)
		}
		dist = t.TempDir()
		cmd := exec.Command("make", "--no-print-directory", "release", "VERSION="+version, "ALLOW_DIRTY=1",
			"RELEASE_PLATFORMS=linux/"+runtime.GOARCH, "DIST="+dist)
		cmd.Dir = root
		began := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make release: %v\n%s", err, out)
		}
		t.Logf("make release %s into %s in %s", version, dist, time.Since(began).Round(time.Second))
	}
	one := func(pattern string) string {
		m, _ := filepath.Glob(filepath.Join(dist, pattern))
		if len(m) != 1 {
			t.Fatalf("release in %s: %v match %s, want one", dist, m, pattern)
		}
		return m[0]
	}
	return one("tfccm-*.tgz"), one("tfccm_v*_image_linux_" + runtime.GOARCH + ".tar")
}

// chartAppVersion is the in-tree chart's appVersion: the release the tree
// names, the only VERSION `make release` accepts of it.
func chartAppVersion(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, deploy.Chart, "Chart.yaml"))
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^appVersion:\s*"?(v[0-9.]+)"?\s*$`).FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("no appVersion in %s/Chart.yaml", deploy.Chart)
	}
	return string(m[1]), nil
}

// waitRollout waits until the chart's pods are exactly two ready ones,
// none terminating, both running ref with --v=logLevel, and returns them.
func waitRollout(t *testing.T, client kubernetes.Interface, ref, logLevel string) []corev1.Pod {
	t.Helper()
	var ready []corev1.Pod
	err := harness.Eventually(context.Background(), 3*time.Minute, "2 CCM pods of "+ref+" with --v="+logLevel+" ready", func(ctx context.Context) error {
		pods, err := client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: ccmSelector})
		if err != nil {
			return err
		}
		ready = nil
		for _, p := range pods.Items {
			c := p.Spec.Containers[0]
			if p.DeletionTimestamp != nil || c.Image != ref || !slices.Contains(c.Args, "--v="+logLevel) {
				return fmt.Errorf("pod %s (image %s, terminating %v) is not of the rollout", p.Name, c.Image, p.DeletionTimestamp != nil)
			}
			if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) == 0 || !p.Status.ContainerStatuses[0].Ready {
				return fmt.Errorf("pod %s not ready: %s", p.Name, p.Status.Phase)
			}
			ready = append(ready, p)
		}
		if len(ready) != 2 {
			return fmt.Errorf("%d pods ready", len(ready))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ready
}

// settle waits until the CCM has had nothing to apply for 5 s: the count
// of TerraformApplying/TerraformApplied Events stays put.
func settle(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	last, since := -1, time.Now()
	err := harness.Eventually(context.Background(), 2*time.Minute, "the workspaces settle", func(ctx context.Context) error {
		n := countEvents(t, client, "TerraformApplying") + countEvents(t, client, "TerraformApplied")
		if n != last {
			last, since = n, time.Now()
		}
		if time.Since(since) < 5*time.Second {
			return fmt.Errorf("%d apply Events, the last change %s ago", n, time.Since(since).Round(time.Second))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// countEvents sums the counts of the Events of reason in every namespace.
func countEvents(t *testing.T, client kubernetes.Interface, reason string) int {
	t.Helper()
	evs, err := client.CoreV1().Events("").List(context.Background(), metav1.ListOptions{FieldSelector: "reason=" + reason})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, e := range evs.Items {
		n += max(int(e.Count), 1)
	}
	return n
}

// stateSerials are the serials of the Terraform states in the state's namespace,
// in the order of their Secrets' names.
func stateSerials(t *testing.T, client kubernetes.Interface) []int {
	t.Helper()
	return serialsOf(t, stateDocs(t, client))
}

// serialsOf are the serials of docs.
func serialsOf(t *testing.T, docs []stateDoc) []int {
	t.Helper()
	var out []int
	for _, d := range docs {
		var st struct{ Serial int }
		if err := json.Unmarshal([]byte(d.json), &st); err != nil {
			t.Fatalf("state %s: %v", d.name, err)
		}
		out = append(out, st.Serial)
	}
	return out
}

// clock is how the diagnostics print times (UTC, as the CCM's log does).
const clock = "15:04:05.000"

// stateChanges says, for each state that is new or changed between before
// and after, its Secret, when and by whom it was last written, and which
// JSON paths of the state changed: paths only, never values (a state may
// hold sensitive ones).
func stateChanges(before, after []stateDoc) []string {
	old := map[string]stateDoc{}
	for _, d := range before {
		old[d.name] = d
	}
	var out []string
	for _, d := range after {
		o, ok := old[d.name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("  %s: new, written by %q at %s", d.name, d.manager, d.written.UTC().Format(clock)))
		case o.json != d.json:
			var a, b any
			_ = json.Unmarshal([]byte(o.json), &a)
			_ = json.Unmarshal([]byte(d.json), &b)
			paths := jsonPaths("", a, b, nil)
			if len(paths) > 20 {
				paths = append(paths[:20], fmt.Sprintf("(%d more)", len(paths)-20))
			}
			same := ""
			if sameButOrder(a, b) {
				// OpenTofu encodes check_results in Go map order
				// (statefile/version4.go), so its "state unchanged"
				// test before a write fails on an unchanged state.
				same = " (the same state but for the serial and the order of check_results: a no-op apply that tofu persisted)"
			}
			out = append(out, fmt.Sprintf("  %s: written by %q at %s; changed: %s%s", d.name, d.manager,
				d.written.UTC().Format(clock), strings.Join(paths, ", "), same))
		}
	}
	return out
}

// sameButOrder reports whether states a and b (decoded JSON) are equal but
// for their serials and the order of their check_results and of each
// result's objects.
func sameButOrder(a, b any) bool {
	norm := func(v any) string {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		c := map[string]any{}
		for k, x := range m {
			c[k] = x
		}
		delete(c, "serial")
		if crs, ok := c["check_results"].([]any); ok {
			var keys []string
			for _, cr := range crs {
				if crm, ok := cr.(map[string]any); ok {
					if objs, ok := crm["objects"].([]any); ok {
						var os []string
						for _, o := range objs {
							b, _ := json.Marshal(o)
							os = append(os, string(b))
						}
						slices.Sort(os)
						crm = maps.Clone(crm)
						crm["objects"] = os
					}
					cr = crm
				}
				b, _ := json.Marshal(cr)
				keys = append(keys, string(b))
			}
			slices.Sort(keys)
			c["check_results"] = keys
		}
		b, _ := json.Marshal(c)
		return string(b)
	}
	return norm(a) != "" && norm(a) == norm(b)
}

// jsonPaths appends to out the paths under path where a and b differ.
func jsonPaths(path string, a, b any, out []string) []string {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok {
			return append(out, path)
		}
		keys := map[string]bool{}
		for k := range a {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		slices.Sort(sorted)
		for _, k := range sorted {
			av, aok := a[k]
			bv, bok := bm[k]
			if aok != bok {
				out = append(out, path+"."+k)
				continue
			}
			out = jsonPaths(path+"."+k, av, bv, out)
		}
		return out
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return append(out, path)
		}
		for i := range a {
			out = jsonPaths(fmt.Sprintf("%s[%d]", path, i), a[i], bs[i], out)
		}
		return out
	default:
		if fmt.Sprint(a) != fmt.Sprint(b) {
			out = append(out, path)
		}
		return out
	}
}

// logFollow follows the logs of the pods a selector matched when it
// began (kube-system), to the end of each pod: the log of a pod the
// rollout deletes is gone afterwards.
type logFollow struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	logs   map[string]*strings.Builder
}

func followLogs(client kubernetes.Interface, selector string) *logFollow {
	ctx, cancel := context.WithCancel(context.Background())
	f := &logFollow{cancel: cancel, logs: map[string]*strings.Builder{}}
	pods, err := client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		f.logs["(list)"] = &strings.Builder{}
		f.logs["(list)"].WriteString(err.Error())
		return f
	}
	for _, p := range pods.Items {
		b := &strings.Builder{}
		f.logs[p.Name] = b
		f.wg.Go(func() {
			since := int64(5)
			rc, err := client.CoreV1().Pods("kube-system").GetLogs(p.Name, &corev1.PodLogOptions{Follow: true, SinceSeconds: &since}).Stream(ctx)
			if err != nil {
				f.mu.Lock()
				b.WriteString(err.Error())
				f.mu.Unlock()
				return
			}
			defer rc.Close()
			buf := make([]byte, 32<<10)
			for {
				n, err := rc.Read(buf)
				f.mu.Lock()
				b.Write(buf[:n])
				f.mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	return f
}

// stop ends the following and returns each pod's log since it began,
// without the lines of the apiserver's CA bundle noise.
func (f *logFollow) stop() string {
	f.cancel()
	f.wg.Wait()
	var out strings.Builder
	for name, b := range f.logs {
		fmt.Fprintf(&out, "pod %s:\n", name)
		for _, l := range strings.Split(b.String(), "\n") {
			if l != "" && !strings.Contains(l, "configmap_cafile_content.go") && !strings.Contains(l, "flags.go") {
				out.WriteString("    " + l + "\n")
			}
		}
	}
	return out.String()
}

// load sends GET /hostname to a VIP at a fixed rate, each request in its
// own goroutine (a slow one does not hold the next back).
type load struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	ok     int
	failed []string
}

func startLoad(vip string, every time.Duration) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{cancel: cancel}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case at := <-tick.C:
				l.wg.Add(1)
				go func() {
					defer l.wg.Done()
					rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					defer cancel()
					_, err := httpGet(rctx, "http://"+vip+"/hostname")
					l.mu.Lock()
					defer l.mu.Unlock()
					if err != nil {
						l.failed = append(l.failed, at.Format("15:04:05.000")+": "+err.Error())
					} else {
						l.ok++
					}
				}()
			}
		}
	}()
	return l
}

// stop ends the load once its requests are answered and returns how many
// succeeded and the failures.
func (l *load) stop() (int, []string) {
	l.cancel()
	l.wg.Wait()
	return l.ok, l.failed
}

// leaseWatch polls the CCM's leader Lease every 100 ms and records each
// holder with when it was first and last seen, and which CCM pods ran
// (not terminating) when it was first seen and when the next one was.
type leaseWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
	spans  leaseSpans
}

type leaseSpan struct {
	holder      string
	first, last time.Time
	// acquired and renewed: the Lease's acquireTime and its last
	// renewTime under the holder.
	acquired, renewed time.Time
	// released: when the Lease was seen without a holder after this one,
	// which gave it back on shutdown (handover.go); zero if it was not.
	released time.Time
	// running: the CCM pods not terminating when the holder was first seen;
	// runningAtNext: those of them still not terminating when the next
	// holder was.
	running, runningAtNext []string
}

type leaseSpans []leaseSpan

func watchLease(client kubernetes.Interface) *leaseWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &leaseWatch{cancel: cancel, done: make(chan struct{})}
	running := func() []string {
		pods, err := client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: ccmSelector})
		if err != nil {
			return []string{"error: " + err.Error()}
		}
		var names []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				names = append(names, p.Name)
			}
		}
		return names
	}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			l, err := client.CoordinationV1().Leases("kube-system").Get(ctx, annotations.LeaderLease, metav1.GetOptions{})
			now := time.Now()
			if n := len(w.spans); err == nil && (l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "") && n > 0 && w.spans[n-1].released.IsZero() {
				w.spans[n-1].released = now
			}
			if err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
				h := *l.Spec.HolderIdentity
				n := len(w.spans)
				var acquired, renewed time.Time
				if l.Spec.AcquireTime != nil {
					acquired = l.Spec.AcquireTime.Time
				}
				if l.Spec.RenewTime != nil {
					renewed = l.Spec.RenewTime.Time
				}
				if n > 0 && w.spans[n-1].holder == h {
					w.spans[n-1].last, w.spans[n-1].renewed = now, renewed
				} else {
					pods := running()
					if n > 0 {
						prev := &w.spans[n-1]
						for _, p := range prev.running {
							if slices.Contains(pods, p) {
								prev.runningAtNext = append(prev.runningAtNext, p)
							}
						}
					}
					w.spans = append(w.spans, leaseSpan{holder: h, first: now, last: now, acquired: acquired, renewed: renewed, running: pods})
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *leaseWatch) stop() leaseSpans {
	w.cancel()
	<-w.done
	return w.spans
}

// check: the lease went from holder to new ones, none twice (a holder
// that came back would have led alongside its successor), each taking
// over only once a pod that ran under the previous one was terminating
// (the leader leaving, not a second one). A holder that gave the Lease
// back is followed within 2 s of the release; one that did not (killed)
// within 15 s of its last renewal: the lease duration (8 s) after a
// renewal up to a retry period before the stop, then the successor's next
// retry, plus slack for a loaded machine.
func (s leaseSpans) check(holder string) error {
	var hs []string
	for _, sp := range s {
		if slices.Contains(hs, sp.holder) {
			return fmt.Errorf("lease holders %s: %s held it twice", s, sp.holder)
		}
		hs = append(hs, sp.holder)
	}
	if len(s) < 2 || s[0].holder != holder {
		return fmt.Errorf("lease holders %s, want %s then new ones", s, holder)
	}
	for i, sp := range s[:len(s)-1] {
		if len(sp.running) > 0 && len(sp.runningAtNext) == len(sp.running) {
			return fmt.Errorf("lease went from %s to %s while every CCM pod of its time (%v) still ran: two leaders", sp.holder, s[i+1].holder, sp.running)
		}
	}
	if gap := s.maxGap(); gap > 15*time.Second {
		return fmt.Errorf("lease holders %s: no leader for %s (lease duration 8 s)", s, gap)
	}
	// A stopping CCM gives its Lease back (handover.go): a successor takes
	// it at its next retry (--leader-elect-retry-period 750ms, jitter up
	// to 1.65 s), not a lease duration later.
	for i := 1; i < len(s); i++ {
		if !s[i-1].released.IsZero() && s.gapBefore(i) > 2*time.Second {
			return fmt.Errorf("lease holders %s: %s gave the Lease back, its successor took it %s later, want <= 2 s", s, s[i-1].holder, s.gapBefore(i))
		}
	}
	return nil
}

// maxGap is the longest time without a leader: from a holder's last
// renewal to its successor's acquisition.
func (s leaseSpans) maxGap() time.Duration {
	var gap time.Duration
	for i := 1; i < len(s); i++ {
		gap = max(gap, s.gapBefore(i))
	}
	return gap
}

// gapBefore is the time without a leader before holder i: from its
// predecessor's release, or its last renewal if it gave nothing back, to
// holder i's acquisition.
func (s leaseSpans) gapBefore(i int) time.Duration {
	if r := s[i-1].released; !r.IsZero() {
		return s[i].acquired.Sub(r)
	}
	return s[i].acquired.Sub(s[i-1].renewed)
}

// times lists each holder's acquisition and, if it gave the Lease back,
// the release, as clock times (to set beside the CCM's log and the state
// writes).
func (s leaseSpans) times() string {
	var parts []string
	for _, sp := range s {
		p := sp.holder + " acquired " + sp.acquired.UTC().Format(clock)
		if !sp.released.IsZero() {
			p += ", released " + sp.released.UTC().Format(clock)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

func (s leaseSpans) String() string {
	var b strings.Builder
	for i, sp := range s {
		if i > 0 {
			fmt.Fprintf(&b, " -(%s)-> ", s.gapBefore(i).Round(100*time.Millisecond))
		}
		b.WriteString(sp.holder)
	}
	return b.String()
}

// TestStateChanges: a state rewritten with only its serial and the order
// of its check_results changed is told apart from a changed one, and the
// changed paths are named without their values.
func TestStateChanges(t *testing.T) {
	const a = `{"serial":2,"resources":[{"name":"x","instances":[{"attributes":{"secret":"s1"}}]}],"check_results":[{"config_addr":"a","objects":[{"object_addr":"a[0]"},{"object_addr":"a[1]"}]},{"config_addr":"b"}]}`
	const reordered = `{"serial":3,"resources":[{"name":"x","instances":[{"attributes":{"secret":"s1"}}]}],"check_results":[{"config_addr":"b"},{"config_addr":"a","objects":[{"object_addr":"a[1]"},{"object_addr":"a[0]"}]}]}`
	const changed = `{"serial":3,"resources":[{"name":"x","instances":[{"attributes":{"secret":"s2"}}]}],"check_results":[{"config_addr":"a","objects":[{"object_addr":"a[0]"},{"object_addr":"a[1]"}]},{"config_addr":"b"}]}`
	before := []stateDoc{{name: "tfstate-default-x", json: a}}
	got := stateChanges(before, []stateDoc{{name: "tfstate-default-x", json: reordered}})
	if len(got) != 1 || !strings.Contains(got[0], "no-op apply") || !strings.Contains(got[0], ".check_results[0].config_addr") {
		t.Errorf("reordered: %q", got)
	}
	got = stateChanges(before, []stateDoc{{name: "tfstate-default-x", json: changed}, {name: "tfstate-new", json: a}})
	if len(got) != 2 || strings.Contains(got[0], "no-op apply") || !strings.Contains(got[0], ".resources[0].instances[0].attributes.secret") ||
		strings.Contains(got[0], "s1") || strings.Contains(got[0], "s2") || !strings.Contains(got[1], "tfstate-new: new") {
		t.Errorf("changed: %q", got)
	}
	if got := stateChanges(before, before); len(got) != 0 {
		t.Errorf("unchanged: %q", got)
	}
}
