package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/ccm/lbcontroller"
	"github.com/tfccm/tfccm/config"
)

// cleanupFinalizer is the service controller's finalizer on a Service whose
// load balancer it created: it goes once the load balancer is destroyed.
const cleanupFinalizer = "service.kubernetes.io/load-balancer-cleanup"

// runServices answers `tfccm services`: the LoadBalancer Services tfccm
// serves (class-less ones unless --serve-classless=false, and those of
// --load-balancer-class: the cloud config's settings) with their state. With
// --uninstall=refuse it fails when there are any (the chart's pre-delete
// hook: uninstalling would leave them Terminating and their load balancers
// running); with --uninstall=delete it deletes them and waits until tfccm
// has destroyed every load balancer.
func runServices(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tfccm services", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config, or the pod's in-cluster credentials)")
	uninstall := fs.String("uninstall", "", "refuse: exit 1 when tfccm serves any Service; delete: delete them and wait for their load balancers' destroys")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long")
	serves := &config.Config{}
	fs.StringVar(&serves.LoadBalancerClass, "load-balancer-class", config.DefaultLoadBalancerClass, "the cloud config's load_balancer_class")
	classless := fs.Bool("serve-classless", true, "the cloud config's serve_classless")
	cfgPath := fs.String("config", "", "read load_balancer_class and serve_classless from this cloud config instead of the flags")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() != 0 || !slices.Contains([]string{"", "refuse", "delete"}, *uninstall) {
		fmt.Fprintln(stderr, "usage: tfccm services [--kubeconfig K] [--config FILE | --load-balancer-class C --serve-classless=false] [--uninstall refuse|delete] [--timeout D]")
		return exitUsage
	}
	serves.ServeClassless = classless
	if *cfgPath != "" {
		cfg, err := config.Load(*cfgPath)
		if err != nil {
			fmt.Fprintf(stderr, "tfccm services: %v\n", err)
			return exitError
		}
		serves = cfg
	}
	client, err := kubeClient(*kubeconfig)
	if err != nil {
		fmt.Fprintf(stderr, "tfccm services: %v\n", err)
		return exitError
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	svcs, err := servedServices(ctx, client, serves)
	if err != nil {
		fmt.Fprintf(stderr, "tfccm services: %v\n", err)
		return exitError
	}
	printServices(stdout, svcs)
	switch {
	case *uninstall == "refuse" && len(svcs) > 0:
		fmt.Fprintf(stderr, "tfccm serves %d LoadBalancer Service(s): %s.\nUninstalling now would leave them Terminating and their load balancers running.\n"+
			"Delete them first (tfccm destroys their load balancers), or set uninstall.loadBalancers=delete.\n", len(svcs), names(svcs))
		return exitError
	case *uninstall == "delete" && len(svcs) > 0:
		if err := deleteAndWait(ctx, client, serves, svcs, stdout); err != nil {
			fmt.Fprintf(stderr, "tfccm services: %v\n", err)
			return exitError
		}
	}
	return exitOK
}

// servedServices are the LoadBalancer Services tfccm serves
// (config.Serves), plus any still holding one of its cleanup
// finalizers (a Service whose type changed, or one being deleted), by
// namespace/name.
func servedServices(ctx context.Context, client kubernetes.Interface, serves *config.Config) ([]corev1.Service, error) {
	list, err := client.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list Services: %w", err)
	}
	var out []corev1.Service
	for _, s := range list.Items {
		lb := serves.Serves(&s)
		if lb || hasCleanupFinalizer(s) {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
	return out, nil
}

// hasCleanupFinalizer: the Service's load balancer is still to be
// destroyed by tfccm (through the service controller or its class loop).
func hasCleanupFinalizer(s corev1.Service) bool {
	return slices.Contains(s.Finalizers, cleanupFinalizer) || slices.Contains(s.Finalizers, annotations.ClassFinalizer)
}

func key(s corev1.Service) string { return s.Namespace + "/" + s.Name }

func names(svcs []corev1.Service) string {
	var n []string
	for _, s := range svcs {
		n = append(n, key(s))
	}
	return strings.Join(n, ", ")
}

// serviceState is what a user sees of a Service: Terminating (deleted, the
// finalizer waits for the destroy), Pending (no ingress yet) or its ingress.
func serviceState(s corev1.Service) string {
	if s.DeletionTimestamp != nil {
		return "Terminating"
	}
	var ips []string
	for _, in := range s.Status.LoadBalancer.Ingress {
		ips = append(ips, in.IP+in.Hostname)
	}
	if len(ips) == 0 {
		return "Pending"
	}
	return strings.Join(ips, ",")
}

// printServices lists svcs; HOLDER is the LB host (baremetal) or node
// (nodes) holding each VIP, from tfccm.io/VIPHeld ("-" for other sets).
func printServices(w io.Writer, svcs []corev1.Service) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tSTATE\tHOLDER\tFINALIZER")
	for _, s := range svcs {
		holder := lbcontroller.VIPHolders(s.Status.Conditions)
		if holder == "" {
			holder = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\n", s.Namespace, s.Name, serviceState(s), holder, hasCleanupFinalizer(s))
	}
	tw.Flush()
}

// deleteAndWait deletes svcs and waits until each is gone: the service
// controller (or tfccm's class loop) removes the finalizer only after tfccm destroyed its load
// balancer, so nothing is left behind.
func deleteAndWait(ctx context.Context, client kubernetes.Interface, serves *config.Config, svcs []corev1.Service, w io.Writer) error {
	for _, s := range svcs {
		if s.DeletionTimestamp != nil {
			continue
		}
		if err := client.CoreV1().Services(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("delete %s: %w", key(s), err)
		}
		fmt.Fprintf(w, "deleted %s\n", key(s))
	}
	err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		left, err := servedServices(ctx, client, serves)
		if err != nil {
			return false, nil // keep trying until the timeout
		}
		if len(left) > 0 {
			fmt.Fprintf(w, "waiting for tfccm to destroy the load balancers of %s\n", names(left))
		}
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("load balancers not destroyed in time (see the Services' Events; docs/operations.md): %w", err)
	}
	fmt.Fprintln(w, "every load balancer is destroyed")
	return nil
}
