package lbcontroller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/internal/seal"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace/plans"
)

// Review mode's pending plans kept in the cluster (plans.Store), so
// that a restarted controller — work dir empty — still applies the plan a
// reviewer approved:
//
//   - Each pending plan (its saved plan file, which holds every input of the
//     plan, and the published forms) is sealed (internal/seal, AES-256-GCM)
//     and kept in the Secret tfccm-plan-<workspace> in tfccm's namespace
//     (config.Namespace), never in the Service's: a tenant can neither
//     read it nor plant one. It is labelled with its Service's namespace,
//     name and UID; no owner reference (they cannot cross namespaces):
//     the engine deletes it once the plan is applied, superseded or
//     destroyed, and the orphan sweep deletes one whose Service UID no
//     longer exists (review_sweep.go).
//   - The key is tfccm's own: 32 random bytes in the Secret
//     tfccm-plan-key in the same namespace, created on first use. Not the
//     encryption block's key: its key providers (KMS, OpenBao, external
//     programs) are only reachable through tofu, and review mode works
//     without an encryption block and with Terraform. Only readers of
//     that namespace's Secrets (the controller itself, and cluster admins)
//     can open them. With an encryption block that encrypts plans, the
//     saved plan inside is tofu's ciphertext as well.

// planSecretKey is the data key of a plan Secret.
const planSecretKey = "plan.sealed"

// planKeyDataKey is the data key of the key Secret.
const planKeyDataKey = "key"

// planSecrets is a plans.Store over Secrets.
type planSecrets struct {
	// namespace is tfccm's own (config.Namespace): every plan Secret and
	// the key live there.
	namespace string
	// owner is the Service a load balancer workspace belongs to (the
	// LoadBalancer facet knows it before it submits the workspace), and
	// whether that Service is gone (an orphan's).
	owner func(ws string) (svc *corev1.Service, gone bool)
	// publishing is whether this controller publishes plans (review mode,
	// or a gate: policies, change windows), which is when the chart grants
	// it Secrets in its namespace. Without it a plan left by an earlier
	// incarnation in review mode cannot be deleted, and that is no error:
	// the next controller in review mode sweeps it.
	publishing bool

	// maxSize caps a sealed plan (0: plans.MaxSealedPlan).
	maxSize int

	mu     sync.Mutex
	client kubernetes.Interface // nil until Initialize
	key    []byte               // loaded or created on first use
}

var _ plans.Store = (*planSecrets)(nil)

func newPlanSecrets(namespace string, owner func(ws string) (*corev1.Service, bool)) *planSecrets {
	return &planSecrets{namespace: namespace, owner: owner}
}

func (s *planSecrets) setClient(client kubernetes.Interface) {
	s.mu.Lock()
	s.client = client
	s.mu.Unlock()
}

// whose returns the Service of ws's plan (nil for a cluster workspace:
// routes, BGP peering).
func (s *planSecrets) whose(ws string) (*corev1.Service, error) {
	if templates.IsClusterWorkspace(ws) {
		return nil, nil
	}
	svc, _ := s.owner(ws)
	if svc == nil || svc.UID == "" {
		return nil, fmt.Errorf("plan of workspace %s: its Service is not known", ws)
	}
	return svc, nil
}

// keyAndClient returns the cluster client and the sealing key, reading the
// key Secret (or creating it) the first time.
func (s *planSecrets) keyAndClient(ctx context.Context) (kubernetes.Interface, []byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		return nil, nil, errors.New("no cluster client yet")
	}
	if s.key != nil {
		return s.client, s.key, nil
	}
	secrets := s.client.CoreV1().Secrets(s.namespace)
	cur, err := secrets.Get(ctx, annotations.PlanKeySecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		key, kerr := seal.NewKey()
		if kerr != nil {
			return nil, nil, kerr
		}
		cur, err = secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: annotations.PlanKeySecret, Labels: map[string]string{annotations.ManagedBy: "tfccm"}},
			Data:       map[string][]byte{planKeyDataKey: key},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) { // another replica made it first
			cur, err = secrets.Get(ctx, annotations.PlanKeySecret, metav1.GetOptions{})
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("plan key Secret %s/%s: %w", s.namespace, annotations.PlanKeySecret, err)
	}
	key := cur.Data[planKeyDataKey]
	if len(key) != seal.KeySize {
		return nil, nil, fmt.Errorf("plan key Secret %s/%s: %q holds %d bytes, want %d", s.namespace, annotations.PlanKeySecret, planKeyDataKey, len(key), seal.KeySize)
	}
	s.key = key
	return s.client, key, nil
}

