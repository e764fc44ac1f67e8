package ccm

import (
	"context"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/ccm/lbcontroller"
	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
	"github.com/tfccm/tfccm/workspace/jobrunner"
	"github.com/tfccm/tfccm/workspace/locks"
)

// ProviderName is the name registered with k8s.io/cloud-provider.
const ProviderName = "terraform"

func init() {
	cloudprovider.RegisterCloudProvider(ProviderName, func(r io.Reader) (cloudprovider.Interface, error) {
		if r == nil {
			return nil, fmt.Errorf("--cloud-config is required for the %s provider", ProviderName)
		}
		src, err := io.ReadAll(r)
		if err != nil {
			return nil, fmt.Errorf("read cloud config: %w", err)
		}
		name := "cloud-config"
		if f, ok := r.(interface{ Name() string }); ok {
			name = f.Name()
		}
		cfg, err := config.Parse(src, name)
		if err != nil {
			return nil, err
		}
		return New(cfg)
	})
}

var _ cloudprovider.Interface = (*Cloud)(nil)

// Cloud is tfccm's cloudprovider.Interface.
type Cloud struct {
	cfg *config.Config

	templates *templates.Loader
	engine    *workspace.Engine
	// lbc is the load-balancer controller: the Services' lifecycle, review
	// mode and the Events (the LoadBalancer facet delegates to it).
	lbc    *lbcontroller.Controller
	routes *routes // nil when disabled
	// peering applies the cluster's BGP peering workspace when the set
	// has a bgp module and the settings a bgp block.
	peering *peering
	// services lists the Services (SetInformers): the peering's users.
	services       corelisters.ServiceLister
	servicesSynced func() bool
	instances      *instanceFacet // nil when disabled (also serves Instances v1 and Zones)

	// incarnations tells earlier leaders' state locks from anyone else's.
	incarnations *incarnations
	// runnerLocks tells this controller's ended runner pods' state locks
	// (runner = "job"); nil for the in-process runner.
	runnerLocks *jobrunner.Locks
}

// New builds a Cloud from a loaded config: it loads and validates the
// template set (built-in plus override directory) and prepares the
// workspace engine. Facets start their background work in Initialize.
func New(cfg *config.Config) (*Cloud, error) {
	c := &Cloud{cfg: cfg, incarnations: newIncarnations(locks.LockOwner())}
	loader, err := templates.NewLoader(cfg)
	if err != nil {
		return nil, fmt.Errorf("templates: %w", err)
	}
	c.templates = loader
	// A set only OpenTofu runs (baremetal: provider for_each) with
	// HashiCorp Terraform as the binary: say so now, not at every plan.
	if err := templates.CheckBinary(context.Background(), loader.Set(), cfg.Terraform.Binary); err != nil {
		return nil, fmt.Errorf("templates: %w", err)
	}
	if err := templates.CheckEncryption(context.Background(), cfg.Encryption, cfg.Terraform.Binary); err != nil {
		return nil, fmt.Errorf("encryption: %w", err)
	}
	gate, err := newGate(cfg)
	if err != nil {
		return nil, err
	}
	// Review mode keeps pending plans in Secrets; in any mode the engine
	// deletes the kept plan of a workspace it destroys (an orphan's destroy
	// plan published by a controller in review mode, say). A plan also
	// waits for approval when a policy rule asks for it (or a change window
	// holds it): its publication and approval are review mode's.
	c.lbc = lbcontroller.New(cfg, loader, cfg.Terraform.Review || gate != nil)
	// The orphan sweep finds load balancers in the state backend through
	// the catalog, not only in the work dir (an emptyDir in the chart).
	catalog, err := templates.Catalog(cfg)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	opts := workspace.OptionsFor(cfg)
	opts.Catalog = catalog
	opts.GoneLockHolder = c.incarnations.gone
	opts.OnResult, opts.OnApplyStart = c.onResult, c.onApplyStart
	opts.Gate, opts.Plans = gate.engineGate(), c.lbc.Plans()
	if c.runnerLocks, err = jobRunner(cfg, &opts); err != nil {
		return nil, err
	}
	engine, err := workspace.New(opts)
	if err != nil {
		return nil, fmt.Errorf("workspace engine: %w", err)
	}
	c.engine = engine
	if err := c.buildFacets(); err != nil {
		return nil, err
	}
	return c, nil
}

// buildFacets builds the facets over the engine: the load-balancer
// controller's, Routes and Instances when the config enables them.
func (c *Cloud) buildFacets() error {
	c.lbc.Attach(c.engine)
	if routesEnabled(c.cfg) {
		var review routesReview
		if c.lbc.Reviewing() {
			review = c.lbc
		}
		c.routes = newRoutes(engineRoutes{engine: c.engine, render: routesRenderer{cfg: c.cfg, loader: c.templates}}, review, c.cfg.Routes.BatchWindow)
	}
	var review clusterReview
	if c.lbc.Reviewing() {
		review = c.lbc
	}
	c.peering = newPeering(&enginePeering{engine: c.engine, cfg: c.cfg, loader: c.templates}, review, c.peeringUsers,
		func(svc *corev1.Service, eventType, reason, message string) {
			c.lbc.Event(svc, eventType, reason, message)
		})
	if instancesEnabled(c.cfg) {
		var err error
		if c.instances, err = newInstances(c.cfg, func() ([]byte, string, error) { return c.templates.Set().InstancesMapping() }); err != nil {
			return fmt.Errorf("instances: %w", err)
		}
	}
	return nil
}

