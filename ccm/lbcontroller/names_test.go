package lbcontroller

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/tfccm/tfccm/config"
)

// named is a LoadBalancer Service ns/name with tfccm.io/name lb (none if
// ""), created at second sec.
func named(ns, name, uid, lb string, sec int64) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid),
		CreationTimestamp: metav1.NewTime(time.Unix(1_800_000_000+sec, 0)), Annotations: map[string]string{}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	if lb != "" {
		s.Annotations["tfccm.io/name"] = lb
	}
	return s
}

// TestNameHolder: the oldest Service (creationTimestamp, then UID) of the
// ones tfccm serves holds a tfccm.io/name; the answer does not depend on
// the order the Services are listed in.
func TestNameHolder(t *testing.T) {
	a := named("team-a", "web", "uid-b", "shop", 10)
	sameSecond := named("team-b", "web", "uid-a", "shop", 10) // same second, lower UID
	younger := named("team-b", "shop", "uid-c", "shop", 20)
	other := named("team-c", "web", "uid-0", "other", 0)
	notLB := named("team-c", "old", "uid-00", "shop", 0)
	notLB.Spec.Type = corev1.ServiceTypeClusterIP
	otherClass := named("team-c", "classed", "uid-01", "shop", 0)
	class := "example.com/other"
	otherClass.Spec.LoadBalancerClass = &class
	badName := named("team-c", "bad", "uid-02", "Not_A_Name", 0)
	unnamed := named("team-c", "plain", "uid-03", "", 0)
	serves := (&config.Config{LoadBalancerClass: config.DefaultLoadBalancerClass}).Serves
	for _, tt := range []struct {
		name string
		svc  *corev1.Service
		all  []*corev1.Service
		want *corev1.Service // nil: svc holds its name (or has none)
	}{
		{"alone", a, []*corev1.Service{a}, nil},
		{"the older holds", younger, []*corev1.Service{a, younger}, a},
		{"the older is not refused", a, []*corev1.Service{a, younger}, nil},
		{"same second: the lower UID holds", a, []*corev1.Service{a, sameSecond, younger}, sameSecond},
		{"three: the oldest holds for the youngest", younger, []*corev1.Service{younger, a, sameSecond}, sameSecond},
		{"another name does not count", younger, []*corev1.Service{other, younger}, nil},
		{"a Service no longer of type LoadBalancer does not hold", younger, []*corev1.Service{notLB, younger}, nil},
		{"a Service of a class tfccm does not serve does not hold", younger, []*corev1.Service{otherClass, younger}, nil},
		{"an invalid name holds nothing", younger, []*corev1.Service{badName, younger}, nil},
		{"a Service without a name is never refused", unnamed, []*corev1.Service{a, unnamed}, nil},
		{"not yet in the cache itself", younger, []*corev1.Service{a}, a},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for range 5 { // any listing order
				all := append([]*corev1.Service(nil), tt.all...)
				rand.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
				if got := nameHolder(tt.svc, all, serves); got != tt.want {
					t.Fatalf("holder of %s/%s = %v, want %v", tt.svc.Namespace, tt.svc.Name, got, tt.want)
				}
			}
		})
	}
}

// TestCheckNameRefusesNothingApplied: a Service whose name another holds
// gets a Warning Event and Accepted=False naming the holder, and nothing
// is rendered or submitted; the holder goes on as before.
func TestCheckNameRefusesNothingApplied(t *testing.T) {
	holder := named("team-a", "web", "u-holder", "shop", 10)
	second := named("team-b", "web", "u-second", "shop", 20)
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, s := range []*corev1.Service{holder, second} {
		_ = idx.Add(s)
	}
	eng := &fakeLBEngine{}
	l, events := newPhaseTest(eng, fakeRenderer{})
	l.svcSource = &serviceSource{lister: corelisters.NewServiceLister(idx), synced: func() bool { return true }}

	if _, err := l.EnsureLoadBalancer(t.Context(), "c", second, nil); err == nil || !strings.Contains(err.Error(), "held by Service team-a/web") {
		t.Fatalf("second: %v", err)
	}
	if len(eng.applied) != 0 {
		t.Fatalf("the refused Service was submitted: %+v", eng.applied)
	}
	if len(*events) != 1 || (*events)[0].reason != ReasonNameTaken || (*events)[0].eventType != corev1.EventTypeWarning ||
		!strings.Contains((*events)[0].message, `the load balancer name "shop" is held by Service team-a/web`) {
		t.Fatalf("events: %+v", *events)
	}
	c, ok := l.conds.get(second.UID, ConditionAccepted)
	if !ok || c.Status != metav1.ConditionFalse || c.Reason != CondReasonNameTaken || !strings.Contains(c.Message, "team-a/web") {
		t.Fatalf("Accepted: %+v", c)
	}
	if _, err := l.EnsureLoadBalancer(t.Context(), "c", holder, nil); err != nil && strings.Contains(err.Error(), "held by") {
		t.Fatalf("holder refused: %v", err)
	}
	if len(eng.applied) != 1 {
		t.Fatalf("the holder was not submitted: %d applies", len(eng.applied))
	}
}
