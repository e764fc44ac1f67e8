// Reporting on the NodeVIP objects: their status, and Warning Events.

package agent

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/nodelb/announce"
	"github.com/tfccm/tfccm/nodelb/vipapi"
)

// report writes the status of every NodeVIP of d when it changed, and a
// Warning Event when a VIP newly cannot be served (standby is no such
// case); it returns how many statuses it wrote.
func (a *Agent) report(ctx context.Context, d decision, holderName string, o outcome) int {
	written := 0
	for _, v := range d.VIPs {
		want := v.Status.DeepCopyStatus()
		want.ObservedGeneration = v.Generation
		want.Candidates = d.Candidates
		want.Holder, want.Interface, want.Announcement, want.Contenders = "", "", "", nil
		status := metav1.ConditionFalse
		if o.reason == vipapi.ReasonAnnounced {
			status = metav1.ConditionTrue
			want.Holder, want.Interface, want.Announcement = holderName, o.iface, announce.Method(d.Address)
			want.Contenders = o.contenders
		}
		old := v.Status.Announced()
		apimeta.SetStatusCondition(&want.Conditions, metav1.Condition{
			Type: vipapi.ConditionAnnounced, Status: status, Reason: o.reason, Message: o.message, ObservedGeneration: v.Generation,
		})
		if sameStatus(v.Status, want) {
			continue
		}
		if status == metav1.ConditionFalse && o.reason != vipapi.ReasonNoLocalEndpoint && o.reason != vipapi.ReasonStandby && (old == nil || old.Reason != o.reason || old.Message != o.message) {
			// No Warning for a Local Service without a ready endpoint or a
			// NodeVIP on standby: nothing is wrong.
			a.events.warn(v, o.reason, o.message)
		}
		c := *v
		c.Status = want
		u, err := vipapi.ToUnstructured(&c)
		if err != nil {
			klog.ErrorS(err, "NodeVIP status")
			continue
		}
		if _, err := a.dyn.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
			// A conflict is an older copy: the next reconcile retries.
			klog.V(2).InfoS("NodeVIP status not written", "nodevip", v.Name, "err", err)
			continue
		}
		written++
	}
	return written
}

// splitBrain records a Warning Event SplitBrain on d's NodeVIPs: node
// other answers for the address this node holds.
func (a *Agent) splitBrain(d decision, other string) {
	msg := fmt.Sprintf("nodes %s and %s both answer for %s: their node agents do not hear each other (gossip, port %d) "+
		"but both reach the API server; clients reach whichever answered ARP/NDP last", a.cfg.NodeName, other, d.Address, a.cfg.GossipPort)
	klog.InfoS("split brain: another node answers for a VIP this node holds", "address", d.Address, "other", other)
	for _, v := range d.VIPs {
		a.events.warn(v, vipapi.EventSplitBrain, msg)
	}
}

// sameStatus compares statuses without the conditions' transition times.
func sameStatus(a, b vipapi.NodeVIPStatus) bool {
	if a.Holder != b.Holder || a.Interface != b.Interface || a.Announcement != b.Announcement ||
		a.ObservedGeneration != b.ObservedGeneration || !slices.Equal(a.Candidates, b.Candidates) || !slices.Equal(a.Contenders, b.Contenders) ||
		len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}

// eventSink records Events on NodeVIPs, from this node's agent.
type eventSink struct {
	rec  record.EventRecorder
	stop func()
}

func newEventSink(kube kubernetes.Interface, namespace, node string) eventSink {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events(namespace)})
	return eventSink{rec: b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "tfccm-node-agent", Host: node}), stop: b.Shutdown}
}

func (e eventSink) warn(v *vipapi.NodeVIP, reason, message string) {
	ref := &corev1.ObjectReference{
		APIVersion: vipapi.Group + "/" + vipapi.Version, Kind: vipapi.Kind,
		Namespace: v.Namespace, Name: v.Name, UID: v.UID, ResourceVersion: v.ResourceVersion,
	}
	e.rec.Event(runtime.Object(ref), corev1.EventTypeWarning, reason, message)
}

// warnObject records a Warning Event on any object.
func (e eventSink) warnObject(ref *corev1.ObjectReference, reason, message string) {
	e.rec.Event(runtime.Object(ref), corev1.EventTypeWarning, reason, message)
}

// vipFromMap converts an informer's object.
func vipFromMap(m map[string]any) (*vipapi.NodeVIP, error) {
	var v vipapi.NodeVIP
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &v); err != nil {
		return nil, err
	}
	return &v, nil
}
