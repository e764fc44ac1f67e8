// Hosts health: one read of every LB host per health interval for all the
// load balancers of a set that carries a hosts health module
// (templates.HostHealthDir), instead of one health module run per load
// balancer, each opening every host again.

package lbcontroller

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/zclconf/go-cty/cty"

	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// healthReadsTotal counts the health round's tofu refreshes by what each
// read: one set's LB hosts for all its load balancers ("hosts"), or one
// load balancer through its own health module ("load_balancer").
var healthReadsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
	Subsystem:      "tfccm_load_balancer",
	Name:           "health_reads_total",
	Help:           "Health reads (one tofu refresh each) by what they read (read): every LB host of a template set for all its load balancers at once (hosts), or one load balancer (load_balancer).",
	StabilityLevel: metrics.ALPHA,
}, []string{"read"})

// The values of healthReadsTotal's label.
const (
	healthReadHosts        = "hosts"
	healthReadLoadBalancer = "load_balancer"
)

// hostHealthSource is what the health round needs of the templates to read
// the hosts at once.
type hostHealthSource interface {
	// HostHealthModule returns the module key of svc's load balancer when
	// the set's hosts health module reads it.
	HostHealthModule(svc *corev1.Service) (string, bool)
	// RenderHostHealth renders the hosts health module over lbs.
	RenderHostHealth(lbs []templates.HostHealthLB) (*workspace.Spec, error)
}

// hostProber is what the health round needs of the engine to read the
// hosts at once.
type hostProber interface {
	ProbeSpec(ctx context.Context, spec *workspace.Spec) (map[string]json.RawMessage, error)
	Dir(name string) string
}

var (
	_ hostHealthSource = templateRenderer{}
	_ hostProber       = (*workspace.Engine)(nil)
)

func (t templateRenderer) HostHealthModule(svc *corev1.Service) (string, bool) {
	return t.loader.Set().HostHealthModule(svc)
}

func (t templateRenderer) RenderHostHealth(lbs []templates.HostHealthLB) (*workspace.Spec, error) {
	return t.loader.Set().RenderHostHealth(t.cfg, lbs)
}

// appliedInputs caches what the hosts health module gets of each load
// balancer (read back from its applied inputs file), by workspace and
// applied hash: a round re-reads only the workspaces applied since.
type appliedInputs struct {
	mu sync.Mutex
	m  map[string]appliedInput
}

type appliedInput struct {
	hash, id string
	service  cty.Value
}

func (a *appliedInputs) get(name, hash, dir string) (string, cty.Value, error) {
	a.mu.Lock()
	c, ok := a.m[name]
	a.mu.Unlock()
	if ok && c.hash == hash {
		return c.id, c.service, nil
	}
	data, err := os.ReadFile(filepath.Join(dir, templates.TfvarsFile))
	if err != nil {
		return "", cty.NilVal, err
	}
	id, service, err := templates.ReadAppliedInputs(data)
	if err != nil {
		return "", cty.NilVal, err
	}
	a.mu.Lock()
	if a.m == nil {
		a.m = map[string]appliedInput{}
	}
	a.m[name] = appliedInput{hash: hash, id: id, service: service}
	a.mu.Unlock()
	return id, service, nil
}

// keep drops the cache entries of workspaces not in live.
func (a *appliedInputs) keep(live map[string]*corev1.Service) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for name := range a.m {
		if _, ok := live[name]; !ok {
			delete(a.m, name)
		}
	}
}

// readHosts reads, with one probe of the set's hosts health module, every
// applied load balancer of live it reads. It returns by workspace the
// outputs of each load balancer the module answered for (nil for all it
// was handed when the probe failed: no reading, the last one stands);
// the others (none handed, or no entry in its output) are read by their
// own health modules.
func (l *loadBalancers) readHosts(ctx context.Context, prober healthProber, live map[string]*corev1.Service) map[string]map[string]json.RawMessage {
	src, ok := l.render.(hostHealthSource)
	hp, ok2 := prober.(hostProber)
	if !ok || !ok2 {
		return nil
	}
	l.health.applied.keep(live)
	var lbs []templates.HostHealthLB
	byID := map[string]string{}
	for name, svc := range live {
		st := prober.Status(name)
		if st.Phase != workspace.PhaseApplied {
			continue // its own probe skips it too: read after it settles
		}
		key, ok := src.HostHealthModule(svc)
		if !ok {
			continue
		}
		id, service, err := l.health.applied.get(name, st.AppliedHash, hp.Dir(name))
		if err != nil {
			klog.InfoS("Could not read the load balancer's inputs for the hosts health read", "service", klog.KObj(svc), "workspace", name, "err", err)
			continue
		}
		lbs = append(lbs, templates.HostHealthLB{ID: id, Module: key, Service: service})
		byID[id] = name
	}
	if len(lbs) == 0 {
		return nil
	}
	sort.Slice(lbs, func(i, j int) bool { return lbs[i].ID < lbs[j].ID })
	out := map[string]map[string]json.RawMessage{}
	spec, err := src.RenderHostHealth(lbs)
	var entries map[string]map[string]json.RawMessage
	if err == nil {
		var outs map[string]json.RawMessage
		healthReadsTotal.WithLabelValues(healthReadHosts).Inc()
		if outs, err = hp.ProbeSpec(ctx, spec); err == nil {
			entries, err = templates.DecodeHostHealth(outs)
		}
	}
	if err != nil {
		klog.InfoS("Could not read the LB hosts' health", "loadBalancers", len(lbs), "err", err)
		for _, name := range byID {
			out[name] = nil
		}
		return out
	}
	for id, name := range byID {
		if e, ok := entries[id]; ok {
			out[name] = e
		}
	}
	return out
}
