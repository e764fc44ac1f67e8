package deploy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/test/devcluster"
)

// TestChartAccessMatrix renders the chart with each value set, applies it
// (kubectl apply) to a real kube-apiserver and asks the apiserver, with a
// SubjectAccessReview per row of accessMatrix, whether each principal may
// do what the row says: every allowed row must be allowed and every
// refused row refused.
func TestChartAccessMatrix(t *testing.T) {
	root, bin := helm(t)
	kubectl := filepath.Join(root, "bin", "kubectl")
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			values := caseValues("default")
			if vs.values != "" {
				f := filepath.Join(t.TempDir(), vs.name+".values.yaml")
				if err := os.WriteFile(f, []byte(vs.values), 0o644); err != nil {
					t.Fatal(err)
				}
				values = append(values, f)
			}
			manifests, err := HelmTemplate(bin, root, accessRelease, releaseNS, values)
			if err != nil {
				t.Fatal(err)
			}
			cluster := devcluster.ForTest(t)
			admin := cluster.Client()
			ctx := context.Background()
			for _, ns := range []string{releaseNS, tenantNS} {
				if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			f := filepath.Join(t.TempDir(), "chart.yaml")
			if err := os.WriteFile(f, manifests, 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(kubectl, "--kubeconfig", cluster.Kubeconfig(), "apply", "-f", f).CombinedOutput(); err != nil {
				t.Fatalf("kubectl apply the chart: %v\n%s", err, out)
			}
			// The tenant: what a namespace's owner has (the aggregated edit
			// ClusterRole is empty without kube-controller-manager).
			if _, err := admin.RbacV1().Roles(tenantNS).Create(ctx, &rbacv1.Role{
				ObjectMeta: metav1.ObjectMeta{Name: "tenant"},
				Rules:      tenantRules,
			}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := admin.RbacV1().RoleBindings(tenantNS).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "tenant"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant"},
				Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: principalByKey("tenant").user}},
			}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			// The authorizer sees new grants through its informers: wait
			// until every allowed row is, then no refused row can be a
			// grant not seen yet.
			var allowed, refused []access
			for _, a := range accessMatrix {
				if a.allowed[vs.name] {
					allowed = append(allowed, a)
				} else {
					refused = append(refused, a)
				}
			}
			var missing []string // of the last complete round
			err = testkit.Poll(ctx, testkit.Interval, 30*time.Second, "every allowed row allowed", func(ctx context.Context) error {
				var round []string
				for _, a := range allowed {
					ok, err := mayDo(ctx, admin, a)
					if err != nil {
						return err
					}
					if !ok {
						round = append(round, a.who+" "+a.what()+" in "+a.where())
					}
				}
				missing = round
				if len(missing) > 0 {
					return fmt.Errorf("refused: %s", strings.Join(missing, "; "))
				}
				return nil
			})
			if err != nil {
				t.Fatalf("%v; refused: %s", err, strings.Join(missing, "; "))
			}
			for _, a := range refused {
				ok, err := mayDo(ctx, admin, a)
				if err != nil {
					t.Fatal(err)
				}
				if ok {
					t.Errorf("%s may %s in %s (%s): want refused", a.who, a.what(), a.where(), a.why)
				}
			}
			t.Logf("%d rows: %d allowed, %d refused", len(accessMatrix), len(allowed), len(refused))
			admissionChecks(t, cluster, vs)
		})
	}
}

// mayDo asks the apiserver whether a's principal may do what a says.
func mayDo(ctx context.Context, client kubernetes.Interface, a access) (bool, error) {
	p := principalByKey(a.who)
	spec := authorizationv1.SubjectAccessReviewSpec{User: p.user, Groups: p.groups}
	if a.path != "" {
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: a.path, Verb: a.verb}
	} else {
		spec.ResourceAttributes = &authorizationv1.ResourceAttributes{Namespace: a.namespace, Verb: a.verb, Group: a.group,
			Resource: a.resource, Subresource: a.sub, Name: a.name}
	}
	r, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("SubjectAccessReview of %s %s: %w", a.who, a.what(), err)
	}
	return r.Status.Allowed, nil
}

// admissionChecks patches, as the approver, each ConfigMap an approver row
// names where RBAC allows it: an annotation goes through on a plan and is
// refused by the approvers' admission policy where the row says so; a
// plan's data never changes.
func admissionChecks(t *testing.T, cluster *devcluster.Cluster, vs valueSet) {
	t.Helper()
	ctx := context.Background()
	admin := cluster.Client()
	approver := principalByKey("approver")
	rc := cluster.RESTConfig()
	rc.Impersonate = rest.ImpersonationConfig{UserName: approver.user, Groups: approver.groups}
	as := kubernetes.NewForConfigOrDie(rc)
	patch := func(name, body string) error {
		_, err := as.CoreV1().ConfigMaps(releaseNS).Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}
	// The refused writes first: once one is refused, the policy is in
	// force for the writes that must go through and those that must not.
	var rows []access
	for _, a := range accessMatrix {
		if a.admission {
			rows = append([]access{a}, rows...)
		} else {
			rows = append(rows, a)
		}
	}
	var checked int
	for _, a := range rows {
		if a.who != "approver" || a.resource != "configmaps" || a.name == "" || a.namespace != releaseNS || !a.allowed[vs.name] {
			continue
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: a.name, Namespace: releaseNS}, Data: map[string]string{"plan.txt": "1 to add"}}
		if _, err := admin.CoreV1().ConfigMaps(releaseNS).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		// The policy is in force once it refuses what it must (its
		// informer, like RBAC's, needs a moment).
		annotate := func() error { return patch(a.name, `{"metadata":{"annotations":{"example.com/approved":"x"}}}`) }
		if a.admission {
			err := testkit.Poll(ctx, testkit.Interval, 30*time.Second, "the approvers' policy refuses", func(context.Context) error {
				if err := annotate(); err == nil {
					return fmt.Errorf("the approver annotated %s", a.name)
				} else if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
					return err
				}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		} else if err := annotate(); err != nil {
			t.Errorf("the approver cannot annotate %s: %v", a.name, err)
		}
		if strings.HasPrefix(a.name, "tfccm-plan-") {
			if err := patch(a.name, `{"data":{"plan.txt":"0 to destroy"}}`); err == nil {
				t.Errorf("the approver rewrote the plan %s", a.name)
			}
			if err := patch(a.name, `{"metadata":{"labels":{"tfccm.io/service":"other"}}}`); err == nil {
				t.Errorf("the approver relabelled the plan %s", a.name)
			}
		}
		checked++
	}
	if vs.name == "all" && checked < 2 {
		t.Errorf("only %d approver writes checked", checked)
	}
}
