package instances

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/instances/mapping"
)

// newTestStore is a Store over the real state file of inf with a fake clock.
func newTestStore(t *testing.T, inf *infra, clk *fakeClock, opts Options) *Store {
	t.Helper()
	src, err := newFileSource("infra", inf.stateFile(), tfConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	opts.Now = clk.Now
	if opts.TTL == 0 {
		opts.TTL = 30 * time.Second
	}
	if opts.MaxStaleness == 0 {
		opts.MaxStaleness = 10 * time.Minute
	}
	if opts.BackoffInitial == 0 {
		opts.BackoffInitial = 10 * time.Second
	}
	s, err := NewStore(opts, localMapping(t), src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestStoreLookup(t *testing.T) {
	inf := newInfra(t)
	inf.apply(twoNodes())
	clk := newFakeClock()
	s := newTestStore(t, inf, clk, Options{RefreshRate: 100, RefreshBurst: 10})
	ctx := context.Background()

	tests := []struct {
		name, providerID, node string
		want                   string // instance name, "" = ErrNotFound
	}{
		{"by providerID", "terraform://local/a", "", "a"},
		{"by name", "", "b", "b"},
		{"providerID first", "terraform://local/a", "b", "a"},
		{"unknown providerID falls back to name", "terraform://local/zz", "b", ""}, // b's providerID differs: a replaced instance
		{"name when node has no providerID match", "terraform://local/b", "b", "b"},
		{"absent name", "", "c", ""},
		{"absent providerID", "terraform://local/c", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := s.Lookup(ctx, tt.providerID, tt.node)
			if tt.want == "" {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("Lookup = %+v, %v; want ErrNotFound", in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			if in.Name != tt.want {
				t.Fatalf("Lookup = %s, want %s", in.Name, tt.want)
			}
		})
	}
	if _, err := s.Lookup(ctx, "", ""); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("empty lookup: %v", err)
	}
}

// TestStoreFreshness walks one source through fresh, stale-but-servable
// and too-stale state, with the backend failing.
func TestStoreFreshness(t *testing.T) {
	inf := newInfra(t)
	inf.apply(twoNodes())
	clk := newFakeClock()
	s := newTestStore(t, inf, clk, Options{TTL: 30 * time.Second, MaxStaleness: 5 * time.Minute, RefreshRate: 1000, RefreshBurst: 100})
	ctx := context.Background()

	if _, err := s.Lookup(ctx, "", "a"); err != nil {
		t.Fatal(err)
	}
	if got := s.readCount(); got != 1 {
		t.Fatalf("reads after first lookup = %d, want 1", got)
	}
	// Within the TTL: hits cost no read.
	for range 100 {
		if _, err := s.Lookup(ctx, "terraform://local/b", "b"); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.readCount(); got != 1 {
		t.Fatalf("reads after cached hits = %d, want 1", got)
	}

	// The backend goes away.
	hidden := inf.stateFile() + ".hidden"
	if err := os.Rename(inf.stateFile(), hidden); err != nil {
		t.Fatal(err)
	}
	// A miss on fresh state: one refresh attempt, which fails, so absence
	// cannot be confirmed.
	_, err := s.Lookup(ctx, "", "c")
	if err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("miss with failing backend = %v, want an error that is not ErrNotFound", err)
	}
	if !strings.Contains(err.Error(), "cannot be confirmed") || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("error %q does not explain itself", err)
	}
	reads := s.readCount()
	// During backoff, further misses do not hit the backend.
	for range 10 {
		if _, err := s.Lookup(ctx, "", "c"); err == nil || errors.Is(err, ErrNotFound) {
			t.Fatalf("miss during backoff = %v", err)
		}
	}
	if got := s.readCount(); got != reads {
		t.Fatalf("reads during backoff = %d, want %d", got, reads)
	}

	// Past the TTL but within max staleness: hits are served stale...
	clk.Advance(2 * time.Minute)
	if in, err := s.Lookup(ctx, "", "a"); err != nil || in.Name != "a" {
		t.Fatalf("stale hit = %v, %v", in, err)
	}
	// ...but a miss on stale state is never "gone".
	if _, err := s.Lookup(ctx, "", "c"); err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("miss on stale state = %v", err)
	}
	// Beyond max staleness everything is an error.
	clk.Advance(5 * time.Minute)
	_, err = s.Lookup(ctx, "", "a")
	if err == nil || !strings.Contains(err.Error(), "beyond max_staleness") {
		t.Fatalf("lookup on too-stale state = %v", err)
	}

	// The backend is back: once the backoff allows, lookups recover.
	if err := os.Rename(hidden, inf.stateFile()); err != nil {
		t.Fatal(err)
	}
	clk.Advance(5 * time.Minute)
	if in, err := s.Lookup(ctx, "", "a"); err != nil || in.Name != "a" {
		t.Fatalf("after recovery = %v, %v", in, err)
	}
	if _, err := s.Lookup(ctx, "", "c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("miss after recovery = %v, want ErrNotFound", err)
	}
}

// TestStoreEmptiedSource: a source that held instances and reads none (its
// state emptied, as `tofu state pull` of a lost remote state prints
// nothing, or every resource destroyed) is a failed read: the last good
// state keeps serving and nothing looks gone. allow_empty installs the
// empty read; a first read may be empty.
func TestStoreEmptiedSource(t *testing.T) {
	empty := map[string]func(*testing.T, *infra){
		"state emptied": func(t *testing.T, inf *infra) {
			if err := os.WriteFile(inf.stateFile(), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"every resource destroyed": func(t *testing.T, inf *infra) { inf.apply(map[string]node{}) },
	}
	for how, emptyIt := range empty {
		for _, allow := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, allow_empty %v", how, allow), func(t *testing.T) {
				inf := newInfra(t)
				inf.apply(twoNodes())
				clk := newFakeClock()
				src, err := newFileSource("infra", inf.stateFile(), tfConfig(t))
				if err != nil {
					t.Fatal(err)
				}
				src.allowEmpty = allow
				s, err := NewStore(Options{Now: clk.Now, TTL: 30 * time.Second, MaxStaleness: 10 * time.Minute, BackoffInitial: 10 * time.Second, RefreshRate: 1000, RefreshBurst: 100}, localMapping(t), src)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(s.Close)
				ctx := context.Background()
				if _, err := s.Lookup(ctx, "", "a"); err != nil {
					t.Fatal(err)
				}

				emptyIt(t, inf)
				err = s.Refresh(ctx)
				in, lookupErr := s.Lookup(ctx, "", "a")
				_, missErr := s.Lookup(ctx, "", "c")
				if errors.Is(lookupErr, ErrNotFound) || errors.Is(missErr, ErrNotFound) {
					t.Fatalf("after the source emptied: lookups %v, %v; nothing may look gone", lookupErr, missErr)
				}
				if allow {
					if err != nil || lookupErr == nil || !strings.Contains(lookupErr.Error(), "holds no instances") {
						t.Fatalf("allow_empty: refresh %v, lookup %v, %v; want the empty read installed", err, in, lookupErr)
					}
					return
				}
				if !errors.Is(err, ErrEmptied) || !strings.Contains(err.Error(), `"infra"`) || !strings.Contains(err.Error(), "2 instance(s)") {
					t.Fatalf("refresh of the emptied source = %v, want ErrEmptied naming the source and what it held", err)
				}
				if lookupErr != nil || in.Name != "a" {
					t.Fatalf("lookup after the source emptied = %v, %v; want the last good state served", in, lookupErr)
				}
				if missErr == nil {
					t.Fatal("a miss after the source emptied is no error")
				}
				if got := s.staleness()["infra"]; got != 0 {
					t.Errorf("staleness %s right after the last good read", got)
				}
				// Failing reads age the snapshot: staleness grows, and past
				// max_staleness lookups fail.
				clk.Advance(11 * time.Minute)
				if got := s.staleness()["infra"]; got != 11*time.Minute {
					t.Errorf("staleness %s, want 11m", got)
				}
				if _, err := s.Lookup(ctx, "", "a"); err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "beyond max_staleness") {
					t.Fatalf("lookup on the too-stale state = %v", err)
				}

				// The instances come back: lookups recover.
				inf.apply(twoNodes())
				clk.Advance(5 * time.Minute)
				if in, err := s.Lookup(ctx, "", "a"); err != nil || in.Name != "a" {
					t.Fatalf("after recovery = %v, %v", in, err)
				}
			})
		}
	}

	t.Run("allow_empty from the cloud config", func(t *testing.T) {
		srcs, err := SourcesFromConfig(&config.Instances{Sources: []config.StateSource{
			{Name: "kept", StateFile: "a.tfstate"}, {Name: "allowed", StateFile: "b.tfstate", AllowEmpty: true},
		}}, tfConfig(t), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []bool{false, true} {
			if got := srcs[i].(emptyAllower).AllowEmpty(); got != want {
				t.Errorf("source %s: AllowEmpty %v, want %v", srcs[i].Name(), got, want)
			}
		}
	})

	t.Run("a first read may be empty", func(t *testing.T) {
		inf := newInfra(t)
		inf.apply(map[string]node{})
		s := newTestStore(t, inf, newFakeClock(), Options{RefreshRate: 1000, RefreshBurst: 100})
		if err := s.Refresh(context.Background()); err != nil {
			t.Fatalf("first read of an empty state: %v", err)
		}
	})
}

