package config

import (
	"strings"
	"testing"
)

func TestMetalLBTakeover(t *testing.T) {
	for _, tc := range []struct {
		name, compat string
		preparing    bool
		err          string
	}{
		{"default", "", false, ""},
		{"compat, now by default", "metallb = true\n", false, ""},
		{"prepare", "metallb = true\nmetallb_takeover = \"prepare\"\n", true, ""},
		{"now", "metallb = true\nmetallb_takeover = \"now\"\n", false, ""},
		{"prepare without compat", "metallb_takeover = \"prepare\"\n", false, "it needs compat.metallb = true"},
		{"unknown", "metallb = true\nmetallb_takeover = \"later\"\n", false, `compat.metallb_takeover "later": want "now" or "prepare"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "cluster_name = \"c1\"\n"
			if tc.compat != "" {
				src += "compat {\n" + tc.compat + "}\n"
			}
			cfg, err := Parse([]byte(src), "cloud.hcl")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse = %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Preparing(); got != tc.preparing {
				t.Errorf("Preparing = %t, want %t", got, tc.preparing)
			}
		})
	}
	if got := TakeoverKey("shop", "web"); got != "shop.web" {
		t.Errorf("TakeoverKey = %q", got)
	}
}
