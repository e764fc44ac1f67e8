package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/annotations"
)

// approveOptions are the flags of `tfccm approve`.
type approveOptions struct {
	namespace string
	service   string
	routes    bool
	planHash  string
	yes       bool
}

// runApprove answers `tfccm approve`: with --list it lists the plans
// awaiting approval; otherwise it prints one plan awaiting approval (from
// its ConfigMap) and, with --plan-hash or --yes, approves it by setting
// tfccm.io/approved-plan on the Service (or, with --routes, on the routes
// plan ConfigMap).
func runApprove(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tfccm approve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var kf kubeFlags
	kf.register(fs)
	var o approveOptions
	fs.StringVar(&o.namespace, "namespace", "", "the Service's namespace (default: the context's); with --list, only this namespace")
	fs.StringVar(&o.service, "service", "", "the LoadBalancer Service whose plan to show or approve")
	fs.BoolVar(&o.routes, "routes", false, "show or approve the routes plan instead of a Service's")
	fs.StringVar(&o.planHash, "plan-hash", "", "approve this plan hash (it must be the pending plan's)")
	fs.BoolVar(&o.yes, "yes", false, "approve the plan shown")
	list := fs.Bool("list", false, "list the plans awaiting approval (every namespace unless --namespace): target, age, hash, summary")
	timeout := fs.Duration("timeout", 30*time.Second, "give up talking to the cluster after this long")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	badList := *list && (o.service != "" || o.routes || o.planHash != "" || o.yes)
	if fs.NArg() != 0 || badList || (!*list && (o.service == "") == !o.routes) {
		fmt.Fprintln(stderr, "usage: tfccm approve [--kubeconfig K] [--context C] (--list [--namespace N] | [--namespace N] --service S | --routes) [--plan-hash H | --yes]")
		return exitUsage
	}
	if o.planHash != "" {
		h, err := annotations.ApprovedPlan.Parse(o.planHash)
		if err != nil {
			fmt.Fprintf(stderr, "tfccm approve: --plan-hash: %v\n", err)
			return exitUsage
		}
		o.planHash = h
	}
	client, ns, err := kf.client()
	if err != nil {
		fmt.Fprintf(stderr, "tfccm approve: %v\n", err)
		return exitError
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if *list {
		err = listPlans(ctx, client, o.namespace, time.Now(), stdout)
	} else {
		if o.namespace == "" {
			o.namespace = ns
		}
		err = approve(ctx, client, o, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "tfccm approve: %v\n", err)
		return exitError
	}
	return exitOK
}

// approve prints the pending plan and, if asked, approves it.
func approve(ctx context.Context, client kubernetes.Interface, o approveOptions, stdout io.Writer) error {
	cm, target, err := pendingPlan(ctx, client, o)
	if err != nil {
		return err
	}
	hash := cm.Annotations[annotations.PlanHash]
	fmt.Fprintf(stdout, "Plan for %s, published in ConfigMap %s/%s\nPlan hash: %s\nSummary:   %s\n\n%s\n",
		target, cm.Namespace, cm.Name, hash, cm.Data["summary"], cm.Data["plan.txt"])
	switch {
	case o.planHash == "" && !o.yes:
		fmt.Fprintf(stdout, "Not approved. To approve exactly this plan: tfccm approve ... --plan-hash %s\n", hash)
		return nil
	case o.planHash != "" && o.planHash != hash:
		return fmt.Errorf("--plan-hash %s is not the pending plan %s (the plan changed since it was reviewed?); nothing approved", o.planHash, hash)
	}
	if !annotations.ValidPlanHash(hash) {
		return fmt.Errorf("ConfigMap %s/%s has no valid %s annotation; nothing approved", cm.Namespace, cm.Name, annotations.PlanHash)
	}
	patch, err := approvalPatch(hash)
	if err != nil {
		return err
	}
	if o.routes {
		_, err = client.CoreV1().ConfigMaps(cm.Namespace).Patch(ctx, cm.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	} else {
		_, err = client.CoreV1().Services(o.namespace).Patch(ctx, o.service, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	if err != nil {
		return fmt.Errorf("approve %s: %w", target, err)
	}
	fmt.Fprintf(stdout, "Approved plan %s for %s.\n", hash, target)
	return nil
}

// pendingPlan finds the ConfigMap publishing the plan to approve.
func pendingPlan(ctx context.Context, client kubernetes.Interface, o approveOptions) (*corev1.ConfigMap, string, error) {
	if o.routes {
		name := annotations.PlanConfigMapName("routes")
		cm, err := client.CoreV1().ConfigMaps(annotations.RoutesPlanNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, "", fmt.Errorf("routes plan (ConfigMap %s/%s): %w", annotations.RoutesPlanNamespace, name, err)
		}
		return cm, "routes", nil
	}
	target := fmt.Sprintf("Service %s/%s", o.namespace, o.service)
	svc, err := client.CoreV1().Services(o.namespace).Get(ctx, o.service, metav1.GetOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", target, err)
	}
	sel := labels.SelectorFromSet(labels.Set{annotations.ManagedBy: "tfccm", annotations.PlanServiceUID: string(svc.UID)})
	list, err := client.CoreV1().ConfigMaps(o.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, "", fmt.Errorf("%s: list plan ConfigMaps: %w", target, err)
	}
	switch len(list.Items) {
	case 0:
		return nil, "", fmt.Errorf("%s: %w", target, errNoPlan)
	case 1:
		return &list.Items[0], target, nil
	default:
		return nil, "", fmt.Errorf("%s: %d plan ConfigMaps carry its UID; expected one", target, len(list.Items))
	}
}

var errNoPlan = errors.New("no plan awaiting approval (is review mode on and the plan made?)")

// approvalPatch is the merge patch that sets the approval annotation.
func approvalPatch(hash string) ([]byte, error) {
	return json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{annotations.ApprovedPlan.Name: hash}}})
}
