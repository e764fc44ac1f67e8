package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadPoolDump(t *testing.T) {
	for _, tc := range []struct {
		name, dump, want, err string
	}{
		{name: "a List of several kinds", dump: `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Service
  metadata: {name: web, namespace: default}
- apiVersion: tfccm.io/v1alpha1
  kind: AddressPool
  metadata: {name: web}
  spec: {addresses: [10.0.0.0/30]}
`, want: "web=10.0.0.0/30"},
		{name: "documents", dump: `apiVersion: tfccm.io/v1alpha1
kind: AddressPool
metadata: {name: a}
spec: {addresses: [10.0.0.0/30]}
---
apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata: {name: m}
spec: {addresses: [10.9.0.0/30]}
---
apiVersion: tfccm.io/v1alpha1
kind: AddressPool
metadata: {name: b}
spec: {addresses: [10.0.1.0/30]}
`, want: "a=10.0.0.0/30 b=10.0.1.0/30"},
		{name: "a field of the wrong type", dump: `apiVersion: tfccm.io/v1alpha1
kind: AddressPool
metadata: {name: a}
spec: {addresses: 10.0.0.0/30}
`, err: `AddressPool "a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "dump.yaml")
			if err := os.WriteFile(f, []byte(tc.dump), 0o600); err != nil {
				t.Fatal(err)
			}
			pools, err := readPoolDump(f, false)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range pools {
				got = append(got, p.Name+"="+strings.Join(p.Spec.Addresses, ","))
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("pools %v, want %s", got, tc.want)
			}
		})
	}
}
