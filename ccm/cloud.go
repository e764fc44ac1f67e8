package ccm

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
	"github.com/tfccm/tfccm/workspace/jobrunner"
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
	lb        *loadBalancers // nil when disabled
	class     *classLoop     // Services of load_balancer_class; nil when lb is
	routes    *routes        // nil when disabled
	instances *instanceFacet // nil when disabled (also serves Instances v1 and Zones)
	review    *reviewer      // nil unless terraform { review = true } or a gate (policy)
	plans     *planSecrets   // pending plans kept in Secrets (review mode), deleted with their workspace

	events *events
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
	c := &Cloud{cfg: cfg, events: newEvents(), incarnations: newIncarnations(workspace.LockOwner())}
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
	// plan published by a controller in review mode, say).
	c.plans = newPlanSecrets(cfg.Namespace, func(ws string) (*corev1.Service, bool) {
		if c.lb == nil {
			return nil, false
		}
		return c.lb.planOwner(ws)
	})
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
	opts.Gate, opts.Plans = gate.engineGate(), c.plans
	if c.runnerLocks, err = jobRunner(cfg, &opts); err != nil {
		return nil, err
	}
	engine, err := workspace.New(opts)
	if err != nil {
		return nil, fmt.Errorf("workspace engine: %w", err)
	}
	c.engine = engine
	addrs := newAddressBook(cfg)
	render := templateRenderer{cfg: cfg, loader: loader, addrs: addrs}
	var lbRev lbReview
	var routesRev routesReview
	// A plan also waits for approval when a policy rule asks for it (or
	// a change window holds it): its publication and approval are review
	// mode's.
	c.plans.publishing = cfg.Terraform.Review || gate != nil
	if c.plans.publishing {
		c.review = newReviewer(engine, render, c.events.event, cfg.Namespace)
		lbRev, routesRev = c.review, c.review
	}
	if config.Enabled(cfg.LoadBalancer.Enabled) {
		c.lb = newLoadBalancers(engine, render, lbRev, c.events.event, cfg.Backend.Type != "local", cfg.LoadBalancer.EnsureWait)
		c.lb.addrs = addrs
		c.lb.serves = cfg.ServesClass
		c.class = newClassLoop(c.lb, cfg.LoadBalancerClass, cfg.ClusterName, c.events.event)
		if c.review != nil {
			c.review.setOwners(c.lb.planOwner, c.lb.approvalAccepted)
			c.lb.afterApproval = c.class.approvedApplied
		}
	}
	if routesEnabled(cfg) {
		c.routes = newRoutes(engineRoutes{engine: engine, render: render}, routesRev, cfg.Routes.BatchWindow)
	}
	if instancesEnabled(cfg) {
		if c.instances, err = newInstances(cfg, func() ([]byte, string, error) { return loader.Set().InstancesMapping() }); err != nil {
			return nil, fmt.Errorf("instances: %w", err)
		}
	}
	return c, nil
}

// onResult hands an engine outcome to the one facet that owns the
// workspace: the routes workspace to Routes, any other to LoadBalancer
// (which knows its Services' workspaces). Unclaimed results are logged.
func (c *Cloud) onResult(name string, r workspace.Result) {
	handled := false
	switch {
	case name == templates.RoutesWorkspaceName:
		handled = c.routes != nil && c.routes.onResult(name, r)
	case c.lb != nil:
		handled = c.lb.onResult(name, r)
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
// starts applying a plan (routes have no Service to tell).
func (c *Cloud) onApplyStart(name, summary string) {
	if name != templates.RoutesWorkspaceName && c.lb != nil && c.lb.onApplyStart(name, summary) {
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
	if c.review != nil {
		c.review.setClient(client)
	}
	c.plans.setClient(client)
	if c.lb != nil {
		c.lb.conds.setClient(client)
		c.class.setClient(client)
	}
	b := record.NewBroadcaster(record.WithCorrelatorOptions(eventCorrelation()))
	b.StartStructuredLogging(0)
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	c.events.setRecorder(b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "tfccm"}))
	ctx, cancel := context.WithCancel(context.Background())
	if err := c.incarnations.record(ctx, client, c.cfg.Namespace); err != nil {
		// Locks of earlier leaders are then reported instead of released.
		klog.ErrorS(err, "Record this incarnation", "configMap", c.cfg.Namespace+"/"+annotations.Incarnations)
	}
	if c.review != nil {
		c.review.watchPlans(ctx)
		go c.review.reportLeftovers(ctx)
	}
	c.templates.OnChange(func(err error) { c.templatesChanged(ctx, err) })
	go c.templates.Run(ctx)
	c.engine.Start(ctx)
	if c.lb != nil {
		go c.lb.runResync(ctx)
		go c.lb.runSweep(ctx, sweepInterval)
		if c.cfg.LoadBalancer.HealthInterval > 0 {
			go c.lb.runHealth(ctx, c.engine, c.cfg.LoadBalancer.HealthInterval, c.cfg.Terraform.Parallelism)
		}
		go c.class.run(ctx)
	}
	if c.routes != nil {
		c.routes.start(ctx)
		if c.review != nil {
			go c.review.pollRoutesApproval(ctx)
		}
	}
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
	if err != nil {
		if c.lb != nil {
			c.lb.eventAll(corev1.EventTypeWarning, ReasonTemplateRejected, err.Error())
		}
		return
	}
	if c.lb != nil {
		c.lb.resyncAll()
	}
	if c.routes != nil {
		go func() {
			if err := c.routes.rerender(); err != nil && ctx.Err() == nil {
				klog.ErrorS(err, "Routes re-render after a template change failed")
			}
		}()
	}
}

// ProviderName returns the registered provider name.
func (c *Cloud) ProviderName() string { return ProviderName }

// HasClusterID reports true: every workspace is keyed by cluster_name.
func (c *Cloud) HasClusterID() bool { return true }

// LoadBalancer serves the service controller's class-less Services of
// type LoadBalancer unless disabled in the config (load_balancer { enabled
// = false }, or serve_classless = false: the service controller then does
// not start). Services of load_balancer_class are served by the class
// loop (loadbalancer_class.go) either way.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	if c.lb == nil || !config.Enabled(c.cfg.ServeClassless) {
		return nil, false
	}
	return c.lb, true
}

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
