package testkit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	n := 0
	if err := Poll(context.Background(), time.Millisecond, 5*time.Second, "third try", func(context.Context) error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	}); err != nil || n != 3 {
		t.Fatalf("err %v after %d tries", err, n)
	}
	err := Poll(context.Background(), 10*time.Millisecond, 100*time.Millisecond, "never", func(context.Context) error { return errors.New("last state") })
	if err == nil || !strings.Contains(err.Error(), "never: not true after 100ms: last state") {
		t.Fatalf("err %v", err)
	}
	// A check the deadline cuts short fails for the deadline alone: the
	// error is the state the check before it saw.
	n = 0
	err = Poll(context.Background(), 10*time.Millisecond, 100*time.Millisecond, "cut short", func(ctx context.Context) error {
		if n++; n == 1 {
			return errors.New("state: Applying")
		}
		<-ctx.Done()
		return fmt.Errorf("rate: Wait(n=1) would exceed context deadline: %w", ctx.Err())
	})
	if err == nil || !strings.Contains(err.Error(), "cut short: not true after 100ms: state: Applying") {
		t.Fatalf("err %v", err)
	}
	gone := errors.New("process exited")
	n = 0
	start := time.Now()
	err = Poll(context.Background(), time.Millisecond, time.Minute, "stopped", func(context.Context) error { n++; return Stop(gone) })
	if !errors.Is(err, gone) || n != 1 || time.Since(start) > 10*time.Second {
		t.Fatalf("Stop did not end the poll at once: %v after %d tries", err, n)
	}
}

func TestGet(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "node-a")
	}))
	defer srv.Close()
	if body, err := Get(context.Background(), nil, srv.URL); err != nil || !strings.Contains(body, "warming up") {
		t.Fatalf("Get of a 503 = %q, %v; want its body", body, err)
	}
	if body, err := GetOK(context.Background(), nil, srv.URL); err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(body, "warming up") {
		t.Fatalf("GetOK of a 503 = %q, %v; want its body and an error", body, err)
	}
	body, err := GetEventually(context.Background(), nil, srv.URL, 10*time.Second)
	if err != nil || body != "node-a" {
		t.Fatalf("GetEventually = %q, %v", body, err)
	}
}

func TestGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "x.golden")
	*update = true
	Golden(t, path, []byte("a\nb\n"))
	*update = false
	if b, err := os.ReadFile(path); err != nil || string(b) != "a\nb\n" {
		t.Fatalf("-update wrote %q, %v", b, err)
	}
	Golden(t, path, []byte("a\nb\n"))
	if d := LineDiff("a\nb\n", "a\nc\n"); d != "+ c\n- b" {
		t.Errorf("LineDiff = %q", d)
	}
}

func TestTofuEnvironment(t *testing.T) {
	t.Setenv("TF_VAR_leak", "x")
	t.Setenv("TF_LOG", "trace")
	cmd := Tofu{Binary: "tofu", Dir: t.TempDir(), CLIConfig: "/x.tfrc", Env: []string{"EXTRA=1"}}.Command(context.Background(), "version")
	for _, kv := range cmd.Env {
		if strings.HasPrefix(kv, "TF_VAR_") || strings.HasPrefix(kv, "TF_LOG") {
			t.Errorf("%s reached tofu", kv)
		}
	}
	for _, want := range []string{"TF_IN_AUTOMATION=1", "TF_CLI_CONFIG_FILE=/x.tfrc", "EXTRA=1"} {
		if !slices.Contains(cmd.Env, want) {
			t.Errorf("%s not set: %v", want, cmd.Env)
		}
	}
}
