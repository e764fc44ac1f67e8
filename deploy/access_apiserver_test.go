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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

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