// TestStoreMissRefresh: an instance added to the infra is found by the
// first lookup after it appears, without waiting for the TTL; an instance
// removed from it is reported gone.
func TestStoreMissRefresh(t *testing.T) {
	inf := newInfra(t)
	inf.apply(twoNodes())
	clk := newFakeClock()
	s := newTestStore(t, inf, clk, Options{RefreshRate: 1000, RefreshBurst: 100})
	ctx := context.Background()
	if _, err := s.Lookup(ctx, "", "a"); err != nil {
		t.Fatal(err)
	}
	nodes := twoNodes()
	nodes["c"] = node{Address: "10.250.0.4", Zone: "zone-c", Region: "region-1", InstanceType: "small"}
	delete(nodes, "a")
	inf.apply(nodes)

	in, err := s.Lookup(ctx, "terraform://local/c", "c")
	if err != nil {
		t.Fatalf("new instance: %v", err)
	}
	if in.Zone != "zone-c" {
		t.Errorf("zone = %q", in.Zone)
	}
	if got := s.readCount(); got != 2 {
		t.Errorf("reads = %d, want 2 (initial + one miss refresh)", got)
	}
	if _, err := s.Lookup(ctx, "terraform://local/a", "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("removed instance = %v, want ErrNotFound", err)
	}
}

