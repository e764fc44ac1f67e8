package annotations

import (
	"net/netip"
	"strings"
	"testing"
)

func TestTypedGet(t *testing.T) {
	tests := []struct {
		name    string
		ann     map[string]string
		get     func(map[string]string) (any, bool, error)
		want    any
		set     bool
		wantErr string
	}{
		{"bool true", map[string]string{"tfccm.io/proxy-protocol": "true"}, wrap(ProxyProtocol), true, true, ""},
		{"bool unset", map[string]string{}, wrap(ProxyProtocol), false, false, ""},
		{"bool bad", map[string]string{"tfccm.io/internal": "yes please"}, wrap(Internal), false, true, `annotation tfccm.io/internal: "yes please" is not a boolean`},
		{"ip v4", map[string]string{"tfccm.io/load-balancer-ip": "10.0.0.1"}, wrap(LoadBalancerIP), netip.MustParseAddr("10.0.0.1"), true, ""},
		{"ip v6", map[string]string{"tfccm.io/load-balancer-ip": "fd00::1"}, wrap(LoadBalancerIP), netip.MustParseAddr("fd00::1"), true, ""},
		{"ip bad", map[string]string{"tfccm.io/load-balancer-ip": "10.0.0.300"}, wrap(LoadBalancerIP), netip.Addr{}, true, "is not an IPv4 or IPv6 address"},
		{"ip zone", map[string]string{"tfccm.io/load-balancer-ip": "fe80::1%eth0"}, wrap(LoadBalancerIP), netip.Addr{}, true, "is not an IPv4 or IPv6 address"},
		{"variant", map[string]string{"tfccm.io/template": "internal"}, wrap(Template), "internal", true, ""},
		{"variant traversal", map[string]string{"tfccm.io/template": "../etc"}, wrap(Template), "", true, "not a valid template variant name"},
		{"variant slash", map[string]string{"tfccm.io/template": "a/b"}, wrap(Template), "", true, "not a valid template variant name"},
		{"variant dot", map[string]string{"tfccm.io/template": "a.b"}, wrap(Template), "", true, "not a valid template variant name"},
		{"variant upper", map[string]string{"tfccm.io/template": "Internal"}, wrap(Template), "", true, "not a valid template variant name"},
		{"variant empty", map[string]string{"tfccm.io/template": ""}, wrap(Template), "", true, "not a valid template variant name"},
		{"name ok", map[string]string{"tfccm.io/name": "web-prod"}, wrap(Name), "web-prod", true, ""},
		{"name too long", map[string]string{"tfccm.io/name": strings.Repeat("a", 33)}, wrap(Name), "", true, "not a valid load balancer name"},
		{"name trailing dash", map[string]string{"tfccm.io/name": "web-"}, wrap(Name), "", true, "not a valid load balancer name"},
		{"name digit first", map[string]string{"tfccm.io/name": "1web"}, wrap(Name), "", true, "not a valid load balancer name"},
		{"vars not object", map[string]string{"tfccm.io/vars": `[1]`}, wrapVars, nil, true, "must be a JSON object"},
		{"vars bad json", map[string]string{"tfccm.io/vars": `{"a":`}, wrapVars, nil, true, "not valid JSON"},
		{"vars trailing", map[string]string{"tfccm.io/vars": `{"a":1} x`}, wrapVars, nil, true, "trailing data"},
		{"vars ok", map[string]string{"tfccm.io/vars": `{"a":1,"b":"x"}`}, wrapVars, "a,b", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, set, err := tt.get(tt.ann)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if set != tt.set || got != tt.want {
				t.Fatalf("got (%v, %v), want (%v, %v)", got, set, tt.want, tt.set)
			}
		})
	}
}

func wrap[T any](k Key[T]) func(map[string]string) (any, bool, error) {
	return func(m map[string]string) (any, bool, error) {
		v, ok, err := k.Get(m)
		return v, ok, err
	}
}

