package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/config"
)

// runTakeover answers `tfccm takeover`, the admin's command of a migration
// from MetalLB (compat { metallb_takeover = "prepare" }): it lists Services
// (or all of them) in the ConfigMap config.TakeoverConfigMap of tfccm's
// namespace, which the CCM reads; each listed Service's prepared load
// balancer then announces its addresses in one quick apply. It needs get,
// create and patch on that ConfigMap in tfccm's namespace, nothing in the
// Services'.
func runTakeover(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tfccm takeover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var kf kubeFlags
	kf.register(fs)
	ns := fs.String("tfccm-namespace", config.DefaultNamespace, "tfccm's own namespace (the cloud config's namespace; the Helm chart's release namespace), where the take-over list is")
	all := fs.Bool("all", false, "take every class-less Service over at once")
	timeout := fs.Duration("timeout", 30*time.Second, "give up talking to the cluster after this long")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *all == (fs.NArg() > 0) {
		fmt.Fprintln(stderr, "usage: tfccm takeover [--kubeconfig K] [--context C] [--tfccm-namespace T] (--all | NAMESPACE/NAME...)")
		return exitUsage
	}
	keys, err := takeoverKeys(*all, fs.Args())
	if err != nil {
		fmt.Fprintf(stderr, "tfccm takeover: %v\n", err)
		return exitUsage
	}
	client, _, err := kf.client()
	if err != nil {
		fmt.Fprintf(stderr, "tfccm takeover: %v\n", err)
		return exitError
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := takeOver(ctx, client, *ns, keys, time.Now().UTC()); err != nil {
		fmt.Fprintf(stderr, "tfccm takeover: %v\n", err)
		return exitError
	}
	for _, k := range keys {
		fmt.Fprintf(stdout, "taken over: %s (ConfigMap %s/%s)\n", strings.Replace(k, ".", "/", 1), *ns, config.TakeoverConfigMap)
	}
	return exitOK
}

// takeoverKeys are the ConfigMap keys of the Services named
// NAMESPACE/NAME (or config.TakeoverAll).
func takeoverKeys(all bool, names []string) ([]string, error) {
	if all {
		return []string{config.TakeoverAll}, nil
	}
	keys := make([]string, 0, len(names))
	for _, n := range names {
		ns, name, ok := strings.Cut(n, "/")
		if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1035Label(name)) > 0 {
			return nil, fmt.Errorf("%q: want NAMESPACE/NAME of a Service", n)
		}
		keys = append(keys, config.TakeoverKey(ns, name))
	}
	return keys, nil
}

// takeOver adds keys to the take-over ConfigMap, creating it if need be.
func takeOver(ctx context.Context, client kubernetes.Interface, ns string, keys []string, now time.Time) error {
	data := map[string]string{}
	for _, k := range keys {
		data[k] = now.Format(time.RFC3339)
	}
	cms := client.CoreV1().ConfigMaps(ns)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: config.TakeoverConfigMap, Namespace: ns,
		Labels: map[string]string{"app.kubernetes.io/managed-by": "tfccm"}}, Data: data}
	_, err := cms.Create(ctx, cm, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return wrapTakeover(ns, err)
	}
	patch, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		return err
	}
	_, err = cms.Patch(ctx, config.TakeoverConfigMap, types.MergePatchType, patch, metav1.PatchOptions{})
	return wrapTakeover(ns, err)
}

func wrapTakeover(ns string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("write ConfigMap %s/%s: %w", ns, config.TakeoverConfigMap, err)
}
