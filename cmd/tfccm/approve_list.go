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
	"github.com/tfccm/tfccm/templates"
)

// pendingRow is one plan awaiting approval, as `tfccm approve --list`
// prints it.
type pendingRow struct {
	namespace, target, hash, summary string
	published                        time.Time
}

// listPlans prints the plans awaiting approval, published in tfccm's
// namespace: every Service's (only namespace's when not "") and the
// cluster plans, routes and BGP peering (when namespace is ""), each
// named by its Service (or routes, peering) from the ConfigMap's labels.
func listPlans(ctx context.Context, client kubernetes.Interface, tfccmNamespace, namespace string, now time.Time, w io.Writer) error {
	set := labels.Set{annotations.ManagedBy: "tfccm"}
	if namespace != "" {
		set[annotations.PlanServiceNamespace] = namespace
	}
	cms, err := client.CoreV1().ConfigMaps(tfccmNamespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(set).String()})
	if err != nil {
		return fmt.Errorf("list plan ConfigMaps in %s: %w", tfccmNamespace, err)
	}
	var rows []pendingRow
	for i := range cms.Items {
		if r, ok := pendingOf(&cms.Items[i]); ok {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		fmt.Fprintf(w, "No plans awaiting approval in %s.\n", tfccmNamespace)
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
// plan (no valid hash, or neither a Service's, the routes nor the BGP
// peering plan).
func pendingOf(cm *corev1.ConfigMap) (pendingRow, bool) {
	hash := cm.Annotations[annotations.PlanHash]
	if !annotations.ValidPlanHash(hash) {
		return pendingRow{}, false
	}
	r := pendingRow{hash: hash, summary: cm.Data["summary"], published: published(cm)}
	switch {
	case cm.Name == annotations.PlanConfigMapName(templates.RoutesWorkspaceName):
		r.namespace, r.target = "-", "routes"
	case cm.Name == annotations.PlanConfigMapName(templates.PeeringWorkspaceName):
		r.namespace, r.target = "-", "peering"
	case cm.Labels[annotations.PlanServiceName] != "":
		r.namespace, r.target = cm.Labels[annotations.PlanServiceNamespace], "service/"+cm.Labels[annotations.PlanServiceName]
	default:
		return pendingRow{}, false
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
