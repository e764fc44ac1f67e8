package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/templates"
)

// approveOptions are the flags of `tfccm approve`.
type approveOptions struct {
	// tfccmNamespace is tfccm's own namespace (the cloud config's
	// `namespace`), where plans are published and approved.
	tfccmNamespace string
	namespace      string
	service        string
	routes         bool
	peering        bool // the BGP peering's plan
	planHash       string
	yes            bool
}

// runApprove answers `tfccm approve`, the approver's command: with --list
// it lists the plans awaiting approval; otherwise it prints one plan
// awaiting approval (from its ConfigMap in tfccm's namespace) and, with
// --plan-hash or --yes, approves exactly that plan by setting
// tfccm.io/approved-plan on that ConfigMap. An approver needs get, list and
// patch on ConfigMaps in tfccm's namespace, nothing in the Services'.
func runApprove(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tfccm approve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var kf kubeFlags
	kf.register(fs)
	var o approveOptions
	fs.StringVar(&o.tfccmNamespace, "tfccm-namespace", config.DefaultNamespace, "tfccm's own namespace (the cloud config's namespace; the Helm chart's release namespace), where plans are published and approvers approve them")
	fs.StringVar(&o.namespace, "namespace", "", "the Service's namespace (default: the context's); with --list, only this namespace's Services")
	fs.StringVar(&o.service, "service", "", "the LoadBalancer Service whose plan to show or approve (also one deleted whose orphaned load balancer awaits its destroy)")
	fs.BoolVar(&o.routes, "routes", false, "show or approve the routes plan instead of a Service's")
	fs.BoolVar(&o.peering, "peering", false, "show or approve the BGP peering's plan (workspace bgp-peering) instead of a Service's")
	fs.StringVar(&o.planHash, "plan-hash", "", "approve this plan hash (it must be the pending plan's)")
	fs.BoolVar(&o.yes, "yes", false, "approve the plan shown")
	list := fs.Bool("list", false, "list the plans awaiting approval (every namespace's unless --namespace): target, age, hash, summary")
	timeout := fs.Duration("timeout", 30*time.Second, "give up talking to the cluster after this long")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	targets := btoi(o.service != "") + btoi(o.routes) + btoi(o.peering)
	badList := *list && (targets > 0 || o.planHash != "" || o.yes)
	if fs.NArg() != 0 || badList || (!*list && targets != 1) {
		fmt.Fprintln(stderr, "usage: tfccm approve [--kubeconfig K] [--context C] [--tfccm-namespace T] (--list [--namespace N] | [--namespace N] --service S | --routes | --peering) [--plan-hash H | --yes]")
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
		err = listPlans(ctx, client, o.tfccmNamespace, o.namespace, time.Now(), stdout)
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

// approve prints the pending plan and, if asked, approves it: the
// approval names the hash shown and is written only if the ConfigMap is
// still the one shown (its resourceVersion), so a plan replaced meanwhile
// is never approved unseen.
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
	patch, err := approvalPatch(hash, cm.ResourceVersion)
	if err != nil {
		return err
	}
	_, err = client.CoreV1().ConfigMaps(cm.Namespace).Patch(ctx, cm.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsConflict(err) {
		return fmt.Errorf("approve %s: ConfigMap %s/%s changed since it was read (a new plan?); nothing approved, review it again", target, cm.Namespace, cm.Name)
	}
	if err != nil {
		return fmt.Errorf("approve %s: %w", target, err)
	}
	fmt.Fprintf(stdout, "Approved plan %s for %s.\n", hash, target)
	return nil
}

// pendingPlan finds the ConfigMap in tfccm's namespace publishing the plan
// to approve, by name (routes, bgp-peering) or by the Service's labels: the Service
// itself is not read (an approver needs no access to its namespace).
func pendingPlan(ctx context.Context, client kubernetes.Interface, o approveOptions) (*corev1.ConfigMap, string, error) {
	cms := client.CoreV1().ConfigMaps(o.tfccmNamespace)
	if o.routes || o.peering {
		ws := templates.RoutesWorkspaceName
		if o.peering {
			ws = templates.PeeringWorkspaceName
		}
		name := annotations.PlanConfigMapName(ws)
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, "", fmt.Errorf("%s: %w", ws, errNoPlan)
		}
		if err != nil {
			return nil, "", fmt.Errorf("%s plan (ConfigMap %s/%s): %w", ws, o.tfccmNamespace, name, err)
		}
		return cm, ws, nil
	}
	target := fmt.Sprintf("Service %s/%s", o.namespace, o.service)
	sel := labels.SelectorFromSet(labels.Set{
		annotations.ManagedBy:            "tfccm",
		annotations.PlanKind:             annotations.PlanOfLoadBalancer,
		annotations.PlanServiceNamespace: o.namespace,
		annotations.PlanServiceName:      o.service,
	})
	list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, "", fmt.Errorf("%s: list plan ConfigMaps in %s: %w", target, o.tfccmNamespace, err)
	}
	switch len(list.Items) {
	case 0:
		return nil, "", fmt.Errorf("%s: %w", target, errNoPlan)
	case 1:
		return &list.Items[0], target, nil
	}
	var found []string
	for _, cm := range list.Items {
		found = append(found, fmt.Sprintf("%s (Service UID %s)", cm.Name, cm.Labels[annotations.PlanServiceUID]))
	}
	sort.Strings(found)
	return nil, "", fmt.Errorf("%s: %d plans, of Services of this name with different UIDs (one deleted and created again?): %s; approve by hand on the right ConfigMap in %s",
		target, len(list.Items), strings.Join(found, ", "), o.tfccmNamespace)
}

var errNoPlan = errors.New("no plan awaiting approval (is review mode on, the plan made, and --tfccm-namespace tfccm's namespace?)")

// approvalPatch is the merge patch that sets the approval annotation on
// the plan ConfigMap read at resourceVersion (the apiserver refuses it with
// a conflict if the ConfigMap changed since).
func approvalPatch(hash, resourceVersion string) ([]byte, error) {
	meta := map[string]any{"annotations": map[string]string{annotations.ApprovedPlan.Name: hash}}
	if resourceVersion != "" {
		meta["resourceVersion"] = resourceVersion
	}
	return json.Marshal(map[string]any{"metadata": meta})
}
