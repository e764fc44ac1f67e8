package lbcontroller

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
	servicehelper "k8s.io/cloud-provider/service/helpers"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/config"
)

const testClass = config.DefaultLoadBalancerClass

// recordingLB is the class loop's cloudprovider.LoadBalancer in unit
// tests: it records the operations called and answers with ensureErr.
type recordingLB struct {
	cloudprovider.LoadBalancer // unused methods panic

	mu        sync.Mutex
	calls     []string
	nodes     []string
	ensureErr error
	exists    bool
}

func (r *recordingLB) record(op string, svc *corev1.Service, nodes []*corev1.Node) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, op+" "+svc.Name)
	if nodes != nil {
		r.nodes = nil
		for _, n := range nodes {
			r.nodes = append(r.nodes, n.Name)
		}
	}
}

func (r *recordingLB) EnsureLoadBalancer(_ context.Context, _ string, svc *corev1.Service, nodes []*corev1.Node) (*corev1.LoadBalancerStatus, error) {
	r.record("ensure", svc, nodes)
	if r.ensureErr != nil {
		return nil, r.ensureErr
	}
	r.exists = true
	return &corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}}}, nil
}

func (r *recordingLB) UpdateLoadBalancer(_ context.Context, _ string, svc *corev1.Service, nodes []*corev1.Node) error {
	r.record("update", svc, nodes)
	return nil
}

func (r *recordingLB) GetLoadBalancer(_ context.Context, _ string, svc *corev1.Service) (*corev1.LoadBalancerStatus, bool, error) {
	r.record("get", svc, nil)
	return nil, r.exists, nil
}

func (r *recordingLB) EnsureLoadBalancerDeleted(_ context.Context, _ string, svc *corev1.Service) error {
	r.record("delete", svc, nil)
	r.exists = false
	return nil
}

func (r *recordingLB) took() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}

type recordedEvents struct {
	mu  sync.Mutex
	got []string
}

func (e *recordedEvents) event(obj runtime.Object, eventType, reason, message string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, obj.(*corev1.Service).Name+" "+eventType+" "+reason+": "+message)
}

func (e *recordedEvents) took() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.got
	e.got = nil
	return out
}

func lbService(name string, class *string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: k8stypes.UID("uid-" + name)},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: class, Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080}}},
	}
}

func ptr(s string) *string { return &s }

// classFixture runs a class loop's sync against a fake API.
type classFixture struct {
	t      *testing.T
	client *fake.Clientset
	loop   *classLoop
	lb     *recordingLB
	events *recordedEvents
}

func newClassFixture(t *testing.T, objs ...runtime.Object) *classFixture {
	t.Helper()
	client := fake.NewClientset(objs...)
	f := &classFixture{t: t, client: client, lb: &recordingLB{}, events: &recordedEvents{}}
	f.loop = newClassLoop(f.lb, (&config.Config{LoadBalancerClass: testClass}).Serves, testClass, "test", f.events.event)
	f.loop.setClient(client)
	factory := informers.NewSharedInformerFactory(client, 0)
	f.loop.watch(factory)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), f.loop.synced...) {
		t.Fatal("informers did not sync")
	}
	return f
}

// sync runs the loop's sync of name once the lister has seen check hold.
func (f *classFixture) sync(name string, seen func(*corev1.Service) bool) error {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		svc, err := f.loop.services.Services("default").Get(name)
		if err == nil && (seen == nil || seen(svc)) {
			break
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("the lister never saw the expected %s (last %+v, %v)", name, svc, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return f.loop.sync(context.Background(), "default/"+name)
}

// eventually waits up to 10 s for cond.
func (f *classFixture) eventually(cond func() bool) {
	f.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			f.t.Fatal("condition not met in 10 s")
		}
	}
}

