package lbcontroller

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// appliedFiles are a load balancer workspace's applied files with
// service.announce = announce ("none": inputs from before it existed).
func appliedFiles(announce string) map[string][]byte {
	service := "{ name = \"web\" }"
	if announce != "none" {
		service = fmt.Sprintf("{ name = \"web\", announce = %s }", announce)
	}
	return map[string][]byte{
		"main.tf":            []byte("variable \"service\" {}\n"),
		templates.TfvarsFile: []byte("load_balancer_id = \"lb-1\"\nservice = " + service + "\n"),
	}
}

// fakeApplied is what the engine holds of applied workspaces: a status,
// a work dir (its applied copy written for real) and a catalog.
type fakeApplied struct {
	root     string
	status   map[string]workspace.Status
	catalog  map[string]map[string][]byte // nil: the backend keeps none
	listErr  error
	entryErr error
	reads    int // catalog entries read
}

func (f *fakeApplied) Status(name string) workspace.Status { return f.status[name] }
func (f *fakeApplied) Dir(name string) string              { return filepath.Join(f.root, name) }
func (f *fakeApplied) Catalogued(context.Context) ([]string, error) {
	if f.catalog == nil {
		return nil, workspace.ErrNoCatalog
	}
	var names []string
	for n := range f.catalog {
		names = append(names, n)
	}
	return names, f.listErr
}

func (f *fakeApplied) CatalogEntry(_ context.Context, name string) (workspace.CatalogEntry, error) {
	f.reads++
	if f.entryErr != nil {
		return workspace.CatalogEntry{}, f.entryErr
	}
	return workspace.CatalogEntry{Name: name, Files: f.catalog[name]}, nil
}

// applyInDir records files as ws's last apply in the work dir.
func (f *fakeApplied) applyInDir(t *testing.T, ws, hash string, files map[string][]byte) {
	t.Helper()
	spec := workspace.Spec{Name: ws, Files: files}
	if err := spec.WriteDir(workspace.AppliedPath(f.Dir(ws))); err != nil {
		t.Fatal(err)
	}
	f.status[ws] = workspace.Status{Name: ws, Phase: workspace.PhaseApplied, AppliedHash: hash}
}

func takeoverSvc(name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("uid-" + name)}}
}

// TestTakeoverOneWay: the take-over's rule, row by row. A Service whose
// load balancer was applied announcing (read from the work dir's applied
// copy, or the catalog's when the work dir has none) stays announced
// whatever the take-over list says: not read yet, no ConfigMap, the
// Service not in it. One never applied announcing is prepared unless
// listed, and is not decided before the list was read. What was applied
// that cannot be read decides nothing.
func TestTakeoverOneWay(t *testing.T) {
	type list int
	const (
		unread list = iota
		missing
		listed
		all
		others // the ConfigMap lists other Services only
	)
	type applied int
	const (
		never applied = iota
		dirAnnouncing
		dirPrepared
		dirBeforeAnnounce
		catalogAnnouncing
		catalogPrepared
		catalogUnreadable
		catalogUnlisted
		dirUnreadable
		destroyed
	)
	for _, tc := range []struct {
		name    string
		list    list
		applied applied
		standby bool
		err     string
	}{
		{"new, list unread", unread, never, false, "waiting to read the take-over list"},
		{"new, no ConfigMap", missing, never, true, ""},
		{"new, listed", listed, never, false, ""},
		{"new, all", all, never, false, ""},
		{"prepared, not listed", others, dirPrepared, true, ""},
		{"prepared, listed", listed, dirPrepared, false, ""},
		{"prepared, list unread", unread, dirPrepared, false, "waiting to read the take-over list"},
		{"taken over, ConfigMap deleted", missing, dirAnnouncing, false, ""},
		{"taken over, dropped from the list", others, dirAnnouncing, false, ""},
		{"taken over, restarted before the list is read", unread, dirAnnouncing, false, ""},
		{"served before prepare was set", missing, dirBeforeAnnounce, false, ""},
		{"taken over, new pod, catalog", missing, catalogAnnouncing, false, ""},
		{"taken over, new pod, catalog, list unread", unread, catalogAnnouncing, false, ""},
		{"prepared, new pod, catalog", missing, catalogPrepared, true, ""},
		{"catalog unreadable", missing, catalogUnreadable, false, "state backend's catalog"},
		{"catalog unreadable, listed", listed, catalogUnreadable, false, ""},
		{"not in the catalog", missing, catalogUnlisted, true, ""},
		{"applied copy unreadable", missing, dirUnreadable, false, "read its last applied inputs"},
		{"destroyed", missing, destroyed, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk := newTakeover(addressConfig(t, "compat {\n  metallb = true\n  metallb_takeover = \"prepare\"\n}\n"))
			svc := takeoverSvc("web")
			ws := "lb-web"
			src := &fakeApplied{root: t.TempDir(), status: map[string]workspace.Status{}}
			switch tc.applied {
			case dirAnnouncing:
				src.applyInDir(t, ws, "h1", appliedFiles("true"))
			case dirPrepared:
				src.applyInDir(t, ws, "h1", appliedFiles("false"))
			case dirBeforeAnnounce:
				src.applyInDir(t, ws, "h1", appliedFiles("none"))
			case dirUnreadable:
				src.applyInDir(t, ws, "h1", map[string][]byte{templates.TfvarsFile: []byte("service = {")})
			case catalogAnnouncing:
				src.catalog = map[string]map[string][]byte{ws: appliedFiles("true")}
			case catalogPrepared:
				src.catalog = map[string]map[string][]byte{ws: appliedFiles("false")}
			case catalogUnreadable:
				src.catalog = map[string]map[string][]byte{ws: nil}
				src.entryErr = errors.New("the state backend did not answer")
			case catalogUnlisted:
				src.catalog = map[string]map[string][]byte{"lb-other": appliedFiles("true")}
			case destroyed:
				src.catalog = map[string]map[string][]byte{ws: appliedFiles("true")}
				src.status[ws] = workspace.Status{Name: ws, Phase: workspace.PhaseDestroyed}
			}
			tk.recallFrom(src, func(*corev1.Service) string { return ws })
			tk.read = tc.list != unread
			tk.all = tc.list == all
			switch tc.list {
			case listed:
				tk.keys[config.TakeoverKey("shop", "web")] = true
			case others:
				tk.keys[config.TakeoverKey("shop", "api")] = true
			}
			got, err := tk.standby(svc)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("standby = %t, %v; want an error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.standby {
				t.Fatalf("standby = %t, %v; want %t", got, err, tc.standby)
			}
		})
	}
}

