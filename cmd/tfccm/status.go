package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/ccm/lbcontroller"
	"github.com/tfccm/tfccm/config"
)

// runStatus answers `tfccm status` from a workstation, with the user's
// kubeconfig and nothing but cluster reads: the leader (its Lease and
// pod), the Services tfccm serves by phase (from their tfccm.io
// conditions) with those not served and why, and the plans awaiting
// approval. Each section shows what the user's RBAC lets them read and
// names the right missing otherwise; a tenant sees their namespace's
// Services. It exits 1 when there is no live leader.
func runStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tfccm status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var kf kubeFlags
	kf.register(fs)
	var lf leaderFlags
	lf.register(fs)
	serves := &config.Config{}
	fs.StringVar(&serves.LoadBalancerClass, "load-balancer-class", config.DefaultLoadBalancerClass, "the cloud config's load_balancer_class")
	classless := fs.Bool("serve-classless", true, "the cloud config's serve_classless")
	namespace := fs.String("namespace", "", "the namespace whose Services to show when you may not list them cluster-wide (default: the context's)")
	timeout := fs.Duration("timeout", 30*time.Second, "give up talking to the cluster after this long")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: tfccm status [--kubeconfig K] [--context C] [--tfccm-namespace T] [--lease L] [--namespace N] [--load-balancer-class C --serve-classless=false]")
		return exitUsage
	}
	serves.ServeClassless = classless
	client, ns, err := kf.client()
	if err != nil {
		fmt.Fprintf(stderr, "tfccm status: %v\n", err)
		return exitError
	}
	if *namespace != "" {
		ns = *namespace
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	now := time.Now()
	leaderErr := printLeader(ctx, client, lf, now, stdout)
	printServiceStatus(ctx, client, serves, ns, stdout)
	printApprovals(ctx, client, lf.namespace, now, stdout)
	if leaderErr != nil {
		fmt.Fprintf(stderr, "tfccm status: %v\n", leaderErr)
		var perm *permissionError
		if errors.As(leaderErr, &perm) {
			return exitOK // the user may not read the Lease: not a fault of tfccm's
		}
		return exitError
	}
	return exitOK
}

// printLeader prints the leader section; the error is the leader's absence
// (no Lease, no holder, stale) or a read the user may not do.
func printLeader(ctx context.Context, client kubernetes.Interface, lf leaderFlags, now time.Time, w io.Writer) error {
	l, err := findLeader(ctx, client, lf, now)
	if l.identity == "" {
		fmt.Fprintf(w, "Leader:     none (%v)\n", err)
		return err
	}
	since := "unknown"
	if !l.since.IsZero() {
		since = fmt.Sprintf("%s (%s ago)", l.since.UTC().Format(time.RFC3339), duration.HumanDuration(now.Sub(l.since)))
	}
	state := "renewed " + duration.HumanDuration(now.Sub(l.renewed)) + " ago"
	if err != nil {
		state = "STALE: " + state
	}
	fmt.Fprintf(w, "Leader:     pod %s (Lease %s/%s; leading since %s; %s)\n", l.pod, lf.namespace, lf.lease, since, state)
	pod, perr := leaderPod(ctx, client, lf.namespace, l)
	if perr != nil {
		fmt.Fprintf(w, "Pod:        %v\n", perr)
		return err
	}
	node := "node " + pod.Spec.NodeName
	if pod.Spec.NodeName == "" {
		node = "no node (not scheduled)"
	}
	fmt.Fprintf(w, "Pod:        %s on %s\n", pod.Status.Phase, node)
	fmt.Fprintf(w, "Version:    %s\n", podVersion(pod))
	return err
}

// podVersion is the version the leader runs: its image (the release's
// tag) and the chart's version label, if any.
func podVersion(pod *corev1.Pod) string {
	var parts []string
	for _, c := range pod.Spec.Containers {
		if c.Name == leaderContainer {
			parts = append(parts, "image "+c.Image)
		}
	}
	if v := pod.Labels["app.kubernetes.io/version"]; v != "" {
		parts = append(parts, "app.kubernetes.io/version "+v)
	}
	if len(parts) == 0 {
		return "unknown"
	}
	return strings.Join(parts, ", ")
}

// serviceRow is one served Service as status shows it.
type serviceRow struct {
	namespace, name, phase, message string
}

