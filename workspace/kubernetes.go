package workspace

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// removeKubernetesState deletes the state Secret and lock Lease the
// kubernetes backend keeps for a destroyed workspace (tofu cannot delete
// the default workspace's state itself). Only the settings tfccm needs
// are read: config_path, config_context, in_cluster_config, namespace and
// secret_suffix.
func removeKubernetesState(ctx context.Context, b BackendInfo) error {
	client, ns, suffix, err := kubernetesBackendClient(b)
	if err != nil {
		return err
	}
	name := "tfstate-default-" + suffix
	if err := client.CoreV1().Secrets(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete state secret %s/%s: %w", ns, name, err)
	}
	if err := client.CoordinationV1().Leases(ns).Delete(ctx, "lock-"+name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete lock lease %s/lock-%s: %w", ns, name, err)
	}
	return nil
}

// kubernetesStateOutputs reads the root outputs of the default
// workspace's state straight from the kubernetes backend's state Secret
// (one GET, where `tofu output` is a process, or with runners a Job). A
// state that is not plain (encrypted: terraform.encryption) is an error,
// and tofu reads it instead.
func kubernetesStateOutputs(ctx context.Context, b BackendInfo) (map[string]outputMeta, error) {
	client, ns, suffix, err := kubernetesBackendClient(b)
	if err != nil {
		return nil, err
	}
	name := "tfstate-default-" + suffix
	secret, err := client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("state secret %s/%s: %w", ns, name, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(secret.Data["tfstate"]))
	if err != nil {
		return nil, fmt.Errorf("state secret %s/%s: %w", ns, name, err)
	}
	doc, err := io.ReadAll(io.LimitReader(zr, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("state secret %s/%s: %w", ns, name, err)
	}
	return stateOutputs(doc)
}

// unlockKubernetesLease releases the kubernetes backend's lock Lease held
// with lock ID id. tofu force-unlock cannot: it loads the state first, and
// when the state Secret does not exist yet (a crash during the first init)
// loading it needs the very lock it is asked to release.
func unlockKubernetesLease(ctx context.Context, b BackendInfo, id string) error {
	client, ns, suffix, err := kubernetesBackendClient(b)
	if err != nil {
		return err
	}
	name := "lock-tfstate-default-" + suffix
	lease, err := client.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("lock lease %s/%s: %w", ns, name, err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != id {
		return fmt.Errorf("lock lease %s/%s is not held with lock ID %s", ns, name, id)
	}
	lease.Spec.HolderIdentity = nil
	delete(lease.Annotations, "app.terraform.io/lock-info")
	// The resourceVersion makes this a compare-and-swap: a lock taken in
	// between is left alone.
	if _, err := client.CoordinationV1().Leases(ns).Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("release lock lease %s/%s: %w", ns, name, err)
	}
	return nil
}

// kubernetesBackendClient builds a client from the kubernetes backend's
// settings tfccm reads (config_path, config_context, in_cluster_config)
// and returns it with the namespace and secret_suffix.
func kubernetesBackendClient(b BackendInfo) (kubernetes.Interface, string, string, error) {
	str := func(k string) string {
		v, ok := b.Attributes[k]
		if !ok || v.IsNull() || !v.IsKnown() || v.Type().FriendlyName() != "string" {
			return ""
		}
		return v.AsString()
	}
	suffix := str("secret_suffix")
	if suffix == "" {
		return nil, "", "", fmt.Errorf("backend has no secret_suffix")
	}
	ns := str("namespace")
	if ns == "" {
		ns = "default"
	}
	var cfg *rest.Config
	var err error
	if v, ok := b.Attributes["in_cluster_config"]; ok && v.IsKnown() && !v.IsNull() && v.Type().FriendlyName() == "bool" && v.True() {
		cfg, err = rest.InClusterConfig()
	} else {
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: str("config_path")}
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: str("config_context")}).ClientConfig()
	}
	if err != nil {
		return nil, "", "", fmt.Errorf("kubernetes client config: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", "", fmt.Errorf("kubernetes client: %w", err)
	}
	return client, ns, suffix, nil
}