// onResult hands an engine outcome to the one facet that owns the
// workspace: the routes workspace to Routes, any other to LoadBalancer
// (which knows its Services' workspaces). Unclaimed results are logged.
func (c *Cloud) onResult(name string, r workspace.Result) {
	handled := false
	switch {
	case name == templates.RoutesWorkspaceName:
		handled = c.routes != nil && c.routes.onResult(name, r)
	case name == templates.PeeringWorkspaceName:
		handled = c.peering.onResult(name, r)
	default:
		handled = c.lbc.OnResult(name, r)
	}
	if handled {
		return
	}
	if r.Err != nil {
		klog.ErrorS(r.Err, "Terraform run failed", "workspace", name, "op", r.Op, "attempt", r.Attempt)
	} else {
		klog.V(2).InfoS("Terraform run finished", "workspace", name, "op", r.Op, "changed", r.Changed, "duration", r.Duration)
	}
}

// onApplyStart tells the load balancer facet that one of its workspaces
// starts applying a plan (the cluster workspaces, routes and BGP peering,
// have no Service to tell).
func (c *Cloud) onApplyStart(name, summary string) {
	if !templates.IsClusterWorkspace(name) && c.lbc.OnApplyStart(name, summary) {
		return
	}
	klog.V(2).InfoS("Terraform apply starts", "workspace", name, "plan", summary)
}

// Config returns the cloud config the Cloud was built from.
func (c *Cloud) Config() *config.Config { return c.cfg }

// Initialize is called by the cloud-controller-manager with a client for
// the cluster; it starts the Event recorder and the facets' background work.
func (c *Cloud) Initialize(clientBuilder cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	client, err := clientBuilder.Client("tfccm")
	if err != nil {
		klog.Fatalf("tfccm: build client: %v", err)
	}
	if c.runnerLocks != nil {
		c.runnerLocks.SetClient(client)
		go c.runnerLocks.Sweep(context.Background())
	}
	b := record.NewBroadcaster(record.WithCorrelatorOptions(lbcontroller.EventCorrelation()))
	b.StartStructuredLogging(0)
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	recorder := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "tfccm"})
	c.lbc.SetClient(client, recorder)
	ctx, cancel := context.WithCancel(context.Background())
	startRunnerPool(ctx, c.cfg, client, recorder)
	if err := c.incarnations.record(ctx, client, c.cfg.Namespace); err != nil {
		// Locks of earlier leaders are then reported instead of released.
		klog.ErrorS(err, "Record this incarnation", "configMap", c.cfg.Namespace+"/"+annotations.Incarnations)
	}
	c.lbc.StartReview(ctx)
	if err := c.watchPools(ctx, clientBuilder); err != nil {
		klog.ErrorS(err, "Watch AddressPools: only the cloud config's address pools serve")
	}
	c.templates.OnChange(func(err error) { c.templatesChanged(ctx, err) })
	go c.templates.Run(ctx)
	c.engine.Start(ctx)
	c.lbc.Start(ctx, c.engine, c.routes != nil)
	if c.routes != nil {
		c.routes.start(ctx)
	}
	go c.peering.run(ctx)
	c.startInstances(ctx)
	go func() {
		<-stop
		cancel()
		<-c.engine.Done() // running tofu gets SIGINT and writes its state
		b.Shutdown()
	}()
}

// templatesChanged re-renders every workspace after the override directory
// changed (workspaces whose content did not change start no tofu run; in
// review mode each changed one gets a pending plan), or tells every
// Service that the new override was rejected and the last good templates
// keep serving.
func (c *Cloud) templatesChanged(ctx context.Context, err error) {
	c.lbc.TemplatesChanged(err)
	if err == nil {
		c.peering.changed()
	}
	if err == nil && c.routes != nil {
		go func() {
			if err := c.routes.rerender(); err != nil && ctx.Err() == nil {
				klog.ErrorS(err, "Routes re-render after a template change failed")
			}
		}()
	}
}

// peeringUsers lists the Services of type LoadBalancer whose load
// balancer announces over the BGP peering (templates.PeeringServes);
// an error until the Services are known.
func (c *Cloud) peeringUsers() ([]*corev1.Service, error) {
	if c.services == nil || !c.servicesSynced() {
		return nil, errors.New("the Services are not listed yet")
	}
	all, err := c.services.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list Services: %w", err)
	}
	set := c.templates.Set()
	var out []*corev1.Service
	for _, svc := range all {
		if svc.Spec.Type == corev1.ServiceTypeLoadBalancer && set.PeeringServes(svc) {
			out = append(out, svc)
		}
	}
	return out, nil
}

// ProviderName returns the registered provider name.
func (c *Cloud) ProviderName() string { return ProviderName }

// HasClusterID reports true: every workspace is keyed by cluster_name.
func (c *Cloud) HasClusterID() bool { return true }

// Instances (v1) answers from Terraform state when instances sources are
// configured and the facet is not disabled.
func (c *Cloud) Instances() (cloudprovider.Instances, bool) {
	if c.instances == nil {
		return nil, false
	}
	return &instancesV1{store: c.instances.store}, true
}

// InstancesV2 answers from Terraform state when instances sources are
// configured and the facet is not disabled.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) {
	if c.instances == nil {
		return nil, false
	}
	return c.instances, true
}

// Zones answers from Terraform state, like InstancesV2.
func (c *Cloud) Zones() (cloudprovider.Zones, bool) {
	if c.instances == nil {
		return nil, false
	}
	return &zones{store: c.instances.store}, true
}

// Clusters is not supported: tfccm serves one cluster.
func (c *Cloud) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

// Routes serves the route controller from the cluster's routes workspace
// when the cloud config enables it (see routesEnabled).
func (c *Cloud) Routes() (cloudprovider.Routes, bool) {
	if c.routes == nil {
		return nil, false
	}
	return c.routes, true
}
