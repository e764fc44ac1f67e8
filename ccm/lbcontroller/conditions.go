package lbcontroller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
)

// The condition types tfccm writes into a LoadBalancer Service's
// status.conditions (KEP-6128's names under tfccm's domain).
const (
	// ConditionAccepted: the Service renders and its template set accepts
	// its inputs (False names what it refused, e.g. a UDP port).
	ConditionAccepted = "tfccm.io/Accepted"
	// ConditionProgrammed: the load balancer runs the Service's current
	// inputs (`kubectl wait --for=condition=tfccm.io/Programmed`).
	ConditionProgrammed = "tfccm.io/Programmed"
	// ConditionDegraded: the load balancer itself finds some of its
	// backends unhealthy, or one of its LB hosts unreachable (True names
	// them), or all healthy (False); only for template sets that read
	// backend health (health.go).
	ConditionDegraded = "tfccm.io/Degraded"
	// ConditionVIPHeld: which LB hosts (or, node mode, nodes) hold each of
	// the load balancer's VIPs now (the message names them per family):
	// True when every VIP has one holder; False with two or more (split
	// brain) or none (a lost VIP), or NoLocalEndpoint when no holder is
	// meant (Local, no ready endpoint); only for template sets whose health
	// module outputs vip_holders (baremetal, nodes; vipheld.go).
	ConditionVIPHeld = "tfccm.io/VIPHeld"
	// ConditionBGPEstablished: whether every BGP session of every LB host
	// that answers is Established (False names each one that is not, by
	// host and peer name, and its state); only for template sets whose
	// health module outputs bgp_sessions (baremetal's bgp variant;
	// bgpsessions.go).
	ConditionBGPEstablished = "tfccm.io/BGPEstablished"
)

// Condition reasons.
const (
	CondReasonAccepted         = "Accepted"
	CondReasonInvalidInput     = "InvalidInput"
	CondReasonNameTaken        = "NameTaken"
	CondReasonApplying         = "Applying"
	CondReasonApplied          = "Applied"
	CondReasonAwaitingApproval = "AwaitingApproval"
	CondReasonPlanStale        = "PlanStale"
	CondReasonApplyFailed      = "ApplyFailed"
	// CondReasonProviderChecksumMismatch: a provider's package does not
	// match its locked checksums (TerraformProviderChecksumMismatch).
	CondReasonProviderChecksumMismatch = "ProviderChecksumMismatch"
	CondReasonDriftRepaired            = "DriftRepaired"
	CondReasonBackendsUnhealthy        = "BackendsUnhealthy"
	CondReasonBackendsHealthy          = "BackendsHealthy"
	// CondReasonLBHostUnreachable: Degraded because an LB host could not
	// be reached (the health module's hosts output).
	CondReasonLBHostUnreachable = "LBHostUnreachable"
	// CondReasonHeldBy, CondReasonSplitBrain, CondReasonNoHolder:
	// VIPHeld with one holder per VIP, two or more, none.
	CondReasonHeldBy     = "HeldBy"
	CondReasonSplitBrain = "SplitBrain"
	CondReasonNoHolder   = "NoHolder"
	// CondReasonAnnounced, CondReasonNoAnnouncer: VIPHeld of an
	// active-active load balancer (node mode over BGP) with every VIP
	// announced by one node or more, or one announced by none.
	CondReasonAnnounced   = "Announced"
	CondReasonNoAnnouncer = "NoAnnouncer"
	// CondReasonNoLocalEndpoint: VIPHeld False because no holder is meant
	// (node mode, externalTrafficPolicy Local, no ready endpoint): the
	// health module's vip_idle reason, NodeVIP's own.
	CondReasonNoLocalEndpoint = "NoLocalEndpoint"
	// CondReasonEstablished, CondReasonSessionDown, CondReasonNoSession:
	// BGPEstablished with every session up, one or more down, none at all.
	CondReasonEstablished        = "Established"
	CondReasonSessionDown        = "SessionDown"
	CondReasonNoSession          = "NoSession"
	CondReasonPolicyDenied       = "PolicyDenied"
	CondReasonChangeWindowClosed = "ChangeWindowClosed"
)

// fieldManager owns tfccm's conditions in server-side apply: the service
// controller patches status.loadBalancer, tfccm applies only its own
// condition types, so neither overwrites the other.
const fieldManager = "tfccm"

// conditionWriteTimeout bounds one status write.
const conditionWriteTimeout = 10 * time.Second

// conditions writes tfccm's conditions on Services with server-side apply
// of the status subresource, only when they change.
type conditions struct {
	mu      sync.Mutex
	client  kubernetes.Interface                      // nil until Initialize: nothing is written
	lister  corelisters.ServiceLister                 // nil until SetInformers
	current map[types.UID]map[string]metav1.Condition // what tfccm last wrote
}

func newConditions() *conditions {
	return &conditions{current: map[types.UID]map[string]metav1.Condition{}}
}

func (c *conditions) setClient(client kubernetes.Interface) {
	c.mu.Lock()
	c.client = client
	c.mu.Unlock()
}

