package lbcontroller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics/testutil"

	"github.com/tfccm/tfccm/workspace"
)

// fakeProber answers Probe with outputs (or err) for every workspace.
type fakeProber struct {
	phase   workspace.Phase
	outputs string
	hosts   string // the hosts output ("": none)
	holders string // the vip_holders output ("": none)
	kind    string // the vip_holder_kind output ("": none)
	idle    string // the vip_idle output ("": none)
	bgp     string // the bgp_sessions output ("": none)
	err     error

	mu     sync.Mutex
	probed []string
}

func (f *fakeProber) Status(string) workspace.Status { return workspace.Status{Phase: f.phase} }
func (f *fakeProber) Probe(_ context.Context, name, _, _ string) (map[string]json.RawMessage, error) {
	f.mu.Lock()
	f.probed = append(f.probed, name)
	f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	outs := map[string]json.RawMessage{"backends": json.RawMessage(f.outputs)}
	if f.hosts != "" {
		outs["hosts"] = json.RawMessage(f.hosts)
	}
	if f.holders != "" {
		outs["vip_holders"] = json.RawMessage(f.holders)
	}
	if f.kind != "" {
		outs["vip_holder_kind"] = json.RawMessage(f.kind)
	}
	if f.idle != "" {
		outs["vip_idle"] = json.RawMessage(f.idle)
	}
	if f.bgp != "" {
		outs["bgp_sessions"] = json.RawMessage(f.bgp)
	}
	return outs, nil
}

// TestHealthRound: the backends output of an applied load balancer's
// health module becomes Degraded (True naming the unhealthy nodes, False
// when all are up) and the backends gauges; a failed read keeps the last
// reading; a workspace without a health module or not applied is left
// alone; a deleted Service's series are dropped.
func TestHealthRound(t *testing.T) {
	registerHealth()
	l, _ := newPhaseTest(&fakeLBEngine{}, fakeRenderer{})
	svc := phaseService()
	name := fakeRenderer{}.WorkspaceName(svc)
	l.services[name] = &lbEntry{svc: svc, nodes: []string{"a", "b", "c"}}
	gauge := func() (up, total float64) {
		t.Helper()
		up, _ = testutil.GetGaugeMetricValue(backendsUpGauge.WithLabelValues("ns", "web"))
		total, _ = testutil.GetGaugeMetricValue(backendsGauge.WithLabelValues("ns", "web"))
		return up, total
	}
	for _, tc := range []struct {
		name    string
		prober  *fakeProber
		status  metav1.ConditionStatus
		reason  string
		message string
		up, all float64
	}{
		{"one down", &fakeProber{phase: workspace.PhaseApplied, outputs: `[{"node":"a","healthy":true},{"node":"c","healthy":false},{"node":"b","healthy":false}]`},
			metav1.ConditionTrue, CondReasonBackendsUnhealthy, "unhealthy: b, c (1 of 3 backends up)", 1, 3},
		{"a failed read keeps the last reading", &fakeProber{phase: workspace.PhaseApplied, err: errors.New("host unreachable")},
			metav1.ConditionTrue, CondReasonBackendsUnhealthy, "unhealthy: b, c (1 of 3 backends up)", 1, 3},
		{"a run in flight is not read", &fakeProber{phase: workspace.PhaseRunning, outputs: `[]`},
			metav1.ConditionTrue, CondReasonBackendsUnhealthy, "unhealthy: b, c (1 of 3 backends up)", 1, 3},
		{"all up", &fakeProber{phase: workspace.PhaseApplied, outputs: `[{"node":"a","healthy":true},{"node":"b","healthy":true},{"node":"c","healthy":true}]`},
			metav1.ConditionFalse, CondReasonBackendsHealthy, "all 3 backends are healthy", 3, 3},
		{"no backends", &fakeProber{phase: workspace.PhaseApplied, outputs: `[]`},
			metav1.ConditionTrue, CondReasonBackendsUnhealthy, "the load balancer has no backends", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l.healthRound(context.Background(), tc.prober, 1)
			c, ok := l.conds.get(svc.UID, ConditionDegraded)
			if !ok || c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.message {
				t.Errorf("Degraded %+v, want %s %s %q", c, tc.status, tc.reason, tc.message)
			}
			if up, all := gauge(); up != tc.up || all != tc.all {
				t.Errorf("gauges up %v of %v, want %v of %v", up, all, tc.up, tc.all)
			}
		})
	}
	t.Run("a set without a health module", func(t *testing.T) {
		l.healthRound(context.Background(), &fakeProber{phase: workspace.PhaseApplied, err: workspace.ErrNoProbe}, 1)
		if _, ok := l.health.series[name]; ok {
			t.Error("series kept for a workspace without a health module")
		}
		if c, ok := l.conds.get(svc.UID, ConditionDegraded); ok {
			t.Errorf("Degraded kept for a workspace without a health module: %+v", c)
		}
	})
	t.Run("deleted Service", func(t *testing.T) {
		l.healthRound(context.Background(), &fakeProber{phase: workspace.PhaseApplied, outputs: `[{"node":"a","healthy":true}]`}, 1)
		l.markDeleted(name, svc)
		if _, ok := l.health.series[name]; ok {
			t.Error("series kept for a deleted Service")
		}
		p := &fakeProber{phase: workspace.PhaseApplied, outputs: `[]`}
		l.healthRound(context.Background(), p, 1)
		if len(p.probed) != 0 {
			t.Errorf("a deleted Service's load balancer was probed: %v", p.probed)
		}
	})
}

// slowProber holds every probe until release is closed, counting how many
// are in flight at once.
type slowProber struct {
	release  chan struct{}
	mu       sync.Mutex
	inFlight int
	most     int
	done     int
}

