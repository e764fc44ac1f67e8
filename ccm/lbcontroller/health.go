package lbcontroller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// Backend health (tfccm.io/Degraded): every health interval, each applied
// load balancer workspace whose template module carries a health module
// (templates.HealthDir) is probed — a refresh-only apply of that module
// with the workspace's inputs into a state of its own, which creates,
// changes and destroys nothing and takes no state lock — and its `backends`
// output becomes the Service's Degraded condition and the backends gauges.
// Workspaces of sets without a health module are never probed and get no
// Degraded condition. A set with a hosts health module reads all its load
// balancers in one probe per round instead (hosthealth.go); only those it
// gives no entry for are probed one by one. Only a changed condition is written (server-side
// apply of tfccm's own condition types, like the others), so the reads
// never fight the service controller's status writes.

// healthProber is what the health loop needs of the workspace engine.
type healthProber interface {
	Status(name string) workspace.Status
	Probe(ctx context.Context, name, module, inputs string) (map[string]json.RawMessage, error)
}

var _ healthProber = (*workspace.Engine)(nil)

// The backends gauges: one series per load balancer Service whose set reads
// health, dropped with the Service. Their labels are not namespace and
// service: Prometheus' target labels of those names identify the CCM's pod.
var (
	backendsGauge = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      "tfccm_load_balancer",
		Name:           "backends",
		Help:           "Backends (nodes) of each load balancer whose template set reads backend health, by Service (service_namespace, service_name).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"service_namespace", "service_name"})
	backendsUpGauge = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      "tfccm_load_balancer",
		Name:           "backends_up",
		Help:           "Backends the load balancer itself finds healthy, by Service (service_namespace, service_name).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"service_namespace", "service_name"})
	// hostUpGauge: one series per LB host named by the health modules'
	// `hosts` output (the baremetal set), 1 while every probe of the last
	// round reached it, 0 when one could not; dropped when no probe names
	// the host any more. The alert TfccmLBHostUnreachable reads it.
	hostUpGauge = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      "tfccm_load_balancer",
		Name:           "host_up",
		Help:           "Whether the last health round could connect to each LB host (1) or not (0), by host name (host); only for template sets whose health module outputs hosts (baremetal).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"host"})
	registerHealthMetrics sync.Once
)

// healthState is what the health loop last reported per workspace: the
// series it set, so they are dropped with the Service.
type healthState struct {
	mu sync.Mutex
	// applied caches the load balancers' inputs the hosts health module
	// gets (hosthealth.go).
	applied appliedInputs
	series  map[string][2]string // workspace -> namespace, name
	hosts   map[string]bool      // LB host -> up, as last reported
}

// runHealth reads backend health every interval (jittered) until ctx ends,
// with at most workers probes at once.
func (l *loadBalancers) runHealth(ctx context.Context, prober healthProber, interval time.Duration, workers int) {
	registerHealth()
	wait.JitterUntilWithContext(ctx, func(ctx context.Context) { l.healthRound(ctx, prober, workers) }, interval, 0.1, true)
}

// registerHealth adds the backends gauges to the registry /metrics serves.
func registerHealth() {
	registerHealthMetrics.Do(func() {
		legacyregistry.MustRegister(backendsGauge, backendsUpGauge, hostUpGauge, vipHoldersGauge, vipAnnouncersGauge, bgpSessionUpGauge, healthReadsTotal)
	})
}

