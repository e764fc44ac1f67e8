package workspace

import (
	"context"
	"fmt"

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
	str := func(k string) string {
		v, ok := b.Attributes[k]
		if !ok || v.IsNull() || !v.IsKnown() || v.Type().FriendlyName() != "string" {
			return ""
		}
		return v.AsString()
	}
	suffix := str("secret_suffix")
	if suffix == "" {
		return fmt.Errorf("backend has no secret_suffix")
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
		return fmt.Errorf("kubernetes client config: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
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
