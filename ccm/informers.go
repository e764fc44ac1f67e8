package ccm

import (
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
)

var _ cloudprovider.InformerUser = (*Cloud)(nil)

// SetInformers is called by the cloud-controller-manager with its shared
// informers, before they start. The LoadBalancer facet watches Nodes and
// Services to re-render workspaces whose template inputs changed, and the
// class loop serves the Services of tfccm's load balancer class; review
// mode watches Services for approvals; the Routes facet reads Nodes; the
// BGP peering facet lists the Services that announce over it.
func (c *Cloud) SetInformers(f informers.SharedInformerFactory) {
	c.lbc.SetInformers(f)
	svcs := f.Core().V1().Services() // the BGP peering's users
	c.services, c.servicesSynced = svcs.Lister(), svcs.Informer().HasSynced
	if _, err := svcs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, _ any) { c.peering.servicesChanged() },
		DeleteFunc: func(any) { c.peering.servicesChanged() },
	}); err != nil {
		klog.ErrorS(err, "Watch Services for the BGP peering")
	}
	if c.routes != nil {
		nodes := f.Core().V1().Nodes()
		nodes.Informer() // registered before the factory starts
		c.routes.setNodeLister(nodes.Lister())
	}
}