func (c *conditions) setLister(l corelisters.ServiceLister) {
	c.mu.Lock()
	c.lister = l
	c.mu.Unlock()
}

// kube returns the client and the Service lister (nil until set).
func (c *conditions) kube() (kubernetes.Interface, corelisters.ServiceLister) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.client, c.lister
}

// set records conds on svc (each with svc's generation) and applies the
// result if any of them changed. Transition times change only with a
// condition's status.
func (c *conditions) set(svc *corev1.Service, conds ...metav1.Condition) {
	if svc == nil || svc.UID == "" {
		return
	}
	c.mu.Lock()
	client, lister := c.client, c.lister
	if lister != nil { // the newest generation and conditions
		if cur, err := lister.Services(svc.Namespace).Get(svc.Name); err == nil && cur.UID == svc.UID {
			svc = cur
		}
	}
	mine := c.mine(svc)
	changed := false
	next := make(map[string]metav1.Condition, len(mine)+len(conds))
	for k, v := range mine {
		next[k] = v
	}
	for _, cond := range conds {
		cond.ObservedGeneration = svc.Generation
		old, had := next[cond.Type]
		if had && old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message && old.ObservedGeneration == cond.ObservedGeneration {
			continue
		}
		cond.LastTransitionTime = metav1.NewTime(time.Now().Truncate(time.Second))
		if had && old.Status == cond.Status {
			cond.LastTransitionTime = old.LastTransitionTime
		}
		next[cond.Type] = cond
		changed = true
	}
	c.current[svc.UID] = next
	c.mu.Unlock()
	if changed {
		c.write(client, svc, next)
	}
}

// mine is what tfccm last wrote on svc: remembered, else read from svc.
// c.mu is held.
func (c *conditions) mine(svc *corev1.Service) map[string]metav1.Condition {
	if mine, ok := c.current[svc.UID]; ok {
		return mine
	}
	mine := map[string]metav1.Condition{}
	for _, cond := range svc.Status.Conditions {
		if strings.HasPrefix(cond.Type, "tfccm.io/") {
			mine[cond.Type] = cond
		}
	}
	return mine
}

// write applies conds as svc's tfccm conditions (nothing without a client).
func (c *conditions) write(client kubernetes.Interface, svc *corev1.Service, conds map[string]metav1.Condition) {
	if client == nil {
		return
	}
	if err := apply(client, svc, conds); err != nil {
		klog.InfoS("Could not write the Service's conditions", "service", klog.KObj(svc), "err", err)
		c.mu.Lock()
		delete(c.current, svc.UID) // written again from the Service next time
		c.mu.Unlock()
	}
}

// remove stops writing condition typ on svc: server-side apply then
// removes it from the Service (tfccm's field manager owned it).
func (c *conditions) remove(svc *corev1.Service, typ string) {
	if svc == nil || svc.UID == "" {
		return
	}
	c.mu.Lock()
	client := c.client
	mine := c.mine(svc)
	if _, ok := mine[typ]; !ok {
		c.mu.Unlock()
		return
	}
	next := make(map[string]metav1.Condition, len(mine))
	for k, v := range mine {
		if k != typ {
			next[k] = v
		}
	}
	c.current[svc.UID] = next
	c.mu.Unlock()
	c.write(client, svc, next)
}

// forget drops what tfccm wrote for a deleted Service.
func (c *conditions) forget(uid types.UID) {
	c.mu.Lock()
	delete(c.current, uid)
	c.mu.Unlock()
}

// get returns the condition tfccm last wrote of type typ on svc.
func (c *conditions) get(uid types.UID, typ string) (metav1.Condition, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cond, ok := c.current[uid][typ]
	return cond, ok
}

// apply writes conds as svc's tfccm conditions (server-side apply of the
// status subresource, tfccm's field manager).
func apply(client kubernetes.Interface, svc *corev1.Service, conds map[string]metav1.Condition) error {
	types := make([]string, 0, len(conds))
	for t := range conds {
		types = append(types, t)
	}
	sort.Strings(types)
	status := corev1ac.ServiceStatus()
	for _, t := range types {
		cond := conds[t]
		status.WithConditions(metav1ac.Condition().
			WithType(cond.Type).WithStatus(cond.Status).WithReason(cond.Reason).WithMessage(cond.Message).
			WithObservedGeneration(cond.ObservedGeneration).WithLastTransitionTime(cond.LastTransitionTime))
	}
	ac := corev1ac.Service(svc.Name, svc.Namespace).WithUID(svc.UID).WithStatus(status)
	ctx, cancel := context.WithTimeout(context.Background(), conditionWriteTimeout)
	defer cancel()
	_, err := client.CoreV1().Services(svc.Namespace).ApplyStatus(ctx, ac, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("apply status conditions: %w", err)
	}
	return nil
}

// condition builds a condition (generation and time are set by set).
func condition(typ string, status bool, reason, message string) metav1.Condition {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: truncateMessage(message)}
}