// healthRound probes every applied load balancer once, workers at a time
// (a probe is a plan: one at a time, a round of hundreds of load balancers
// would outlast the interval), and drops the series of workspaces no
// longer served.
func (l *loadBalancers) healthRound(ctx context.Context, prober healthProber, workers int) {
	l.mu.Lock()
	live := map[string]*corev1.Service{}
	for name, e := range l.services {
		if !l.deleted[name] && e.svc != nil && e.nodes != nil {
			live[name] = e.svc
		}
	}
	l.mu.Unlock()
	names := make([]string, 0, len(live))
	for name := range live {
		names = append(names, name)
	}
	sort.Strings(names)
	var mu sync.Mutex
	hosts, complete := map[string]bool{}, true
	merge := func(seen map[string]bool, ok bool) {
		mu.Lock()
		defer mu.Unlock()
		complete = complete && ok
		for h, up := range seen {
			if was, ok := hosts[h]; !ok || was {
				hosts[h] = up
			}
		}
	}
	// The load balancers the set's hosts health module reads, in one
	// probe for all of them (hosthealth.go); the others one by one.
	read := l.readHosts(ctx, prober, live)
	rest := names[:0:0]
	for _, name := range names {
		r, ok := read[name]
		switch {
		case !ok:
			rest = append(rest, name)
		case r == nil:
			merge(nil, false) // no reading: the last one stands
		default:
			merge(l.reportOutputs(name, live[name], r, nil))
		}
	}
	names = rest
	workqueue.ParallelizeUntil(ctx, max(workers, 1), len(names), func(i int) {
		merge(l.probeOne(ctx, prober, names[i], live[names[i]]))
	})
	if ctx.Err() != nil {
		return
	}
	l.reportHosts(hosts, complete)
	l.health.mu.Lock()
	var gone []string
	for name := range l.health.series {
		if _, ok := live[name]; !ok {
			gone = append(gone, name)
		}
	}
	l.health.mu.Unlock()
	for _, name := range gone {
		l.dropHealth(name)
	}
}

// probeOne reads one load balancer's backend health and reports it; it
// returns the LB hosts the probe names, each true when it reached it, and
// false when there was no reading (the last one stands).
func (l *loadBalancers) probeOne(ctx context.Context, prober healthProber, name string, svc *corev1.Service) (map[string]bool, bool) {
	if prober.Status(name).Phase != workspace.PhaseApplied {
		return nil, false // a run in flight or failed: read after it settles
	}
	healthReadsTotal.WithLabelValues(healthReadLoadBalancer).Inc()
	outs, err := prober.Probe(ctx, name, templates.HealthDir, templates.TfvarsFile)
	if errors.Is(err, workspace.ErrNoProbe) {
		// The set reads no health (or no longer: a new override).
		l.dropHealth(name)
		l.conds.remove(svc, ConditionDegraded)
		l.conds.remove(svc, ConditionVIPHeld)
		l.conds.remove(svc, ConditionBGPEstablished)
		return nil, true
	}
	return l.reportOutputs(name, svc, outs, err)
}

// reportOutputs reports a load balancer's health outputs (its health
// module's, or its entry of the hosts health module's) read with err; it
// returns the LB hosts they name, each true when reached, and false when
// there was no reading (the last one stands).
func (l *loadBalancers) reportOutputs(name string, svc *corev1.Service, outs map[string]json.RawMessage, err error) (map[string]bool, bool) {
	var backends []templates.BackendHealth
	var hosts map[string]bool
	var holders map[string][]string
	var idle map[string]string
	var kind string
	var sessions map[string][]templates.BGPSession
	if err == nil {
		backends, err = templates.DecodeBackends(outs)
	}
	if err == nil {
		hosts, err = templates.DecodeHosts(outs)
	}
	if err == nil {
		holders, err = templates.DecodeVIPHolders(outs)
	}
	if err == nil {
		idle, err = templates.DecodeVIPIdle(outs)
	}
	if err == nil {
		kind, err = templates.DecodeVIPHolderKind(outs)
	}
	if err == nil {
		sessions, err = templates.DecodeBGPSessions(outs)
	}
	if err != nil {
		// The last reading stands: a load balancer host briefly
		// unreachable, or HAProxy reloading, is no reason to flap.
		klog.InfoS("Could not read the load balancer's backend health", "service", klog.KObj(svc), "workspace", name, "err", err)
		return nil, false
	}
	var unreachable []string
	for h, up := range hosts {
		if !up {
			unreachable = append(unreachable, h)
		}
	}
	sort.Strings(unreachable)
	l.reportHealth(name, svc, backends, unreachable)
	l.reportVIPHolders(svc, holders, idle, kind)
	l.reportBGPSessions(svc, sessions)
	return hosts, true
}

