package config

import "time"

// Defaults of the cloud config: what Parse fills in for an omitted
// setting, each declared once here and applied once (finish.go and the
// finish step of its block; duration settings through their row in
// durations.go). Readers read the parsed config, never these; the
// workspace engine and the state store fall back to them only for
// options built without a cloud config (their tests).
const (
	DefaultWorkDir = "/var/lib/tfccm"
	// DefaultNamespace is tfccm's own namespace unless namespace names
	// another (the chart names its release namespace).
	DefaultNamespace   = "kube-system"
	DefaultTemplateSet = "local"
	// DefaultLoadBalancerClass is the spec.loadBalancerClass tfccm serves
	// unless load_balancer_class names another.
	DefaultLoadBalancerClass   = "tfccm.io/terraform"
	DefaultBinary              = "tofu"
	DefaultParallelism         = 4
	DefaultOperationTimeout    = 10 * time.Minute
	DefaultDriftInterval       = time.Hour
	DefaultCoalesceQuiet       = 2 * time.Second
	DefaultCoalesceMax         = 10 * time.Second
	DefaultBackendType         = "local"
	DefaultHealthCheckProtocol = "HTTP"
	DefaultHealthCheckPort     = 10256
	DefaultHealthCheckPath     = "/healthz" // for HTTP and HTTPS
	// DefaultEnsureWait outlasts an apply that ends within
	// terraform.timeout plus its time in the queue: EnsureLoadBalancer
	// answers with the outcome, never "retry later" for an apply merely in
	// flight (the service controller records every error it gets, retry
	// included, as a SyncLoadBalancerFailed Warning).
	DefaultEnsureWait  = 15 * time.Minute
	DefaultBatchWindow = 2 * time.Second
	// DefaultHealthInterval: how often backend health is read (one
	// read-only plan per load balancer whose set can read it).
	DefaultHealthInterval    = 30 * time.Second
	DefaultStateTTL          = 30 * time.Second
	DefaultStateMaxStaleness = 10 * time.Minute
	DefaultStateRefreshRate  = 1.0 // refreshes per second per source
	DefaultStateRefreshBurst = 3
)

// Defaults of terraform.runner and the job runner's terraform.job block.
const (
	DefaultRunner            = RunnerProcess
	DefaultJobNamespace      = "tfccm-runners"
	DefaultJobServiceAccount = "tfccm-runner"
	DefaultJobCPU            = "250m"
	DefaultJobMemory         = "256Mi"
	DefaultJobMemoryLimit    = "1Gi"
)

// Defaults of the policy and change_windows blocks.
const (
	// DefaultPolicyAction is what a failed validation of a policy without
	// an action does.
	DefaultPolicyAction = PolicyDeny
	// DefaultWindowTimeZone is the IANA time zone a change window's
	// schedule is read in unless time_zone names another.
	DefaultWindowTimeZone = "UTC"
)

// kubernetesBackendDefaultNamespace is where the kubernetes backend keeps
// state when its namespace is omitted: the backend's own default, not one
// tfccm fills in (BackendNamespace reads it).
const kubernetesBackendDefaultNamespace = "default"
