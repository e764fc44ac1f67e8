package lbcontroller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/workspace"
)

// recordingApprover records approvals.
type recordingApprover struct{ approved *[]string }

func (a recordingApprover) Approve(ws, hash string) error {
	*a.approved = append(*a.approved, ws+"="+hash)
	return nil
}
func (a recordingApprover) Status(string) workspace.Status { return workspace.Status{} }

// TestOrphanDestroyIsApprovedOnItsConfigMap: in review mode the destroy
// plan of an orphan whose Service is gone is approved by the annotation
// on its published ConfigMap in tfccm's namespace; nothing without it,
// nothing by a ConfigMap of that name in the gone Service's namespace,
// and an invalid value is refused with a Warning Event naming the gone
// Service.
func TestOrphanDestroyIsApprovedOnItsConfigMap(t *testing.T) {
	var approved []string
	var events []recordedEvent
	rv := newReviewer(recordingApprover{&approved}, fakeRenderer{}, func(_ runtime.Object, typ, reason, msg string) {
		events = append(events, recordedEvent{typ, reason, msg})
	}, "tfccm")
	owner := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "gone"}}
	hash := strings.Repeat("a", 64)
	planted := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: annotations.PlanConfigMapName("lb-c-gone"),
		Annotations: map[string]string{annotations.ApprovedPlan.Name: hash}}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tfccm", Name: annotations.PlanConfigMapName("lb-c-gone")}}
	client := fake.NewClientset(cm, planted)
	rv.setClient(client)

	rv.approveOrphan(t.Context(), owner, "lb-c-gone")
	if len(approved) != 0 {
		t.Fatalf("approved %v without an annotation in tfccm's namespace", approved)
	}
	cm.Annotations = map[string]string{annotations.ApprovedPlan.Name: hash}
	if _, err := client.CoreV1().ConfigMaps("tfccm").Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rv.approveOrphan(t.Context(), owner, "lb-c-gone")
	if len(approved) != 1 || approved[0] != "lb-c-gone="+hash {
		t.Fatalf("approved %v, want lb-c-gone=%s", approved, hash)
	}
	cm.Annotations = map[string]string{annotations.ApprovedPlan.Name: "not-a-hash"}
	if _, err := client.CoreV1().ConfigMaps("tfccm").Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rv.approveOrphan(t.Context(), owner, "lb-c-gone")
	if len(approved) != 1 || len(events) != 1 || events[0].eventType != corev1.EventTypeWarning || events[0].reason != ReasonPlanNotApproved {
		t.Fatalf("invalid approval: approved %v, events %+v", approved, events)
	}
}
