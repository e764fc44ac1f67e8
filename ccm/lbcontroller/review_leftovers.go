package lbcontroller

import (
	"context"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/annotations"
)

// Plans left by an earlier version: tfccm used to publish a Service's plan
// (ConfigMap and sealed Secret tfccm-plan-<workspace>) in the Service's own
// namespace, where its tenant can write. Those objects are never read any
// more: not as plans, not as approvals (a pending plan is made again and
// published in tfccm's namespace, and needs an approval there). tfccm
// leaves them in place — it needs no rights in tenant namespaces — and
// names them once at start in its log, if it may list ConfigMaps in every
// namespace; docs/gitops.md gives the command that deletes them.

// leftoverListLimit bounds the one list of the earlier version's plans.
const leftoverListLimit = 500

// reportLeftovers logs the plan ConfigMaps an earlier version left outside
// tfccm's namespace.
func (rv *reviewer) reportLeftovers(ctx context.Context) {
	client := rv.kube()
	if client == nil {
		return
	}
	found, err := leftovers(ctx, client, rv.namespace)
	switch {
	case apierrors.IsForbidden(err):
		klog.V(2).InfoS("Not looking for plans an earlier tfccm left in Services' namespaces (no list on ConfigMaps in every namespace); they are ignored either way")
		return
	case err != nil:
		klog.ErrorS(err, "Look for plans an earlier tfccm left in Services' namespaces")
		return
	}
	for _, cm := range found {
		klog.InfoS("Ignoring a plan ConfigMap an earlier tfccm published in the Service's namespace: plans and approvals are read only in tfccm's namespace, so it approves nothing; delete it and the Secret of the same name",
			"configMap", cm, "tfccmNamespace", rv.namespace)
	}
}

// leftovers lists the plan ConfigMaps (namespace/name) outside tfccm's
// namespace.
func leftovers(ctx context.Context, client kubernetes.Interface, tfccmNamespace string) ([]string, error) {
	list, err := client.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		LabelSelector: annotations.ManagedBy + "=tfccm," + annotations.PlanServiceUID, Limit: leftoverListLimit})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, cm := range list.Items {
		if cm.Namespace != tfccmNamespace && strings.HasPrefix(cm.Name, annotations.PlanConfigMapPrefix) {
			out = append(out, cm.Namespace+"/"+cm.Name)
		}
	}
	return out, nil
}