func (s *slowProber) Status(string) workspace.Status {
	return workspace.Status{Phase: workspace.PhaseApplied}
}

func (s *slowProber) Probe(ctx context.Context, _, _, _ string) (map[string]json.RawMessage, error) {
	s.mu.Lock()
	s.inFlight++
	s.most = max(s.most, s.inFlight)
	s.mu.Unlock()
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	s.mu.Lock()
	s.inFlight--
	s.done++
	s.mu.Unlock()
	return map[string]json.RawMessage{"backends": json.RawMessage(`[{"node":"a","healthy":true}]`)}, nil
}

// TestHealthRoundParallel: a round probes up to workers load balancers at
// once, never more, and every one of them.
func TestHealthRoundParallel(t *testing.T) {
	registerHealth()
	for _, tc := range []struct{ services, workers, want int }{
		{12, 4, 4},
		{3, 4, 3},
		{5, 0, 1},
	} {
		t.Run(fmt.Sprintf("%d services, %d workers", tc.services, tc.workers), func(t *testing.T) {
			l, _ := newPhaseTest(&fakeLBEngine{}, fakeRenderer{})
			for i := range tc.services {
				svc := phaseService()
				svc.Name = fmt.Sprintf("web-%d", i)
				svc.UID = svc.UID + types.UID(svc.Name)
				l.services[fakeRenderer{}.WorkspaceName(svc)] = &lbEntry{svc: svc, nodes: []string{"a"}}
			}
			p := &slowProber{release: make(chan struct{})}
			round := make(chan struct{})
			go func() { l.healthRound(context.Background(), p, tc.workers); close(round) }()
			deadline := time.Now().Add(10 * time.Second)
			for {
				p.mu.Lock()
				n := p.inFlight
				p.mu.Unlock()
				if n == tc.want || time.Now().After(deadline) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			close(p.release)
			<-round
			if p.most != tc.want {
				t.Errorf("at most %d probes at once, want %d", p.most, tc.want)
			}
			if p.done != tc.services {
				t.Errorf("%d of %d load balancers probed", p.done, tc.services)
			}
		})
	}
}

// TestHealthRoundLBHosts: an LB host the health module says it could not
// reach makes the Service Degraded naming it (the others serve; the
// drift check catches it up) and its host_up gauge 0; reached again,
// Degraded is False and the gauge 1; a host no probe names any more loses
// its series; a malformed hosts output keeps the last reading.
func TestHealthRoundLBHosts(t *testing.T) {
	registerHealth()
	l, _ := newPhaseTest(&fakeLBEngine{}, fakeRenderer{})
	svc := phaseService()
	name := fakeRenderer{}.WorkspaceName(svc)
	l.services[name] = &lbEntry{svc: svc, nodes: []string{"a", "b"}}
	both := `[{"node":"a","healthy":true},{"node":"b","healthy":true}]`
	hostUp := func(h string) (float64, bool) {
		v, err := testutil.GetGaugeMetricValue(hostUpGauge.WithLabelValues(h))
		return v, err == nil
	}
	for _, tc := range []struct {
		name    string
		prober  *fakeProber
		status  metav1.ConditionStatus
		reason  string
		message string
		up      map[string]float64
	}{
		{"first host down", &fakeProber{phase: workspace.PhaseApplied, outputs: both, hosts: `{"lb-a":false,"lb-b":true}`},
			metav1.ConditionTrue, CondReasonLBHostUnreachable,
			"LB host lb-a is unreachable: the other hosts serve, and the drift check brings it up to date when back (all 2 backends healthy on the hosts that answer)",
			map[string]float64{"lb-a": 0, "lb-b": 1}},
		{"two down, a backend too", &fakeProber{phase: workspace.PhaseApplied, outputs: `[{"node":"a","healthy":true},{"node":"b","healthy":false}]`, hosts: `{"lb-a":false,"lb-b":false,"lb-c":true}`},
			metav1.ConditionTrue, CondReasonLBHostUnreachable,
			"LB hosts lb-a, lb-b are unreachable: the other hosts serve, and the drift check brings them up to date when back (unhealthy: b, 1 of 2 backends up on the hosts that answer)",
			map[string]float64{"lb-a": 0, "lb-b": 0, "lb-c": 1}},
		{"malformed hosts output keeps the last reading", &fakeProber{phase: workspace.PhaseApplied, outputs: both, hosts: `["lb-a"]`},
			metav1.ConditionTrue, CondReasonLBHostUnreachable,
			"LB hosts lb-a, lb-b are unreachable: the other hosts serve, and the drift check brings them up to date when back (unhealthy: b, 1 of 2 backends up on the hosts that answer)",
			map[string]float64{"lb-a": 0, "lb-b": 0, "lb-c": 1}},
		{"back, lb-c retired", &fakeProber{phase: workspace.PhaseApplied, outputs: both, hosts: `{"lb-a":true,"lb-b":true}`},
			metav1.ConditionFalse, CondReasonBackendsHealthy, "all 2 backends are healthy",
			map[string]float64{"lb-a": 1, "lb-b": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l.healthRound(context.Background(), tc.prober, 1)
			c, ok := l.conds.get(svc.UID, ConditionDegraded)
			if !ok || c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.message {
				t.Errorf("Degraded %+v, want %s %s %q", c, tc.status, tc.reason, tc.message)
			}
			for h, want := range tc.up {
				if got, ok := hostUp(h); !ok || got != want {
					t.Errorf("host_up{host=%s} = %v (%v), want %v", h, got, ok, want)
				}
			}
			if _, ok := tc.up["lb-c"]; !ok {
				if _, has := l.health.hosts["lb-c"]; has {
					t.Error("lb-c, named by no probe, keeps its series")
				}
			}
		})
	}
}