func (f *classFixture) get(name string) *corev1.Service {
	f.t.Helper()
	svc, err := f.client.CoreV1().Services("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return svc
}

func (f *classFixture) update(svc *corev1.Service) {
	f.t.Helper()
	if _, err := f.client.CoreV1().Services("default").Update(context.Background(), svc, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func hasClassFinalizer(svc *corev1.Service) bool {
	return slices.Contains(svc.Finalizers, annotations.ClassFinalizer)
}

// TestClassLoopServesItsClass: a Service of tfccm's class gets the class
// finalizer, EnsureLoadBalancer with the load balancer node set (excluded
// and autoscaler-deleted nodes left out) and its status; a type change
// away from LoadBalancer destroys it, drops the finalizer and the status.
func TestClassLoopServesItsClass(t *testing.T) {
	excluded := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-excluded", Labels: map[string]string{corev1.LabelNodeExcludeBalancers: "true"}}}
	draining := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-draining"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "ToBeDeletedByClusterAutoscaler", Effect: corev1.TaintEffectNoSchedule}}}}
	f := newClassFixture(t, lbService("web", ptr(testClass)),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-b"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-a"}}, excluded, draining)
	if err := f.sync("web", nil); err != nil {
		t.Fatal(err)
	}
	if got := f.lb.took(); !slices.Equal(got, []string{"ensure web"}) {
		t.Errorf("calls %v, want ensure", got)
	}
	if !slices.Equal(f.lb.nodes, []string{"n-a", "n-b"}) {
		t.Errorf("nodes %v, want n-a n-b", f.lb.nodes)
	}
	svc := f.get("web")
	if !hasClassFinalizer(svc) || slices.Contains(svc.Finalizers, servicehelper.LoadBalancerCleanupFinalizer) {
		t.Errorf("finalizers %v, want only %s", svc.Finalizers, annotations.ClassFinalizer)
	}
	if len(svc.Status.LoadBalancer.Ingress) != 1 || svc.Status.LoadBalancer.Ingress[0].IP != "192.0.2.10" {
		t.Errorf("status %+v", svc.Status.LoadBalancer)
	}
	if ev := strings.Join(f.events.took(), "\n"); !strings.Contains(ev, "Normal EnsuringLoadBalancer") || !strings.Contains(ev, "Normal EnsuredLoadBalancer") {
		t.Errorf("events:\n%s", ev)
	}

	// What the Service's own updates queued (the finalizer) syncs again: a
	// no-op for the engine. Then the node set changes: UpdateLoadBalancer.
	f.eventually(func() bool { return f.loop.queue.Len() > 0 })
	for f.loop.queue.Len() > 0 {
		f.loop.next(context.Background())
	}
	f.lb.took()
	f.loop.queueAll()
	if err := f.sync("web", func(s *corev1.Service) bool { return hasClassFinalizer(s) && len(s.Status.LoadBalancer.Ingress) == 1 }); err != nil {
		t.Fatal(err)
	}
	if got := f.lb.took(); !slices.Equal(got, []string{"update web"}) {
		t.Errorf("calls after a node change %v, want update", got)
	}

	// Type NodePort (the API clears the class with it): destroyed, released.
	svc = f.get("web")
	svc.Spec.Type, svc.Spec.LoadBalancerClass = corev1.ServiceTypeNodePort, nil
	f.update(svc)
	if err := f.sync("web", func(s *corev1.Service) bool { return s.Spec.Type == corev1.ServiceTypeNodePort }); err != nil {
		t.Fatal(err)
	}
	if got := f.lb.took(); !slices.Equal(got, []string{"get web", "delete web"}) {
		t.Errorf("calls after the type change %v, want get, delete", got)
	}
	svc = f.get("web")
	if hasClassFinalizer(svc) || len(svc.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("after the type change: finalizers %v, status %+v", svc.Finalizers, svc.Status.LoadBalancer)
	}
	if ev := strings.Join(f.events.took(), "\n"); !strings.Contains(ev, "Normal DeletedLoadBalancer") {
		t.Errorf("events:\n%s", ev)
	}
}

// TestClassLoopLeavesOthersAlone: class-less Services (the service
// controller's) and Services of another class get nothing from the loop.
func TestClassLoopLeavesOthersAlone(t *testing.T) {
	f := newClassFixture(t, lbService("none", nil), lbService("metallb", ptr("metallb.universe.tf/metallb")))
	for _, name := range []string{"none", "metallb"} {
		if err := f.sync(name, nil); err != nil {
			t.Fatal(err)
		}
		if svc := f.get(name); len(svc.Finalizers) != 0 || len(svc.Status.LoadBalancer.Ingress) != 0 {
			t.Errorf("%s touched: %+v", name, svc)
		}
	}
	if got := f.lb.took(); len(got) != 0 {
		t.Errorf("calls %v, want none", got)
	}
}

// TestClassLoopDeletion: a deleted Service of the class has its load
// balancer destroyed before its finalizer goes.
func TestClassLoopDeletion(t *testing.T) {
	svc := lbService("web", ptr(testClass))
	svc.Finalizers = []string{annotations.ClassFinalizer}
	svc.DeletionTimestamp = &metav1.Time{Time: time.Now()} // the fake API deletes at once: start deleted
	f := newClassFixture(t, svc)
	f.lb.exists = true
	if err := f.sync("web", nil); err != nil {
		t.Fatal(err)
	}
	if got := f.lb.took(); !slices.Equal(got, []string{"get web", "delete web"}) {
		t.Errorf("calls %v, want get, delete", got)
	}
	if svc := f.get("web"); hasClassFinalizer(svc) {
		t.Errorf("finalizer kept: %v", svc.Finalizers)
	}
}

// TestClassLoopEnsureErrors: a retry is returned as such (requeued after
// its delay) without a Warning, the review mode's no-op writes nothing, a
// failure is a SyncLoadBalancerFailed Warning.
func TestClassLoopEnsureErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		wantErr bool
		warning bool
	}{
		{"retry", api.NewRetryError("load balancer is being planned and applied", time.Second), true, false},
		{"awaiting approval", cloudprovider.ImplementedElsewhere, false, false},
		{"failed", errors.New("tofu apply failed"), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newClassFixture(t, lbService("web", ptr(testClass)))
			f.lb.ensureErr = tc.err
			err := f.sync("web", nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("sync = %v, want error %v", err, tc.wantErr)
			}
			var retry *api.RetryError
			if tc.name == "retry" && !errors.As(err, &retry) {
				t.Errorf("sync = %v, want the RetryError", err)
			}
			if svc := f.get("web"); len(svc.Status.LoadBalancer.Ingress) != 0 {
				t.Errorf("status written: %+v", svc.Status.LoadBalancer)
			}
			ev := strings.Join(f.events.took(), "\n")
			if got := strings.Contains(ev, "Warning SyncLoadBalancerFailed"); got != tc.warning {
				t.Errorf("SyncLoadBalancerFailed %v, want %v:\n%s", got, tc.warning, ev)
			}
		})
	}
}

