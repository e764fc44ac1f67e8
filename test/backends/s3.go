package backends

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/testkit"
)

// The S3 identity and bucket of the test server.
const (
	s3AccessKey = "tfccm-test"
	s3SecretKey = "tfccm-test-secret-key"
	s3Bucket    = "tfstate"
)

// S3 is a running SeaweedFS server (master, volume, filer and S3 gateway in
// one process, `weed server`) with one bucket.
type S3 struct {
	// Endpoint is the S3 API's URL.
	Endpoint string
	// Bucket is the bucket the s3 backend writes to.
	Bucket string
	filer  string // the filer's HTTP URL: raw objects under /buckets
}

// StartS3 runs SeaweedFS (bin/weed, built by make tools-s3 from the module
// proxy) on loopback ports with its data in a temporary directory until
// the test ends, with one identity and the bucket Bucket. Without bin/weed
// the test is skipped, unless TFCCM_S3=1 (make test-backends) requires it.
func StartS3(t testing.TB) *S3 {
	t.Helper()
	if testing.Short() {
		t.Skip("starts SeaweedFS: not with -short")
	}
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	weed := filepath.Join(root, "bin", "weed")
	if _, err := os.Stat(weed); err != nil {
		if os.Getenv("TFCCM_S3") == "" {
			t.Skipf("no SeaweedFS (%v): make test-backends builds it and runs the s3 tests", err)
		}
		t.Fatalf("%v (make tools-s3 builds bin/weed)", err)
	}
	cred, err := unprivileged("nobody")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	dir := serverDir(t, "tfccm-s3-", cred)
	cfg, err := json.Marshal(map[string]any{"identities": []any{map[string]any{
		"name":        "tfccm",
		"credentials": []any{map[string]string{"accessKey": s3AccessKey, "secretKey": s3SecretKey}},
		"actions":     []string{"Admin", "Read", "Write", "List", "Tagging"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	port := func() string { return strconv.Itoa(freePort(t)) }
	s3Port, filerPort := port(), port()
	args := []string{"server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir=" + dir,
		"-master.port=" + port(), "-master.port.grpc=" + port(), "-master.telemetry=false", "-master.volumeSizeLimitMB=64",
		"-volume.port=" + port(), "-volume.port.grpc=" + port(), "-volume.max=4",
		"-filer", "-filer.port=" + filerPort, "-filer.port.grpc=" + port(), "-filer.localSocket=" + filepath.Join(dir, "filer.sock"),
		"-s3", "-s3.port=" + s3Port, "-s3.port.grpc=" + port(), "-s3.port.iceberg=0", "-s3.port.lance=0",
		"-s3.config=" + cfgPath, "-s3.localSocket=" + filepath.Join(dir, "s3.sock"), "-s3.iam=false"}
	log, err := os.Create(filepath.Join(dir, "weed.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(weed, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		// Its data goes with the test: no need to wait for the volume
		// server's graceful stop (seconds).
		_ = cmd.Process.Kill()
		<-exited
	})
	s := &S3{Endpoint: "http://127.0.0.1:" + s3Port, Bucket: s3Bucket, filer: "http://127.0.0.1:" + filerPort}
	alive := func() error {
		select {
		case err := <-exited:
			exited <- err
			return testkit.Stop(fmt.Errorf("weed exited: %v\n%s", err, readTail(log.Name())))
		default:
			return nil
		}
	}
	// The bucket is a directory under the filer's /buckets.
	err = testkit.Poll(context.Background(), 100*time.Millisecond, 2*time.Minute, "SeaweedFS creates the bucket", func(ctx context.Context) error {
		if err := alive(); err != nil {
			return err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.filer+"/buckets/"+s3Bucket+"/?op=mkdir", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			b, _ := io.ReadAll(resp.Body)
			return fmt.Errorf("mkdir bucket: %s %s", resp.Status, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = testkit.Poll(context.Background(), 100*time.Millisecond, 2*time.Minute, "SeaweedFS serves S3", func(ctx context.Context) error {
		if err := alive(); err != nil {
			return err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Endpoint+"/status", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("SeaweedFS S3 ready in %s", time.Since(start).Round(10*time.Millisecond))
	return s
}

// Settings are the s3 backend's non-secret settings for the server (the
// endpoint goes in an endpoints block: Blocks).
func (s *S3) Settings() map[string]string {
	return map[string]string{"bucket": s.Bucket, "region": "us-east-1", "use_path_style": "true", "use_lockfile": "true",
		"skip_credentials_validation": "true", "skip_region_validation": "true", "skip_requesting_account_id": "true",
		"skip_metadata_api_check": "true"}
}

// Secrets are the s3 backend's credentials for the server.
func (s *S3) Secrets() map[string]string {
	return map[string]string{"access_key": s3AccessKey, "secret_key": s3SecretKey}
}

// Object returns the stored bytes of key in the bucket, read from the
// filer (not through the S3 API or tofu); "" when there is none.
func (s *S3) Object(t testing.TB, key string) string {
	t.Helper()
	resp, err := http.Get(s.filer + "/buckets/" + s.Bucket + "/" + key)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusNotFound {
		return ""
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("read %s: %s %s", key, resp.Status, b)
	}
	return string(b)
}
