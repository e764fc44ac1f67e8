package main

import (
	"flag"
	"fmt"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// kubeFlags are the flags naming the cluster, as kubectl's: --kubeconfig
// (else $KUBECONFIG, ~/.kube/config, or a pod's in-cluster credentials)
// and --context.
type kubeFlags struct {
	kubeconfig, context string
}

func (k *kubeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config, or a pod's in-cluster credentials)")
	fs.StringVar(&k.context, "context", "", "the kubeconfig context to use (default: its current context)")
}

// client connects to the cluster and returns the context's namespace
// ("default" when the context names none).
func (k kubeFlags) client() (kubernetes.Interface, string, error) {
	cc := k.clientConfig()
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	c, err := kubernetes.NewForConfig(rc)
	return c, ns, err
}

// connect returns the REST configuration (for pods/exec) and a client.
func (k kubeFlags) connect() (*rest.Config, kubernetes.Interface, error) {
	rc, err := k.clientConfig().ClientConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig: %w", err)
	}
	c, err := kubernetes.NewForConfig(rc)
	return rc, c, err
}

// dynamicClient connects a dynamic client (for custom resources).
func (k kubeFlags) dynamicClient() (dynamic.Interface, error) {
	rc, err := k.clientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return dynamic.NewForConfig(rc)
}

func (k kubeFlags) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.context})
}

// kubeClient connects with kubeconfig's current context.
func kubeClient(kubeconfig string) (kubernetes.Interface, error) {
	c, _, err := kubeFlags{kubeconfig: kubeconfig}.client()
	return c, err
}
