package lbcontroller

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/annotations"
)

// Plans without a Service: a load balancer's plan ConfigMap and Secret in
// tfccm's namespace carry no owner reference (they cannot point across
// namespaces), so the orphan sweep deletes those whose Service UID no
// longer exists and whose workspace tfccm is not working on (an orphan's
// destroy plan is legitimately without its Service). Written less than
// orphanMinAge ago, a plan is left for the next sweep. The sweep lists the
// plan ConfigMaps only and deletes each one's Secret by name with it:
// tfccm never lists Secrets (its RBAC grants reading only the Secrets it
// names, docs/security.md), and a plan's Secret is written and deleted with
// its ConfigMap.

// planObject is one load balancer plan (its ConfigMap and Secret).
type planObject struct {
	kind, name, workspace string
	uid                   types.UID
	created               time.Time
}

// sweepPlans deletes the load balancer plans whose Service is gone and
// whose workspace keep does not claim; it reports how many it deleted.
func (rv *reviewer) sweepPlans(ctx context.Context, again *sweepAgain, live map[types.UID]bool, keep func(ws string) bool) (int, error) {
	client := rv.kube()
	if client == nil {
		return 0, nil
	}
	objs, err := rv.listPlans(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, o := range objs {
		if live[o.uid] || keep(o.workspace) || again.young(o.created, orphanMinAge) {
			continue
		}
		// The Secret first: a ConfigMap deleted alone would leave its
		// Secret to no later sweep.
		if err := client.CoreV1().Secrets(rv.namespace).Delete(ctx, o.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return n, fmt.Errorf("delete plan Secret %s/%s: %w", rv.namespace, o.name, err)
		}
		if err := client.CoreV1().ConfigMaps(rv.namespace).Delete(ctx, o.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return n, fmt.Errorf("delete plan ConfigMap %s/%s: %w", rv.namespace, o.name, err)
		}
		klog.InfoS("Deleted a plan whose Service no longer exists", "object", klog.KRef(rv.namespace, o.name), "serviceUID", o.uid)
		n++
	}
	return n, nil
}

// listPlans lists the load balancer plan ConfigMaps of tfccm's namespace.
func (rv *reviewer) listPlans(ctx context.Context) ([]planObject, error) {
	client := rv.kube()
	sel := metav1.ListOptions{LabelSelector: annotations.PlanKind + "=" + annotations.PlanOfLoadBalancer}
	cms, err := client.CoreV1().ConfigMaps(rv.namespace).List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("list plan ConfigMaps in %s: %w", rv.namespace, err)
	}
	var out []planObject
	add := func(kind string, m metav1.ObjectMeta) {
		ws, ok := strings.CutPrefix(m.Name, annotations.PlanConfigMapPrefix)
		if !ok {
			return
		}
		out = append(out, planObject{kind: kind, name: m.Name, workspace: ws, uid: types.UID(m.Labels[annotations.PlanServiceUID]), created: m.CreationTimestamp.Time})
	}
	for _, cm := range cms.Items {
		add("ConfigMap", cm.ObjectMeta)
	}
	return out, nil
}