// sizeCap is the largest sealed plan kept.
func (s *planSecrets) sizeCap() int {
	if s.maxSize > 0 {
		return s.maxSize
	}
	return plans.MaxSealedPlan
}

// sealedFor is the associated data of ws's plan: where it is kept.
func sealedFor(namespace, ws string) []byte {
	return []byte(namespace + "/" + annotations.PlanConfigMapName(ws))
}

// SavePlan seals p into ws's plan Secret (create or replace).
func (s *planSecrets) SavePlan(ctx context.Context, ws string, p *plans.Saved) error {
	namespace := s.namespace
	svc, err := s.whose(ws)
	if err != nil {
		return err
	}
	client, key, err := s.keyAndClient(ctx)
	if err != nil {
		return err
	}
	plain, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("plan of workspace %s: %w", ws, err)
	}
	sealed, err := seal.Seal(key, plain, sealedFor(namespace, ws))
	if err != nil {
		return err
	}
	if limit := s.sizeCap(); len(sealed) > limit {
		return &plans.TooLargeError{Where: "Secret " + namespace + "/" + annotations.PlanConfigMapName(ws), Size: len(sealed), Cap: limit}
	}
	want := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:        annotations.PlanConfigMapName(ws),
			Namespace:   namespace,
			Labels:      planLabels(ws, svc),
			Annotations: map[string]string{annotations.PlanHash: p.Plan.Hash},
		},
		Data: map[string][]byte{planSecretKey: sealed},
	}
	secrets := client.CoreV1().Secrets(namespace)
	_, err = secrets.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var cur *corev1.Secret
		if cur, err = secrets.Get(ctx, want.Name, metav1.GetOptions{}); err == nil {
			want.ResourceVersion = cur.ResourceVersion
			_, err = secrets.Update(ctx, want, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("keep plan in Secret %s/%s: %w", namespace, want.Name, err)
	}
	return nil
}

// LoadPlan opens ws's plan Secret; nil when there is none. A Secret of
// another Service (its UID label) is not ws's plan, and a workspace whose
// Service is not known has none.
func (s *planSecrets) LoadPlan(ctx context.Context, ws string) (*plans.Saved, error) {
	namespace := s.namespace
	svc, err := s.whose(ws)
	if err != nil {
		return nil, nil
	}
	client, key, err := s.keyAndClient(ctx)
	if err != nil {
		return nil, err
	}
	name := annotations.PlanConfigMapName(ws)
	cur, err := client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read plan Secret %s/%s: %w", namespace, name, err)
	}
	if svc != nil && cur.Labels[annotations.PlanServiceUID] != string(svc.UID) {
		return nil, nil
	}
	plain, err := seal.Open(key, cur.Data[planSecretKey], sealedFor(namespace, ws))
	if err != nil {
		return nil, fmt.Errorf("plan Secret %s/%s: %w", namespace, name, err)
	}
	var p plans.Saved
	if err := json.Unmarshal(plain, &p); err != nil {
		return nil, fmt.Errorf("plan Secret %s/%s: %w", namespace, name, err)
	}
	return &p, nil
}

// DeletePlan deletes ws's plan Secret, if any.
func (s *planSecrets) DeletePlan(ctx context.Context, ws string) error {
	s.mu.Lock()
	client := s.client
	s.mu.Unlock()
	if client == nil {
		return errors.New("no cluster client yet")
	}
	name := annotations.PlanConfigMapName(ws)
	err := client.CoreV1().Secrets(s.namespace).Delete(ctx, name, metav1.DeleteOptions{})
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case apierrors.IsForbidden(err) && !s.publishing:
		klog.V(4).InfoS("Not deleting a kept plan: this controller publishes no plans and has no rights to them", "secret", klog.KRef(s.namespace, name))
		return nil
	}
	return fmt.Errorf("delete plan Secret %s/%s: %w", s.namespace, name, err)
}