// printServiceStatus prints the served Services by phase and those not
// served with why. A user who may not list Services cluster-wide sees
// their context's namespace.
func printServiceStatus(ctx context.Context, client kubernetes.Interface, serves *config.Config, ns string, w io.Writer) {
	svcs, scope, err := visibleServices(ctx, client, ns)
	if err != nil {
		fmt.Fprintf(w, "Services:   %v\n", err)
		return
	}
	var rows []serviceRow
	byPhase := map[string]int{}
	for i := range svcs {
		s := &svcs[i]
		if !serves.Serves(s) && !hasCleanupFinalizer(*s) {
			continue
		}
		phase, msg := servicePhase(s)
		byPhase[phase]++
		rows = append(rows, serviceRow{s.Namespace, s.Name, phase, msg})
	}
	fmt.Fprintf(w, "Services:   %d served%s%s\n", len(rows), scope, phases(byPhase))
	fmt.Fprintf(w, "In flight:  %d applying or destroying\n", byPhase[lbcontroller.CondReasonApplying]+byPhase["Terminating"])
	var notServed []serviceRow
	for _, r := range rows {
		if r.phase != lbcontroller.CondReasonApplied {
			notServed = append(notServed, r)
		}
	}
	if len(notServed) == 0 {
		return
	}
	sort.Slice(notServed, func(i, j int) bool {
		return notServed[i].namespace+"/"+notServed[i].name < notServed[j].namespace+"/"+notServed[j].name
	})
	fmt.Fprintln(w, "Not served:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAMESPACE\tNAME\tPHASE\tWHY")
	for _, r := range notServed {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", r.namespace, r.name, r.phase, r.message)
	}
	tw.Flush()
}

// visibleServices lists every namespace's Services, or the context
// namespace's when the user may not list them cluster-wide; scope says
// which.
func visibleServices(ctx context.Context, client kubernetes.Interface, ns string) ([]corev1.Service, string, error) {
	list, err := client.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err == nil {
		return list.Items, "", nil
	}
	if !apierrors.IsForbidden(err) {
		return nil, "", readError(err, "list", "services", "", "")
	}
	list, err = client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", readError(err, "list", "services", ns, "")
	}
	return list.Items, " in namespace " + ns + " (you may not list services cluster-wide)", nil
}

// servicePhase is a served Service's phase from tfccm's conditions: the
// reason of Accepted=False (refused), else of Programmed (Applied when
// True), Terminating when deleted, Pending before any condition.
func servicePhase(s *corev1.Service) (phase, message string) {
	if s.DeletionTimestamp != nil {
		return "Terminating", "deleted; its load balancer is being destroyed"
	}
	if c := meta.FindStatusCondition(s.Status.Conditions, lbcontroller.ConditionAccepted); c != nil && c.Status == metav1.ConditionFalse {
		return c.Reason, c.Message
	}
	if c := meta.FindStatusCondition(s.Status.Conditions, lbcontroller.ConditionProgrammed); c != nil {
		if c.Status == metav1.ConditionTrue {
			return lbcontroller.CondReasonApplied, ""
		}
		return c.Reason, c.Message
	}
	return "Pending", "no tfccm condition yet (is the leader running? see the Service's Events)"
}

// phases formats the phase counts: ": 2 Applied, 1 ApplyFailed".
func phases(byPhase map[string]int) string {
	var names []string
	for p := range byPhase {
		names = append(names, p)
	}
	sort.Strings(names)
	var parts []string
	for _, p := range names {
		parts = append(parts, fmt.Sprintf("%d %s", byPhase[p], p))
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, ", ")
}

// printApprovals prints the plans awaiting approval (tfccm approve
// --list), or which right the user lacks to see them.
func printApprovals(ctx context.Context, client kubernetes.Interface, tfccmNamespace string, now time.Time, w io.Writer) {
	fmt.Fprintln(w, "Approvals:")
	var buf strings.Builder
	if err := listPlans(ctx, client, tfccmNamespace, "", now, &buf); err != nil {
		if apierrors.IsForbidden(err) {
			err = readError(err, "list", "configmaps", tfccmNamespace, "")
		}
		fmt.Fprintf(w, "  %v\n", err)
		return
	}
	for _, line := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
		fmt.Fprintln(w, "  "+line)
	}
}