// TestStoreNegativeCache: a node missing from state (the lifecycle
// controller asks about it every 5 s) costs one read, not one per ask,
// until the state is read again for any reason; a node that appears then
// is found.
func TestStoreNegativeCache(t *testing.T) {
	inf := newInfra(t)
	inf.apply(twoNodes())
	clk := newFakeClock()
	s := newTestStore(t, inf, clk, Options{RefreshRate: 1000, RefreshBurst: 100})
	ctx := context.Background()
	for range 20 {
		if _, err := s.Lookup(ctx, "terraform://local/ghost", "ghost"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("missing node = %v, want ErrNotFound", err)
		}
		clk.Advance(time.Second)
	}
	if got := s.readCount(); got != 2 {
		t.Fatalf("reads = %d after 20 lookups of a missing node, want 2 (first read + one miss refresh)", got)
	}
	// Once the TTL has passed the state is read again, and a node that
	// has appeared meanwhile is found.
	nodes := twoNodes()
	nodes["ghost"] = node{Address: "10.250.0.9", Zone: "zone-a", Region: "region-1", InstanceType: "small"}
	inf.apply(nodes)
	clk.Advance(31 * time.Second)
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if in, err := s.Lookup(ctx, "terraform://local/ghost", "ghost"); err != nil || in.Name != "ghost" {
		t.Fatalf("appeared node = %v, %v", in, err)
	}
}

// TestStoreMissRateLimited: misses beyond the token bucket answer from the
// current fresh state without reading.
func TestStoreMissRateLimited(t *testing.T) {
	inf := newInfra(t)
	inf.apply(twoNodes())
	clk := newFakeClock()
	s := newTestStore(t, inf, clk, Options{RefreshRate: 0.001, RefreshBurst: 3})
	ctx := context.Background()
	for i := range 20 {
		if _, err := s.Lookup(ctx, "", fmt.Sprintf("gone-%d", i)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("miss %d = %v, want ErrNotFound", i, err)
		}
	}
	if got := s.readCount(); got != 3 {
		t.Fatalf("reads = %d, want 3 (the burst: first read + 2 miss refreshes)", got)
	}
}

