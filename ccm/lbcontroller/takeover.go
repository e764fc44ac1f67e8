// The take-over from MetalLB (compat { metallb_takeover = "prepare" }):
// class-less Services are applied without announcing their addresses,
// their status left as MetalLB wrote it, until the admin takes them over
// in the ConfigMap config.TakeoverConfigMap of tfccm's namespace. The
// take-over is one-way: a Service whose load balancer was once applied
// announcing stays announced whatever the list says later (deleted,
// edited, not read yet after a restart): prepareOnly is the rule.

package lbcontroller

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/workspace"
)

// takeoverPoll is how often the take-over list is read: a take-over is
// applied at most this long after `tfccm takeover`.
const takeoverPoll = 500 * time.Millisecond

// takeover knows which class-less Services are still prepared only. The
// nil *takeover (compat { metallb_takeover = "now" }) prepares none.
type takeover struct {
	namespace string

	mu      sync.Mutex
	client  kubernetes.Interface
	read    bool            // the list was read once: until then nothing is decided
	all     bool            // every Service taken over
	keys    map[string]bool // config.TakeoverKey of each Service taken over
	changed func()          // the list changed (re-render the Services)

	// applied recalls what each workspace's last apply announced
	// (takeover_recall.go); workspace names a Service's workspace.
	applied   *appliedAnnounce
	workspace func(svc *corev1.Service) string
}

func newTakeover(cfg *config.Config) *takeover {
	if !cfg.Preparing() {
		return nil
	}
	return &takeover{namespace: cfg.Namespace, keys: map[string]bool{}}
}

func (t *takeover) setClient(client kubernetes.Interface) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.client = client
	t.mu.Unlock()
}

// recallFrom reads what was applied from source, naming each Service's
// workspace with ws.
func (t *takeover) recallFrom(source appliedSource, ws func(svc *corev1.Service) string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.applied, t.workspace = &appliedAnnounce{source: source}, ws
	t.mu.Unlock()
}

// forget drops what is recalled of workspace ws (destroyed).
func (t *takeover) forget(ws string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	applied := t.applied
	t.mu.Unlock()
	applied.forget(ws)
}

func (t *takeover) onChange(f func()) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.changed = f
	t.mu.Unlock()
}

// errTakeoverUnknown: the take-over list was not read yet, so whether to
// announce a Service is not known (never withdraw one taken over before a
// restart).
var errTakeoverUnknown = fmt.Errorf("waiting to read the take-over list (ConfigMap %s)", config.TakeoverConfigMap)

// standby reports whether svc is prepared only (prepareOnly). It fails
// while that is not known: the list not read yet for a Service never
// applied announcing, or what its workspace last applied unreadable.
func (t *takeover) standby(svc *corev1.Service) (bool, error) {
	if t == nil || svc.Spec.LoadBalancerClass != nil {
		return false, nil
	}
	t.mu.Lock()
	read, listed := t.read, t.all || t.keys[config.TakeoverKey(svc.Namespace, svc.Name)]
	applied, ws := t.applied, t.workspace
	t.mu.Unlock()
	announced := false
	if !listed && applied != nil {
		var err error
		if announced, err = applied.announced(ws(svc)); err != nil {
			return false, err
		}
	}
	return prepareOnly(read, listed, announced)
}

// prepareOnly is the take-over's rule for a class-less Service: announced
// once its load balancer was applied announcing (one-way: a list that
// loses it never withdraws its addresses) or once it is in the take-over
// list; prepared only otherwise, and not decided before the list was read.
func prepareOnly(listRead, listed, announced bool) (bool, error) {
	switch {
	case announced, listed:
		return false, nil
	case !listRead:
		return false, errTakeoverUnknown
	default:
		return true, nil
	}
}

// run reads the list until ctx ends.
func (t *takeover) run(ctx context.Context) {
	if t == nil {
		return
	}
	tick := time.NewTicker(takeoverPoll)
	defer tick.Stop()
	for {
		t.poll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// poll reads the ConfigMap once: its keys are the Services taken over (a
// missing ConfigMap: none yet).
func (t *takeover) poll(ctx context.Context) {
	t.mu.Lock()
	client := t.client
	t.mu.Unlock()
	if client == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cm, err := client.CoreV1().ConfigMaps(t.namespace).Get(cctx, config.TakeoverConfigMap, metav1.GetOptions{})
	keys := map[string]bool{}
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		klog.ErrorS(err, "Read the take-over list", "configMap", klog.KRef(t.namespace, config.TakeoverConfigMap))
		return
	default:
		for k := range cm.Data {
			keys[k] = true
		}
	}
	all := keys[config.TakeoverAll]
	t.mu.Lock()
	same := t.read && t.all == all && maps.Equal(t.keys, keys)
	t.read, t.all, t.keys = true, all, keys
	changed := t.changed
	t.mu.Unlock()
	if !same && changed != nil {
		klog.InfoS("Take-over list changed", "all", all, "services", len(keys))
		changed()
	}
}

// preparedRetry is how soon a Service prepared only once MetalLB gives it
// an address is asked again.
const preparedRetry = 10 * time.Second

// CondReasonPrepared: Programmed=False while a Service is prepared, not
// announced (takeover.go).
const CondReasonPrepared = "Prepared"

func preparedCondition() metav1.Condition {
	return condition(ConditionProgrammed, false, CondReasonPrepared,
		"prepared, not announcing: everything is applied but the announcement of the address, which MetalLB still announces; "+
			"the admin takes it over with `tfccm takeover` (docs/migrate-from-metallb.md)")
}

// hasIngressIP reports whether svc has an address in its status (MetalLB's).
func hasIngressIP(svc *corev1.Service) bool {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			return true
		}
	}
	return false
}

// takeoverResult follows an applied result of ws: prepared, its Service
// says so (Programmed=False Prepared); announced after being prepared, it
// gets a TakenOver Event and its status is written again (the service
// controller does not call for a class-less Service whose spec did not
// change).
func (l *loadBalancers) takeoverResult(svc *corev1.Service, ws string, r workspace.Result) {
	if l.takeover == nil {
		return
	}
	if r.Op == "destroy" {
		l.mu.Lock()
		delete(l.prepared, ws)
		l.mu.Unlock()
		l.takeover.forget(ws)
		return
	}
	if r.Err != nil || r.AwaitingApproval {
		return
	}
	standby, err := l.takeover.standby(svc)
	if err != nil {
		return
	}
	l.mu.Lock()
	if l.prepared == nil {
		l.prepared = map[string]bool{}
	}
	was := l.prepared[ws]
	l.prepared[ws] = standby
	l.mu.Unlock()
	switch {
	case standby:
		l.conds.set(svc, preparedCondition())
	case was:
		l.event(svc, corev1.EventTypeNormal, ReasonTakenOver, "taken over from MetalLB: tfccm announces the Service's addresses now")
		if l.afterTakeover != nil {
			go l.afterTakeover(svc)
		}
	}
}
