// The provider's kubernetes connection: node mode's NodeVIP objects.

package tfprovider

import (
	"fmt"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

// kubeModel is the provider's `kubernetes` block.
type kubeModel struct {
	Namespace     types.String `tfsdk:"namespace"`
	ConfigPath    types.String `tfsdk:"config_path"`
	ConfigContext types.String `tfsdk:"config_context"`
}

func kubernetesAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional: true,
		Description: "Instead of a host: the cluster itself, for node mode's `lbhost_node_vip` (NodeVIP objects the node agents serve). " +
			"It connects as kubectl does, with the credentials of the process running OpenTofu (tfccm's: its service account in a pod, " +
			"or the kubeconfig named by `config_path`, else `$KUBECONFIG`); no credential is ever an argument, so none reaches a plan or the state.",
		Attributes: map[string]schema.Attribute{
			"namespace":      schema.StringAttribute{Required: true, Description: "The namespace of the NodeVIP objects: tfccm's, where the node agents watch."},
			"config_path":    schema.StringAttribute{Optional: true, Description: "A kubeconfig file (a path; default `$KUBECONFIG`, `~/.kube/config`, or the pod's in-cluster credentials)."},
			"config_context": schema.StringAttribute{Optional: true, Description: "The kubeconfig context to use (default its current one)."},
		},
	}
}

// kubeConn is the provider's connection to the cluster, made on first use.
type kubeConn struct {
	cfg  kubeModel
	once sync.Once
	dyn  dynamic.Interface
	err  error
}

func (k *kubeConn) client() (dynamic.Interface, error) {
	k.once.Do(func() {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = k.cfg.ConfigPath.ValueString()
		cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.cfg.ConfigContext.ValueString()})
		rc, err := cc.ClientConfig()
		if err != nil {
			k.err = fmt.Errorf("lbhost kubernetes: %w", err)
			return
		}
		rc.UserAgent = "terraform-provider-lbhost"
		k.dyn, k.err = dynamic.NewForConfig(rc)
	})
	return k.dyn, k.err
}