// TestStoreColdConcurrent: many concurrent cold lookups share one read.
func TestStoreColdConcurrent(t *testing.T) {
	inf := newInfra(t)
	inf.apply(twoNodes())
	s := newTestStore(t, inf, newFakeClock(), Options{RefreshRate: 1000, RefreshBurst: 100})
	var wg sync.WaitGroup
	errs := make(chan error, 500)
	for i := range 500 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := []string{"a", "b"}[i%2]
			if _, err := s.Lookup(context.Background(), "terraform://local/"+name, name); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := s.readCount(); got != 1 {
		t.Fatalf("reads = %d, want 1", got)
	}
}

// TestStoreStart: the background loop keeps the state fresh and stops on Close.
func TestStoreStart(t *testing.T) {
	inf := newInfra(t)
	inf.apply(twoNodes())
	src, err := newFileSource("infra", inf.stateFile(), tfConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewStore(Options{TTL: 200 * time.Millisecond, MaxStaleness: time.Second, RefreshRate: 100, RefreshBurst: 3}, localMapping(t), src)
	if err != nil {
		t.Fatal(err)
	}
	s.Start(context.Background())
	deadline := time.Now().Add(20 * time.Second)
	for s.readCount() < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if s.readCount() < 3 {
		t.Fatalf("background reads = %d, want >= 3", s.readCount())
	}
	s.Close()
	after := s.readCount()
	time.Sleep(500 * time.Millisecond)
	if got := s.readCount(); got != after {
		t.Fatalf("reads continued after Close: %d -> %d", after, got)
	}
}

// TestStoreSafety covers what must never be reported as "gone", with
// synthetic states (pure logic).
func TestStoreSafety(t *testing.T) {
	res := func(addr, name string) *tfjson.StateResource {
		out := map[string]any{"kind": "instance", "name": name, "netns": "n", "address": "10.0.0.1", "zone": "z", "region": "r", "instance_type": "t", "running": true}
		return &tfjson.StateResource{Address: addr, Mode: "managed", Type: "terraform_data", Name: "node", Index: name,
			AttributeValues: map[string]any{"output": out}}
	}
	bad := res(`terraform_data.node["bad"]`, "bad")
	bad.AttributeValues["output"].(map[string]any)["address"] = "not-an-ip"
	dup := res(`module.x.terraform_data.node["a"]`, "a")
	tests := []struct {
		name      string
		resources []*tfjson.StateResource
		lookup    string
		want      string // error substring; "" = ErrNotFound
	}{
		{"plain miss", []*tfjson.StateResource{res(`terraform_data.node["a"]`, "a")}, "zz", ""},
		{"empty state", nil, "zz", "holds no instances"},
		{"mapping error", []*tfjson.StateResource{res(`terraform_data.node["a"]`, "a"), bad}, "zz", "instances.hcl:"},
		{"ambiguous name", []*tfjson.StateResource{res(`terraform_data.node["a"]`, "a"), dup}, "a", "claimed by several"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &tfjson.State{Values: &tfjson.StateValues{RootModule: &tfjson.StateModule{Resources: tt.resources}}}
			src := &funcSource{name: "synthetic", fn: func(context.Context) (*tfjson.State, error) { return st, nil }}
			s, err := NewStore(Options{Now: newFakeClock().Now}, localMapping(t), src)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			_, err = s.Lookup(context.Background(), "", tt.lookup)
			if tt.want == "" {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("Lookup = %v, want ErrNotFound", err)
				}
				return
			}
			if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Lookup = %v, want a non-NotFound error containing %q", err, tt.want)
			}
		})
	}
}

