package lbcontroller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics/testutil"

	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// hostRenderer is fakeRenderer with a hosts health module that reads
// every Service but "own".
type hostRenderer struct {
	fakeRenderer
	handed *[]string // the ids of each RenderHostHealth call
}

func (hostRenderer) HostHealthModule(svc *corev1.Service) (string, bool) {
	return "loadbalancer", svc.Name != "own"
}

func (r hostRenderer) RenderHostHealth(lbs []templates.HostHealthLB) (*workspace.Spec, error) {
	for _, lb := range lbs {
		*r.handed = append(*r.handed, lb.ID)
	}
	return &workspace.Spec{Name: templates.HostHealthWorkspace}, nil
}

// hostProberFake is fakeProber with workspace directories holding applied
// inputs and a hosts health module answering entries (or err).
type hostProberFake struct {
	*fakeProber
	dir     string
	entries map[string]string // load balancer id -> its backends output
	hostErr error
	reads   int
}

func (f *hostProberFake) Dir(name string) string { return filepath.Join(f.dir, name) }

func (f *hostProberFake) ProbeSpec(context.Context, *workspace.Spec) (map[string]json.RawMessage, error) {
	f.reads++
	if f.hostErr != nil {
		return nil, f.hostErr
	}
	lbs := map[string]map[string]json.RawMessage{}
	for id, backends := range f.entries {
		lbs[id] = map[string]json.RawMessage{"backends": json.RawMessage(backends), "vip_holders": json.RawMessage("null")}
	}
	raw, _ := json.Marshal(lbs)
	return map[string]json.RawMessage{templates.HostHealthOutput: raw}, nil
}

// TestHealthRoundHostHealth: with a set's hosts health module, one read
// per round serves every load balancer it answers for (their own health
// modules are not run); one it has no entry for, and one of a module it
// does not read, are read by their own health modules; a failed hosts
// read keeps the last reading of every load balancer handed to it, with
// no fallback to a read per load balancer.
func TestHealthRoundHostHealth(t *testing.T) {
	registerHealth()
	var handed []string
	render := hostRenderer{handed: &handed}
	l, _ := newPhaseTest(&fakeLBEngine{}, render)
	dir := t.TempDir()
	svcs := map[string]*corev1.Service{}
	for _, n := range []string{"web1", "web2", "own"} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n, UID: types.UID("u-" + n)},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
		svcs[n] = svc
		name := render.WorkspaceName(svc)
		l.services[name] = &lbEntry{svc: svc, nodes: []string{"a", "b"}}
		if err := os.MkdirAll(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
		inputs := fmt.Sprintf("load_balancer_id = \"id-%s\"\nservice = { ip_families = [\"IPv4\"] }\n", n)
		if err := os.WriteFile(filepath.Join(dir, name, templates.TfvarsFile), []byte(inputs), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	own := &fakeProber{phase: workspace.PhaseApplied, outputs: `[{"node":"a","healthy":true},{"node":"b","healthy":true}]`}
	p := &hostProberFake{fakeProber: own, dir: dir, entries: map[string]string{"id-web1": `[{"node":"a","healthy":true},{"node":"b","healthy":false}]`}}
	degraded := func(n string) string {
		c, _ := l.conds.get(svcs[n].UID, ConditionDegraded)
		return c.Message
	}
	hostReads := func() float64 {
		v, _ := testutil.GetCounterMetricValue(healthReadsTotal.WithLabelValues(healthReadHosts))
		return v
	}
	readsBefore := hostReads()

	l.healthRound(context.Background(), p, 2)
	sort.Strings(handed)
	sort.Strings(own.probed)
	wantProbed := []string{render.WorkspaceName(svcs["own"]), render.WorkspaceName(svcs["web2"])}
	sort.Strings(wantProbed)
	if p.reads != 1 || !slices.Equal(handed, []string{"id-web1", "id-web2"}) || !slices.Equal(own.probed, wantProbed) {
		t.Errorf("hosts reads %d handed %v, own reads %v: want 1 read of id-web1 and id-web2, own reads %v", p.reads, handed, own.probed, wantProbed)
	}
	for n, want := range map[string]string{"web1": "unhealthy: b (1 of 2 backends up)", "web2": "all 2 backends are healthy", "own": "all 2 backends are healthy"} {
		if got := degraded(n); got != want {
			t.Errorf("%s: Degraded %q, want %q", n, got, want)
		}
	}
	if got := hostReads() - readsBefore; got != 1 {
		t.Errorf("tfccm_load_balancer_health_reads_total{read=hosts} grew by %v, want 1", got)
	}

	// The hosts read fails: web1 and web2 keep their last reading and
	// are not read one by one.
	own.probed, p.hostErr = nil, errors.New("lb-a: HAProxy's show servers state answered nothing")
	own.outputs = `[]`
	l.healthRound(context.Background(), p, 2)
	if !slices.Equal(own.probed, []string{render.WorkspaceName(svcs["own"])}) {
		t.Errorf("after a failed hosts read, own reads %v: want only own's", own.probed)
	}
	if got := degraded("web1"); got != "unhealthy: b (1 of 2 backends up)" {
		t.Errorf("web1 after a failed hosts read: Degraded %q, want the last reading", got)
	}
	if got := degraded("own"); got != "the load balancer has no backends" {
		t.Errorf("own: Degraded %q", got)
	}
}