// TestTakeoverListLost: the footgun, in order. A Service taken over (its
// take-over applied) stays announced when the ConfigMap is deleted, and
// a restarted controller (a new pod: its work dir empty, the catalog
// holding the apply) announces it before it reads any list; a Service
// still prepared stays prepared. The catalog is read once per workspace.
func TestTakeoverListLost(t *testing.T) {
	cfg := addressConfig(t, "compat {\n  metallb = true\n  metallb_takeover = \"prepare\"\n}\n")
	web, api := takeoverSvc("web"), takeoverSvc("api")
	wsOf := func(svc *corev1.Service) string { return "lb-" + svc.Name }
	src := &fakeApplied{root: t.TempDir(), status: map[string]workspace.Status{}, catalog: map[string]map[string][]byte{}}
	client := fake.NewSimpleClientset()
	ctx := context.Background()
	want := func(tk *takeover, svc *corev1.Service, standby bool) {
		t.Helper()
		got, err := tk.standby(svc)
		if err != nil || got != standby {
			t.Errorf("standby(%s) = %t, %v; want %t", svc.Name, got, err, standby)
		}
	}

	tk := newTakeover(cfg)
	tk.setClient(client)
	tk.recallFrom(src, wsOf)
	tk.poll(ctx)
	want(tk, web, true)
	want(tk, api, true)
	for _, svc := range []*corev1.Service{web, api} { // both prepared
		src.applyInDir(t, wsOf(svc), "prepared", appliedFiles("false"))
		src.catalog[wsOf(svc)] = appliedFiles("false")
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Namespace, Name: config.TakeoverConfigMap},
		Data: map[string]string{config.TakeoverKey("shop", "web"): ""}}
	if _, err := client.CoreV1().ConfigMaps(cfg.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tk.poll(ctx)
	want(tk, web, false) // taken over: applied announcing
	src.applyInDir(t, wsOf(web), "announced", appliedFiles("true"))
	src.catalog[wsOf(web)] = appliedFiles("true")
	want(tk, api, true)

	if err := client.CoreV1().ConfigMaps(cfg.Namespace).Delete(ctx, config.TakeoverConfigMap, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	tk.poll(ctx)
	want(tk, web, false) // the list lost it: still announced
	want(tk, api, true)

	// A new pod: the work dir empty, the list not read yet.
	src.root, src.status = t.TempDir(), map[string]workspace.Status{}
	restarted := newTakeover(cfg)
	restarted.setClient(client)
	restarted.recallFrom(src, wsOf)
	want(restarted, web, false)
	if _, err := restarted.standby(api); !errors.Is(err, errTakeoverUnknown) {
		t.Errorf("standby(api) before the list was read after a restart: %v, want errTakeoverUnknown", err)
	}
	reads := src.reads
	want(restarted, web, false)
	if src.reads != reads {
		t.Errorf("the catalog entry read again (%d reads, then %d)", reads, src.reads)
	}
	restarted.poll(ctx)
	want(restarted, web, false)
	want(restarted, api, true)
}