// reportHosts sets the LB host gauges from a round's probes; after a
// complete round (every probe read) it drops the series of hosts no probe
// named, else the last reading of those stands.
func (l *loadBalancers) reportHosts(hosts map[string]bool, complete bool) {
	l.health.mu.Lock()
	old := l.health.hosts
	next := maps.Clone(hosts)
	if !complete {
		for h, up := range old {
			if _, ok := next[h]; !ok {
				next[h] = up
			}
		}
	}
	l.health.hosts = next
	l.health.mu.Unlock()
	for h, up := range next {
		v := 0.0
		if up {
			v = 1
		}
		hostUpGauge.WithLabelValues(h).Set(v)
	}
	for h := range old {
		if _, ok := next[h]; !ok {
			hostUpGauge.DeleteLabelValues(h)
		}
	}
}

// reportHealth sets the Service's Degraded condition and gauges.
func (l *loadBalancers) reportHealth(name string, svc *corev1.Service, backends []templates.BackendHealth, unreachable []string) {
	up, down := 0, []string{}
	for _, b := range backends {
		if b.Healthy {
			up++
		} else {
			down = append(down, b.Node)
		}
	}
	sort.Strings(down)
	l.health.mu.Lock()
	if l.health.series == nil {
		l.health.series = map[string][2]string{}
	}
	l.health.series[name] = [2]string{svc.Namespace, svc.Name}
	l.health.mu.Unlock()
	backendsGauge.WithLabelValues(svc.Namespace, svc.Name).Set(float64(len(backends)))
	backendsUpGauge.WithLabelValues(svc.Namespace, svc.Name).Set(float64(up))
	l.conds.set(svc, degradedCondition(len(backends), down, unreachable))
}

// degradedCondition is Degraded for total backends of which down are
// unhealthy (no backends at all is degraded: nothing serves), and the LB
// hosts that could not be reached (the others serve; what changed waits
// for them).
func degradedCondition(total int, down, unreachable []string) metav1.Condition {
	if len(unreachable) > 0 {
		hosts, them := "LB host "+unreachable[0]+" is", "it"
		if len(unreachable) > 1 {
			hosts, them = "LB hosts "+strings.Join(unreachable, ", ")+" are", "them"
		}
		backends := fmt.Sprintf("all %d backends healthy", total)
		if len(down) > 0 {
			backends = fmt.Sprintf("unhealthy: %s, %d of %d backends up", strings.Join(down, ", "), total-len(down), total)
		}
		return condition(ConditionDegraded, true, CondReasonLBHostUnreachable,
			fmt.Sprintf("%s unreachable: the other hosts serve, and the drift check brings %s up to date when back (%s on the hosts that answer)", hosts, them, backends))
	}
	switch {
	case total == 0:
		return condition(ConditionDegraded, true, CondReasonBackendsUnhealthy, "the load balancer has no backends")
	case len(down) > 0:
		return condition(ConditionDegraded, true, CondReasonBackendsUnhealthy,
			fmt.Sprintf("unhealthy: %s (%d of %d backends up)", strings.Join(down, ", "), total-len(down), total))
	default:
		return condition(ConditionDegraded, false, CondReasonBackendsHealthy, fmt.Sprintf("all %d backends are healthy", total))
	}
}

// dropHealth removes the gauges of a workspace (its Service is gone, or
// its set no longer reads health).
func (l *loadBalancers) dropHealth(name string) {
	l.health.mu.Lock()
	s, ok := l.health.series[name]
	delete(l.health.series, name)
	l.health.mu.Unlock()
	if ok {
		backendsGauge.DeleteLabelValues(s[0], s[1])
		backendsUpGauge.DeleteLabelValues(s[0], s[1])
		dropVIPHolders(s[0], s[1])
	}
}