func wrapVars(m map[string]string) (any, bool, error) {
	v, ok, err := Vars.Get(m)
	if err != nil || v == nil {
		return nil, ok, err
	}
	var keys []string
	for k := range v {
		keys = append(keys, k)
	}
	if len(keys) == 2 && keys[0] > keys[1] {
		keys[0], keys[1] = keys[1], keys[0]
	}
	return strings.Join(keys, ","), ok, nil
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		ann     map[string]string
		wantErr []string
	}{
		{"none", nil, nil},
		{"foreign ignored", map[string]string{"example.com/x": "anything", "service.beta.kubernetes.io/foo": "1"}, nil},
		{"valid", map[string]string{"tfccm.io/internal": "false", "tfccm.io/template": "internal"}, nil},
		{"typo", map[string]string{"tfccm.io/proxyprotocol": "true"}, []string{"unknown annotation tfccm.io/proxyprotocol", "tfccm.io/proxy-protocol"}},
		{"two bad", map[string]string{"tfccm.io/internal": "x", "tfccm.io/name": "A"}, []string{"annotation tfccm.io/internal:", "annotation tfccm.io/name:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.ann)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestDeclarations(t *testing.T) {
	want := []string{"tfccm.io/address-pool", "tfccm.io/adopt", "tfccm.io/allow-shared-ip", "tfccm.io/approved-plan", "tfccm.io/internal", "tfccm.io/load-balancer-ip", "tfccm.io/load-balancer-ips", "tfccm.io/name", "tfccm.io/proxy-protocol", "tfccm.io/retain-on-delete", "tfccm.io/template", "tfccm.io/vars"}
	got := All()
	if len(got) != len(want) {
		t.Fatalf("got %d declarations, want %d", len(got), len(want))
	}
	for i, d := range got {
		if d.Name != want[i] || d.Doc == "" || d.Type == "" {
			t.Errorf("declaration %d = %+v", i, d)
		}
		if err := Check(map[string]string{d.Name: d.Example}); err != nil {
			t.Errorf("example of %s: %v", d.Name, err)
		}
	}
}

func TestApprovedPlan(t *testing.T) {
	good := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		raw string
		ok  bool
	}{
		{good, true},
		{" " + good + "\n", true},
		{strings.ToUpper(good), false},
		{good[:63], false},
		{good + "0", false},
		{"", false},
		{"sha256:" + good, false},
	} {
		got, set, err := ApprovedPlan.Get(map[string]string{ApprovedPlan.Name: tc.raw})
		if !set || (err == nil) != tc.ok || (tc.ok && got != good) {
			t.Errorf("%q: got %q, %v, %v", tc.raw, got, set, err)
		}
		if cerr := Check(map[string]string{ApprovedPlan.Name: tc.raw}); (cerr == nil) != tc.ok {
			t.Errorf("Check(%q) = %v", tc.raw, cerr)
		}
	}
}

// TestWireKeysAreNotServiceAnnotations: the keys tfccm writes on its own
// objects are declared and documented, but a Service carrying one is
// refused like any unknown key.
func TestWireKeysAreNotServiceAnnotations(t *testing.T) {
	if len(WireKeys()) < 4 {
		t.Fatalf("wire keys = %v", WireKeys())
	}
	for _, w := range WireKeys() {
		if _, ok := Lookup(w.Name); ok {
			t.Errorf("wire key %s is also a Service annotation", w.Name)
		}
		if !strings.Contains(document(), "`"+w.Name+"`") {
			t.Errorf("wire key %s is not documented", w.Name)
		}
	}
	if err := Check(map[string]string{PlanHash: "x"}); err == nil {
		t.Errorf("%s accepted on a Service", PlanHash)
	}
	if got := PlanConfigMapName("lb-x"); got != "tfccm-plan-lb-x" {
		t.Errorf("PlanConfigMapName = %q", got)
	}
}

// TestOversizedValues: values over MaxValueBytes are refused without
// being parsed or echoed; long invalid values are quoted cut short.
func TestOversizedValues(t *testing.T) {
	huge := strings.Repeat("x", MaxValueBytes+1)
	err := Check(map[string]string{Vars.Name: huge, Template.Name: strings.Repeat("y", 5000)})
	if err == nil {
		t.Fatal("oversized values accepted")
	}
	msg := err.Error()
	if !strings.Contains(msg, "the limit is 16384") || len(msg) > 600 {
		t.Errorf("error %d bytes: %.300s", len(msg), msg)
	}
	if _, _, err := Vars.Get(map[string]string{Vars.Name: huge}); err == nil || strings.Contains(err.Error(), "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx") {
		t.Errorf("Get: %v", err)
	}
	if got := Quote(strings.Repeat("é", 100)); !strings.HasSuffix(got, "... (200 bytes)") || len(got) > 120 {
		t.Errorf("Quote = %q", got)
	}
	if got := Quote("short"); got != `"short"` {
		t.Errorf("Quote = %q", got)
	}
}