// TestStoreMultipleSources: an instance is found in any source; absence
// needs every source fresh.
func TestStoreMultipleSources(t *testing.T) {
	one := &tfjson.State{Values: &tfjson.StateValues{RootModule: &tfjson.StateModule{Resources: []*tfjson.StateResource{{
		Address: `terraform_data.node["x"]`, Mode: "managed", Type: "terraform_data", Name: "node",
		AttributeValues: map[string]any{"output": map[string]any{"kind": "instance", "name": "x", "netns": "n", "address": "10.0.0.9", "zone": "z", "region": "r", "instance_type": "t", "running": true}},
	}}}}}
	var fail bool
	var mu sync.Mutex
	good := &funcSource{name: "good", fn: func(context.Context) (*tfjson.State, error) { return one, nil }}
	flaky := &funcSource{name: "flaky", fn: func(context.Context) (*tfjson.State, error) {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return nil, errors.New("backend down")
		}
		return one, nil
	}}
	clk := newFakeClock()
	s, err := NewStore(Options{Now: clk.Now, RefreshRate: 1000, RefreshBurst: 100}, localMapping(t), flaky, good)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ctx := context.Background()
	if _, err := s.Lookup(ctx, "", "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("miss with both fresh = %v", err)
	}
	mu.Lock()
	fail = true
	mu.Unlock()
	clk.Advance(time.Hour) // both too stale; flaky cannot be read
	if in, err := s.Lookup(ctx, "", "x"); err != nil || in.Name != "x" {
		t.Fatalf("hit in the good source = %v, %v", in, err)
	}
	if _, err := s.Lookup(ctx, "", "nope"); err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "backend down") {
		t.Fatalf("miss with one source down = %v", err)
	}
	if _, err := NewStore(Options{}, localMapping(t), good, good); err == nil {
		t.Error("duplicate source names accepted")
	}
}

