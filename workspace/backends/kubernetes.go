package backends

// The kubernetes backend as tfccm reaches it itself, beside tofu: its
// state Secret (read, removed) and its lock Lease (released), through one
// client per connection.

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// RemoveKubernetesState deletes the state Secret and lock Lease the
// kubernetes backend keeps for a destroyed workspace (tofu cannot delete
// the default workspace's state itself). Only the settings tfccm needs
// are read: config_path, config_context, in_cluster_config, namespace and
// secret_suffix.
func RemoveKubernetesState(ctx context.Context, b Info) error {
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

// KubernetesState reads the default workspace's state document straight
// from the kubernetes backend's state Secret (one GET, where `tofu output`
// is a process, or with runners a Job). An encrypted state
// (terraform.encryption) is returned as stored: its reader tells.
func KubernetesState(ctx context.Context, b Info) ([]byte, error) {
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
	return doc, nil
}

// UnlockKubernetesLease releases the kubernetes backend's lock Lease held
// with lock ID id. tofu force-unlock cannot: it loads the state first, and
// when the state Secret does not exist yet (a crash during the first init)
// loading it needs the very lock it is asked to release.
func UnlockKubernetesLease(ctx context.Context, b Info, id string) error {
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

// kubernetesBackendClient returns a client for the kubernetes backend's
// connection settings tfccm reads (config_path, config_context,
// in_cluster_config), one per distinct connection (backendClients), with
// the namespace and secret_suffix.
func kubernetesBackendClient(b Info) (kubernetes.Interface, string, string, error) {
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
	conn := backendConnection{Path: str("config_path"), Context: str("config_context")}
	if v, ok := b.Attributes["in_cluster_config"]; ok && v.IsKnown() && !v.IsNull() && v.Type().FriendlyName() == "bool" && v.True() {
		conn = backendConnection{InCluster: true}
	}
	client, err := backendClients.get(conn)
	if err != nil {
		return nil, "", "", err
	}
	return client, ns, suffix, nil
}

// backendConnection is what a kubernetes backend connects with: the
// in-cluster configuration, or a kubeconfig file and context.
type backendConnection struct {
	InCluster bool   `json:"in_cluster,omitempty"`
	Path      string `json:"path,omitempty"`
	Context   string `json:"context,omitempty"`
	// Sum is the kubeconfig file's content (sha256): the same path with
	// new credentials is another connection.
	Sum string `json:"sum,omitempty"`
}

// client builds a client for c.
func (c backendConnection) client() (kubernetes.Interface, error) {
	var cfg *rest.Config
	var err error
	if c.InCluster {
		cfg, err = rest.InClusterConfig()
	} else {
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: c.Path}
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: c.Context}).ClientConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes client config: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return client, nil
}

// backendClients holds the clients of the kubernetes backends tfccm
// talks to: outputs are read after every apply, and building a client
// (reading and parsing a kubeconfig, a new clientset) each time is work
// thrown away.
var backendClients = &clientCache{max: 8}

// clientCache holds one client per backend connection, at most max
// (a controller has a handful of backends; past max an arbitrary one is
// dropped). It is safe for concurrent use.
type clientCache struct {
	max     int
	mu      sync.Mutex
	clients map[string]kubernetes.Interface
}

// get returns the client for conn, built on first use. conn's kubeconfig
// file is read each time (its content is part of the key); a file that
// cannot be read is left to the client's own loading to report.
func (c *clientCache) get(conn backendConnection) (kubernetes.Interface, error) {
	if !conn.InCluster && conn.Path != "" {
		b, err := os.ReadFile(conn.Path)
		if err != nil {
			return conn.client()
		}
		conn.Sum = fmt.Sprintf("%x", sha256.Sum256(b))
	}
	key, err := json.Marshal(conn)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if client, ok := c.clients[string(key)]; ok {
		return client, nil
	}
	client, err := conn.client()
	if err != nil {
		return nil, err
	}
	if c.clients == nil {
		c.clients = map[string]kubernetes.Interface{}
	}
	for k := range c.clients {
		if len(c.clients) < c.max {
			break
		}
		delete(c.clients, k)
	}
	c.clients[string(key)] = client
	return client, nil
}
