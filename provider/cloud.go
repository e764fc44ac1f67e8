// Package provider implements k8s.io/cloud-provider's interfaces for tfccm as
// a thin adapter over the templates, provider/workspace and state packages.
// It holds no Terraform or HCL logic of its own: one file per facet
// (loadbalancer.go, routes.go, instances.go, zones.go).
package provider

import (
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/provider/config"
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

	client   kubernetes.Interface
	recorder record.EventRecorder
}

// New builds a Cloud from a loaded config. Facets start their background
// work in Initialize.
func New(cfg *config.Config) (*Cloud, error) {
	return &Cloud{cfg: cfg}, nil
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
	c.client = client
	b := record.NewBroadcaster()
	b.StartStructuredLogging(0)
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	c.recorder = b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "tfccm"})
	go func() {
		<-stop
		b.Shutdown()
	}()
}

// ProviderName returns the registered provider name.
func (c *Cloud) ProviderName() string { return ProviderName }

// HasClusterID reports true: every workspace is keyed by cluster_name.
func (c *Cloud) HasClusterID() bool { return true }

// LoadBalancer is not supported until the LoadBalancer facet lands.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return nil, false }

// Instances is not supported until the Instances facet lands.
func (c *Cloud) Instances() (cloudprovider.Instances, bool) { return nil, false }

// InstancesV2 is not supported until the Instances facet lands.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return nil, false }

// Zones is not supported until the Zones facet lands.
func (c *Cloud) Zones() (cloudprovider.Zones, bool) { return nil, false }

// Clusters is not supported: tfccm serves one cluster.
func (c *Cloud) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

// Routes is not supported until the Routes facet lands.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) { return nil, false }