// TestStoreSetMapping: a new mapping (an override's instances.hcl changed)
// is used after the refresh SetMapping starts, without a restart.
func TestStoreSetMapping(t *testing.T) {
	inf := newInfra(t)
	inf.apply(twoNodes())
	clk := newFakeClock()
	s := newTestStore(t, inf, clk, Options{RefreshRate: 100, RefreshBurst: 10})
	ctx := context.Background()
	if in, err := s.Lookup(ctx, "", "a"); err != nil || in.ProviderID != "terraform://local/a" {
		t.Fatalf("before: %+v %v", in, err)
	}
	src, err := os.ReadFile("../templates/local/instances.hcl")
	if err != nil {
		t.Fatal(err)
	}
	m, err := mapping.Parse([]byte(strings.ReplaceAll(string(src), "terraform://local/", "terraform://override/")), "override/instances.hcl")
	if err != nil {
		t.Fatal(err)
	}
	s.SetMapping(m)
	deadline := time.Now().Add(30 * time.Second)
	for {
		in, err := s.Lookup(ctx, "", "a")
		if err == nil && in.ProviderID == "terraform://override/a" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("new mapping not used: %+v %v", in, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.SetMapping(nil) // ignored
	if in, err := s.Lookup(ctx, "terraform://override/b", ""); err != nil || in.Name != "b" {
		t.Errorf("lookup by the new providerID: %+v %v", in, err)
	}
}

// TestWatchMapping: an edited mapping file is picked up while the store
// runs; an invalid edit is refused and the last good mapping keeps serving.
func TestWatchMapping(t *testing.T) {
	inf := newInfra(t)
	inf.apply(twoNodes())
	s := newTestStore(t, inf, newFakeClock(), Options{RefreshRate: 100, RefreshBurst: 10})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	orig, err := os.ReadFile("../templates/local/instances.hcl")
	if err != nil {
		t.Fatal(err)
	}
	file := t.TempDir() + "/instances.hcl"
	if err := os.WriteFile(file, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	src := func() ([]byte, string, error) { b, err := os.ReadFile(file); return b, file, err }
	go WatchMapping(ctx, s, src, 20*time.Millisecond)

	waitProviderID := func(want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			in, err := s.Lookup(ctx, "", "a")
			if err == nil && in.ProviderID == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("providerID of a = %+v %v, want %s", in, err, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitProviderID("terraform://local/a")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(string(orig), "terraform://local/", "terraform://v2/")), 0o644); err != nil {
		t.Fatal(err)
	}
	waitProviderID("terraform://v2/a")
	if err := os.WriteFile(file, []byte("instance \"broken\" {\n  match = \n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	waitProviderID("terraform://v2/a") // the invalid edit changed nothing
}

// TestStoreStartSchedule: the background loop retries a failing source on
// its backoff (not faster, and without giving up) and, once reads succeed,
// reads about every 90% of the TTL; a read by a lookup postpones the next one.
func TestStoreStartSchedule(t *testing.T) {
	var mu sync.Mutex
	failing := true
	var reads []time.Time
	st := &tfjson.State{Values: &tfjson.StateValues{RootModule: &tfjson.StateModule{}}}
	src := &funcSource{name: "sched", fn: func(context.Context) (*tfjson.State, error) {
		mu.Lock()
		defer mu.Unlock()
		reads = append(reads, time.Now())
		if failing {
			return nil, errors.New("backend down")
		}
		return st, nil
	}}
	const ttl = 400 * time.Millisecond
	s, err := NewStore(Options{TTL: ttl, MaxStaleness: time.Hour, RefreshRate: 1000, RefreshBurst: 100,
		BackoffInitial: 100 * time.Millisecond, BackoffMax: 200 * time.Millisecond}, localMapping(t), src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	s.Start(context.Background())
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(reads)
	}

	// Failing: retries at 50ms..300ms (backoff with jitter 0.5), so over
	// 1.5s between 5 and 31 reads; spinning on the 1ms token would be
	// hundreds.
	time.Sleep(1500 * time.Millisecond)
	if n := count(); n < 5 || n > 31 {
		t.Fatalf("%d reads of a failing source in 1.5s, want the backoff's 5..31", n)
	}
	mu.Lock()
	for i := 1; i < len(reads); i++ {
		if gap := reads[i].Sub(reads[i-1]); gap < 40*time.Millisecond {
			t.Errorf("retry %d after %s, sooner than the backoff allows", i, gap)
		}
	}
	failing = false
	mu.Unlock()

	// Succeeding: the next retry reads, then one read per 90% of the TTL (360ms).
	deadline := time.Now().Add(10 * time.Second)
	for s.Refresh(context.Background()) != nil || s.readCount() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the source never read successfully")
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := count()
	time.Sleep(1500 * time.Millisecond)
	if n := count() - before; n < 3 || n > 6 {
		t.Errorf("%d background reads in 1.5s with a %s TTL, want about 4", n, ttl)
	}
}

// TestRefreshScheduleDelay: the background loop's wait before its next
// tick, on a fake clock.
func TestRefreshScheduleDelay(t *testing.T) {
	clk := newFakeClock()
	var mu sync.Mutex
	failing := false
	st := &tfjson.State{Values: &tfjson.StateValues{RootModule: &tfjson.StateModule{}}}
	src := &funcSource{name: "delay", fn: func(context.Context) (*tfjson.State, error) {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			return nil, errors.New("backend down")
		}
		return st, nil
	}}
	s, err := NewStore(Options{TTL: 400 * time.Millisecond, MaxStaleness: time.Hour, RefreshRate: 4, RefreshBurst: 100, Now: clk.Now}, localMapping(t), src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ss := s.sources[0]
	r := &refreshSchedule{ss: ss}
	if d := r.delay(); d != 0 {
		t.Errorf("no snapshot: next tick in %s, want at once", d)
	}
	ctx := context.Background()
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if d := r.delay(); d != 360*time.Millisecond {
		t.Errorf("fresh snapshot: next tick in %s, want 90%% of the TTL (360ms)", d)
	}
	clk.Advance(100 * time.Millisecond)
	if d := r.delay(); d != 260*time.Millisecond {
		t.Errorf("100ms later: next tick in %s, want 260ms", d)
	}
	// A failed read: not before its retry time.
	clk.Advance(time.Second)
	mu.Lock()
	failing = true
	mu.Unlock()
	if _, err := ss.refresh(ctx, ss.snap.Load().gen); err == nil {
		t.Fatal("refresh of a failing source succeeded")
	}
	ss.mu.Lock()
	retry := ss.retryAt.Sub(clk.Now())
	ss.mu.Unlock()
	if retry < 500*time.Millisecond || retry > 1500*time.Millisecond {
		t.Fatalf("retry in %s, want the 1s initial backoff ±50%%", retry)
	}
	if d := r.delay(); d != retry {
		t.Errorf("after a failure: next tick in %s, want the retry time %s", d, retry)
	}
	// A tick whose refresh failed otherwise (rate limited) waits a token.
	clk.Advance(2 * time.Second)
	r.failed = true
	if d := r.delay(); d != 250*time.Millisecond {
		t.Errorf("after a rate-limited tick: next tick in %s, want one token (250ms)", d)
	}
}
