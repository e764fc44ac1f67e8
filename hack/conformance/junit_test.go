package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/testkit"
)

func TestReadJUnit(t *testing.T) {
	rs, err := ReadJUnit(filepath.Join("testdata", "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		status, message string
		duration        time.Duration
	}{
		{"passed", "", 31200 * time.Millisecond},
		{"failed", "[FAILED] error waiting for | pipe", 62700 * time.Millisecond},
		{"skipped", "Only supported for providers [gce gke] (not local)", 400 * time.Millisecond},
	}
	if len(rs) != len(want) {
		t.Fatalf("%d results, want %d (suite nodes and specs outside the focus left out): %+v", len(rs), len(want), rs)
	}
	for i, w := range want {
		if rs[i].Status != w.status || rs[i].Message != w.message || rs[i].Duration != w.duration {
			t.Errorf("result %d = %+v, want %+v", i, rs[i], w)
		}
	}
	if _, err := ReadJUnit(filepath.Join("testdata", "missing.xml")); err == nil {
		t.Error("a missing report read without error")
	}
}

func TestTable(t *testing.T) {
	rs, err := ReadJUnit(filepath.Join("testdata", "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	got := Table(rs)
	testkit.Golden(t, filepath.Join("testdata", "table.golden"), []byte(got))
}
