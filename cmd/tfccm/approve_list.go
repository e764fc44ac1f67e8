package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/annotations"
)

// pendingRow is one plan awaiting approval, as `tfccm approve --list`
// prints it.
type pendingRow struct {
	namespace, target, hash, summary string
	published                        time.Time
}

// listPlans prints the plans awaiting approval in namespace ("" = all):
// the published plan ConfigMaps, each named by its Service (or routes).
func listPlans(ctx context.Context, client kubernetes.Interface, namespace string, now time.Time, w io.Writer) error {
	sel := labels.SelectorFromSet(labels.Set{annotations.ManagedBy: "tfccm"}).String()
	cms, err := client.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return fmt.Errorf("list plan ConfigMaps: %w", err)
	}
	svcs, err := client.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list Services: %w", err)
	}
	names := map[string]string{}
	for _, s := range svcs.Items {
		names[string(s.UID)] = s.Name
	}
	var rows []pendingRow
	for i := range cms.Items {
		if r, ok := pendingOf(&cms.Items[i], names); ok {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		fmt.Fprintln(w, "No plans awaiting approval.")
		return nil
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].namespace != rows[j].namespace {
			return rows[i].namespace < rows[j].namespace
		}
		return rows[i].target < rows[j].target
	})
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tTARGET\tAGE\tPLAN HASH\tSUMMARY")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.namespace, r.target, duration.HumanDuration(now.Sub(r.published)), r.hash, r.summary)
	}
	return tw.Flush()
}

// pendingOf reads one plan ConfigMap; ok is false for one that is not a
// plan (no valid hash). A Service's plan whose Service is gone is listed
// by its UID.
func pendingOf(cm *corev1.ConfigMap, serviceNames map[string]string) (pendingRow, bool) {
	hash := cm.Annotations[annotations.PlanHash]
	if !annotations.ValidPlanHash(hash) {
		return pendingRow{}, false
	}
	r := pendingRow{namespace: cm.Namespace, hash: hash, summary: cm.Data["summary"], published: published(cm)}
	switch uid := cm.Labels[annotations.PlanServiceUID]; {
	case cm.Namespace == annotations.RoutesPlanNamespace && cm.Name == annotations.PlanConfigMapName("routes"):
		r.target = "routes"
	case serviceNames[uid] != "":
		r.target = "service/" + serviceNames[uid]
	default:
		r.target = "service uid " + uid + " (gone)"
	}
	return r, true
}

// published is when the plan was last written: the newest managed-fields
// time (an update replaces the plan in place), else the creation time.
func published(cm *corev1.ConfigMap) time.Time {
	t := cm.CreationTimestamp.Time
	for _, f := range cm.ManagedFields {
		if f.Time != nil && f.Time.After(t) {
			t = f.Time.Time
		}
	}
	return t
}