// TestClassAnnotationWarning: the never-implemented class annotation gets
// one Warning per value naming the field, on any LoadBalancer Service.
func TestClassAnnotationWarning(t *testing.T) {
	f := newClassFixture(t)
	svc := lbService("web", nil)
	svc.Annotations = map[string]string{classAnnotation: testClass}
	f.loop.serviceChanged(nil, svc)
	f.loop.serviceChanged(svc, svc)
	ev := f.events.took()
	if len(ev) != 1 || !strings.Contains(ev[0], "Warning "+ReasonClassAnnotationIgnored) || !strings.Contains(ev[0], "spec.loadBalancerClass") {
		t.Fatalf("events %q, want one %s naming spec.loadBalancerClass", ev, ReasonClassAnnotationIgnored)
	}
	changed := svc.DeepCopy()
	changed.Annotations[classAnnotation] = "other"
	f.loop.serviceChanged(svc, changed)
	if ev := f.events.took(); len(ev) != 1 {
		t.Errorf("a changed value: events %q, want one more Warning", ev)
	}
	clusterIP := lbService("plain", nil)
	clusterIP.Spec.Type = corev1.ServiceTypeClusterIP
	clusterIP.Annotations = map[string]string{classAnnotation: testClass}
	f.loop.serviceChanged(nil, clusterIP)
	if ev := f.events.took(); len(ev) != 0 {
		t.Errorf("a ClusterIP Service: events %q, want none", ev)
	}
}

// TestHandedOver: EnsureLoadBalancer waits while the other path's
// finalizer says the previous owner still holds the workspace.
func TestHandedOver(t *testing.T) {
	for _, tc := range []struct {
		name       string
		class      *string
		finalizers []string
		wait       bool
	}{
		{"class-less, own finalizer", nil, []string{servicehelper.LoadBalancerCleanupFinalizer}, false},
		{"class-less, class loop still releasing", nil, []string{servicehelper.LoadBalancerCleanupFinalizer, annotations.ClassFinalizer}, true},
		{"classed, own finalizer", ptr(testClass), []string{annotations.ClassFinalizer}, false},
		{"classed, service controller still releasing", ptr(testClass), []string{servicehelper.LoadBalancerCleanupFinalizer}, true},
		{"no finalizer", ptr(testClass), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := lbService("web", tc.class)
			svc.Finalizers = tc.finalizers
			err := handedOver(svc)
			var retry *api.RetryError
			if got := errors.As(err, &retry); got != tc.wait {
				t.Errorf("handedOver = %v, want a retry: %v", err, tc.wait)
			}
		})
	}
}
