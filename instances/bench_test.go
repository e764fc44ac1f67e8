package instances

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tfjson "github.com/hashicorp/terraform-json"
)

const benchInstances = 5000

// benchStateJSON is a raw state document (what `tofu state pull` prints and
// a state file holds) of n local-cloud nodes (plus one unrelated resource
// per 10 nodes), as tofu writes it.
func benchStateJSON(tb testing.TB, n int) []byte {
	tb.Helper()
	var nodes, routes []map[string]any
	for i := range n {
		name := fmt.Sprintf("node-%05d", i)
		out := map[string]any{
			"kind": "instance", "name": name, "netns": "tfccm-n-" + name,
			"address":       fmt.Sprintf("10.%d.%d.%d", 100+i/65536, (i/256)%256, i%256),
			"address_v6":    fmt.Sprintf("fd00:250::%x", i+2),
			"zone":          fmt.Sprintf("zone-%d", i%3),
			"region":        "region-1",
			"instance_type": "small",
			"running":       i%50 != 0,
		}
		typ := []any{"object", map[string]any{
			"kind": "string", "name": "string", "netns": "string", "address": "string", "address_v6": "string",
			"zone": "string", "region": "string", "instance_type": "string", "running": "bool",
		}}
		dyn := map[string]any{"value": out, "type": typ}
		nodes = append(nodes, map[string]any{
			"index_key": name, "schema_version": 0,
			"attributes":           map[string]any{"id": fmt.Sprintf("%08x-0000-0000-0000-000000000000", i), "input": dyn, "output": dyn, "triggers_replace": nil},
			"sensitive_attributes": []any{},
		})
		if i%10 == 0 {
			routes = append(routes, map[string]any{
				"index_key": i, "schema_version": 0,
				"attributes":           map[string]any{"id": "r", "input": map[string]any{"value": "10.0.0.0/24", "type": "string"}, "output": map[string]any{"value": "10.0.0.0/24", "type": "string"}},
				"sensitive_attributes": []any{},
			})
		}
	}
	provider := `provider["terraform.io/builtin/terraform"]`
	doc := map[string]any{
		"version": 4, "terraform_version": "1.12.6", "serial": 1, "lineage": "bench",
		"resources": []any{
			map[string]any{"mode": "managed", "type": "terraform_data", "name": "node", "provider": provider, "instances": nodes},
			map[string]any{"mode": "managed", "type": "terraform_data", "name": "route", "provider": provider, "instances": routes},
		},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// jsonSource decodes a raw state document on every read, as TofuSource does.
type jsonSource struct {
	doc   []byte
	reads atomic.Int64
}

func (s *jsonSource) Name() string { return "bench" }

func (s *jsonSource) Read(context.Context) (*tfjson.State, error) {
	s.reads.Add(1)
	return decodeRawState(s.doc)
}

// BenchmarkRefresh measures one refresh of a 5,000-instance state: JSON
// decode, mapping every resource with instances.hcl, building the index.
func BenchmarkRefresh(b *testing.B) {
	src := &jsonSource{doc: benchStateJSON(b, benchInstances)}
	m := localMapping(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		st, err := src.Read(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if ix := BuildIndex(m, st); ix.Len() != benchInstances {
			b.Fatalf("index has %d instances", ix.Len())
		}
	}
}

// BenchmarkLookup measures lookups from a warm index (goal >= 200k/s).
func BenchmarkLookup(b *testing.B) {
	s, err := NewStore(Options{TTL: time.Hour, MaxStaleness: time.Hour}, localMapping(b), &jsonSource{doc: benchStateJSON(b, benchInstances)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	names := make([]string, benchInstances)
	ids := make([]string, benchInstances)
	for i := range names {
		names[i] = fmt.Sprintf("node-%05d", i)
		ids[i] = "terraform://local/" + names[i]
	}
	if _, err := s.Lookup(ctx, ids[0], names[0]); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		k := i % benchInstances
		in, err := s.Lookup(ctx, ids[k], names[k])
		if err != nil || in.Name != names[k] {
			b.Fatalf("lookup %s: %v", names[k], err)
		}
		i++
	}
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "lookups/s")
}

// BenchmarkColdMetadata counts backend reads caused by 5,000 concurrent
// InstanceMetadata-style lookups on a cold Store (goal: 1).
func BenchmarkColdMetadata(b *testing.B) {
	doc := benchStateJSON(b, benchInstances)
	m := localMapping(b)
	var reads int64
	n := 0
	for b.Loop() {
		src := &jsonSource{doc: doc}
		s, err := NewStore(Options{}, m, src)
		if err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		var failed atomic.Int64
		for w := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < benchInstances; i += 64 {
					name := fmt.Sprintf("node-%05d", i)
					if _, err := s.Lookup(context.Background(), "terraform://local/"+name, name); err != nil {
						failed.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		s.Close()
		if failed.Load() > 0 {
			b.Fatalf("%d lookups failed", failed.Load())
		}
		reads += src.reads.Load()
		n++
	}
	b.ReportMetric(float64(reads)/float64(n), "reads")
}

// BenchmarkIndexMemory reports the heap held by a 5,000-instance index.
func BenchmarkIndexMemory(b *testing.B) {
	src := &jsonSource{doc: benchStateJSON(b, benchInstances)}
	m := localMapping(b)
	var total uint64
	n := 0
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		st, err := src.Read(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		ix := BuildIndex(m, st)
		st = nil // the index must not need the decoded state
		runtime.GC()
		runtime.ReadMemStats(&after)
		if ix.Len() != benchInstances {
			b.Fatal("bad index")
		}
		runtime.KeepAlive(ix)
		if after.HeapAlloc > before.HeapAlloc {
			total += after.HeapAlloc - before.HeapAlloc
		}
		n++
	}
	b.ReportMetric(float64(total)/float64(n), "bytes/index")
}

// BenchmarkIdleReads runs a Store in the background for 10 s with a 1 s
// TTL while lifecycle-style checks ask about an existing and a missing
// node every 100 ms, and reports backend reads per TTL (goal: about 1) and
// per minute at a 1 s TTL.
func BenchmarkIdleReads(b *testing.B) {
	const ttl, run = time.Second, 10 * time.Second
	for range b.N {
		src := &jsonSource{doc: benchStateJSON(b, 100)}
		s, err := NewStore(Options{TTL: ttl, MaxStaleness: time.Minute}, localMapping(b), src)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		s.Start(ctx)
		deadline := time.Now().Add(run)
		for time.Now().Before(deadline) {
			if _, err := s.Lookup(ctx, "terraform://local/node-00001", "node-00001"); err != nil {
				b.Fatal(err)
			}
			_, _ = s.Lookup(ctx, "terraform://local/missing", "missing")
			time.Sleep(100 * time.Millisecond)
		}
		reads := s.readCount()
		cancel()
		s.Close()
		b.ReportMetric(float64(reads)/run.Seconds()*ttl.Seconds(), "reads/ttl")
		b.ReportMetric(float64(reads)/run.Minutes(), "reads/min")
	}
}
