package provider

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
)

// One Warning per refused input. An input tfccm refuses (a Service whose
// workspace does not render, whose address request cannot be met as
// written, or whose inputs the template's validation rejects) is told by
// tfccm's own Warning Event naming the problem (RenderFailed,
// LoadBalancerIPRefused, TerraformInvalidInput) and Accepted=False. The
// service controller records every error EnsureLoadBalancer returns as a
// second Warning (SyncLoadBalancerFailed, or UpdateLoadBalancerFailed for
// UpdateLoadBalancer) and retries it with backoff, though nothing changes
// until the Service, its nodes or the templates do. So such a refusal
// answers cloudprovider.ImplementedElsewhere, the controller's documented
// no-op (no Event, no status write, no retry), as a plan awaiting approval
// does; an edit of the Service calls again.

// refusedInputError marks an error as a refusal of the Service's own
// inputs, already told by tfccm's Warning and conditions.
type refusedInputError struct{ err error }

func (e *refusedInputError) Error() string { return e.err.Error() }
func (e *refusedInputError) Unwrap() error { return e.err }

// refusedInput marks err as a refused input.
func refusedInput(err error) error { return &refusedInputError{err} }

// refusedOnce answers the service controller for err: a refused input is
// its no-op (the refusal is logged here, the Warning was recorded), any
// other error is err.
func refusedOnce(svc *corev1.Service, err error) error {
	var refused *refusedInputError
	if !errors.As(err, &refused) {
		return err
	}
	klog.InfoS("The Service's inputs are refused; nothing is applied until they change", "service", klog.KObj(svc), "err", err)
	return cloudprovider.ImplementedElsewhere
}
