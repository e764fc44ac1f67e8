package provider

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

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/internal/seal"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// Review mode's pending plans kept in the cluster (workspace.PlanStore), so
// that a restarted controller — work dir empty — still applies the plan a
// reviewer approved:
//
//   - Each pending plan (its saved plan file, which holds every input of the
//     plan, and the published forms) is sealed (internal/seal, AES-256-GCM)
//     and kept in the Secret tfccm-plan-<workspace>: next to its Service and
//     owned by it (the garbage collector removes it with the Service), or in
//     kube-system for the routes workspace. An orphan's plan (its Service is
//     gone: loadbalancer_sweep.go) is not owned, or the garbage collector
//     would remove it at once; the controller that destroys the orphan, in
//     review mode or not, deletes it (workspace.Options.Plans).
//   - The key is tfccm's own: 32 random bytes in the Secret
//     kube-system/tfccm-plan-key, created on first use. Not the
//     encryption block's key: its key providers (KMS, OpenBao, external
//     programs) are only reachable through tofu, and review mode works
//     without an encryption block and with Terraform. So the plan Secrets
//     are ciphertext for whoever reads Secrets in a Service's namespace;
//     only readers of kube-system's Secrets (the controller itself, and
//     cluster admins) can open them. With an encryption block that
//     encrypts plans, the saved plan inside is tofu's ciphertext as well.

// planSecretKey is the data key of a plan Secret.
const planSecretKey = "plan.sealed"

// planKeyDataKey is the data key of the key Secret.
const planKeyDataKey = "key"

// planSecrets is a workspace.PlanStore over Secrets.
type planSecrets struct {
	// owner is the Service a load balancer workspace belongs to (the
	// LoadBalancer facet knows it before it submits the workspace), and
	// whether that Service is gone (an orphan's).
	owner func(ws string) (svc *corev1.Service, gone bool)

	mu     sync.Mutex
	client kubernetes.Interface // nil until Initialize
	key    []byte               // loaded or created on first use
	// placed is the namespace of each plan Secret this process wrote or
	// read: DeletePlan finds it once the Service is forgotten.
	placed map[string]string
}

var _ workspace.PlanStore = (*planSecrets)(nil)

func newPlanSecrets(owner func(ws string) (*corev1.Service, bool)) *planSecrets {
	return &planSecrets{owner: owner, placed: map[string]string{}}
}

func (s *planSecrets) setClient(client kubernetes.Interface) {
	s.mu.Lock()
	s.client = client
	s.mu.Unlock()
}

// where returns the namespace of ws's plan Secret, its Service (nil for
// the routes workspace) and whether that Service is gone.
func (s *planSecrets) where(ws string) (string, *corev1.Service, bool, error) {
	if ws == templates.RoutesWorkspaceName {
		return annotations.RoutesPlanNamespace, nil, false, nil
	}
	svc, gone := s.owner(ws)
	if svc == nil || svc.UID == "" {
		return "", nil, false, fmt.Errorf("plan of workspace %s: its Service is not known", ws)
	}
	return svc.Namespace, svc, gone, nil
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
	secrets := s.client.CoreV1().Secrets(annotations.RoutesPlanNamespace)
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
		return nil, nil, fmt.Errorf("plan key Secret %s/%s: %w", annotations.RoutesPlanNamespace, annotations.PlanKeySecret, err)
	}
	key := cur.Data[planKeyDataKey]
	if len(key) != seal.KeySize {
		return nil, nil, fmt.Errorf("plan key Secret %s/%s: %q holds %d bytes, want %d", annotations.RoutesPlanNamespace, annotations.PlanKeySecret, planKeyDataKey, len(key), seal.KeySize)
	}
	s.key = key
	return s.client, key, nil
}

// sealedFor is the associated data of ws's plan: where it is kept.
func sealedFor(namespace, ws string) []byte {
	return []byte(namespace + "/" + annotations.PlanConfigMapName(ws))
}

// SavePlan seals p into ws's plan Secret (create or replace).
func (s *planSecrets) SavePlan(ctx context.Context, ws string, p *workspace.SavedPlan) error {
	namespace, svc, gone, err := s.where(ws)
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
	want := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:        annotations.PlanConfigMapName(ws),
			Namespace:   namespace,
			Labels:      map[string]string{annotations.ManagedBy: "tfccm"},
			Annotations: map[string]string{annotations.PlanHash: p.Plan.Hash},
		},
		Data: map[string][]byte{planSecretKey: sealed},
	}
	if svc != nil {
		want.Labels[annotations.PlanServiceUID] = string(svc.UID)
	}
	if svc != nil && !gone {
		want.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID}}
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
	s.place(ws, namespace)
	return nil
}

// place records where ws's plan Secret is ("" forgets it).
func (s *planSecrets) place(ws, namespace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if namespace == "" {
		delete(s.placed, ws)
		return
	}
	s.placed[ws] = namespace
}

// LoadPlan opens ws's plan Secret; nil when there is none. A Secret of
// another Service (its UID label) is not ws's plan, and a workspace whose
// Service is not known has none.
func (s *planSecrets) LoadPlan(ctx context.Context, ws string) (*workspace.SavedPlan, error) {
	namespace, svc, _, err := s.where(ws)
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
	var p workspace.SavedPlan
	if err := json.Unmarshal(plain, &p); err != nil {
		return nil, fmt.Errorf("plan Secret %s/%s: %w", namespace, name, err)
	}
	s.place(ws, namespace)
	return &p, nil
}

// DeletePlan deletes ws's plan Secret, if any.
func (s *planSecrets) DeletePlan(ctx context.Context, ws string) error {
	s.mu.Lock()
	client, namespace := s.client, s.placed[ws]
	s.mu.Unlock()
	if namespace == "" {
		var err error
		if namespace, _, _, err = s.where(ws); err != nil {
			// Neither kept nor read by this process, and the Service is
			// not known: nothing of ours to delete (a plan Secret goes
			// with its Service, by its owner reference).
			return nil
		}
	}
	if client == nil {
		return errors.New("no cluster client yet")
	}
	name := annotations.PlanConfigMapName(ws)
	if err := client.CoreV1().Secrets(namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete plan Secret %s/%s: %w", namespace, name, err)
	}
	s.place(ws, "")
	return nil
}
