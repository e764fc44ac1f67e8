package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/workspace/backends"
	"github.com/tfccm/tfccm/workspace/tofu"
)

// socketsBinary wraps tofu: it logs each command's name, what the engine
// set for the providers' sockets and that directory's mode, and runs tofu
// with a debug log of its own (where go-plugin writes each provider's
// socket address and whether it set up mTLS).
func socketsBinary(t *testing.T) (bin, dir string) {
	t.Helper()
	dir = t.TempDir()
	script := fmt.Sprintf(`#!/bin/sh
echo "$1 tls_off=$TF_DISABLE_PLUGIN_TLS dir=$PLUGIN_UNIX_SOCKET_DIR mode=$(stat -c %%a "$PLUGIN_UNIX_SOCKET_DIR" 2>/dev/null)" >> '%[1]s/calls.log'
TF_LOG=debug TF_LOG_PATH='%[1]s/tofu-'$$.log exec '%[2]s' "$@"
`, dir, repo.Tofu(t))
	bin = filepath.Join(dir, "tofu-wrapper")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, dir
}

var pluginAddress = regexp.MustCompile(`plugin address: .*address=(\S+)`)

// TestProviderSockets: by default every command's providers run without
// mTLS, their sockets in a 0700 directory of the command's own under the
// work dir, removed when the command ends (and what an earlier
// incarnation left there is removed at Start); with ProviderMTLS tofu
// sets up mTLS as it does by itself.
func TestProviderSockets(t *testing.T) {
	cliConfig, err := repo.LBHostCLIConfig()
	if err != nil {
		t.Fatal(err)
	}
	for _, mtls := range []bool{false, true} {
		t.Run(fmt.Sprintf("mtls=%v", mtls), func(t *testing.T) {
			bin, logs := socketsBinary(t)
			work := t.TempDir()
			stale := filepath.Join(work, tofu.SocketsDir, "r7", "plugin123")
			if err := os.MkdirAll(filepath.Dir(stale), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(stale, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			e := newTestEngine(t, Options{Binary: bin, CLIConfigFile: cliConfig, WorkDir: work, ProviderMTLS: mtls})
			backend := backends.Info{Type: "local", Attributes: map[string]cty.Value{"path": cty.StringVal(filepath.Join(work, "a.tfstate"))}}
			st := applyAndWait(t, e, preparedSpec("a", 1, backend, ""))
			if string(st.Outputs["n"]) != "1" {
				t.Fatalf("outputs %v", st.Outputs)
			}
			if !mtls && exists(filepath.Dir(stale)) {
				t.Error("what an earlier incarnation left in the socket directory is still there")
			}

			calls, err := os.ReadFile(filepath.Join(logs, "calls.log"))
			if err != nil {
				t.Fatal(err)
			}
			sockets := filepath.Join(work, tofu.SocketsDir)
			commands := 0
			for _, line := range strings.Split(strings.TrimSpace(string(calls)), "\n") {
				commands++
				switch {
				case mtls && line != strings.Fields(line)[0]+" tls_off= dir= mode=":
					t.Errorf("with provider_mtls the engine set socket settings: %q", line)
				case !mtls && !regexp.MustCompile(`^\S+ tls_off=1 dir=`+regexp.QuoteMeta(sockets)+`/r\d+ mode=700$`).MatchString(line):
					t.Errorf("command without its own private socket directory: %q", line)
				}
			}
			if commands < 2 {
				t.Fatalf("%d tofu commands logged, want init/plan/apply:\n%s", commands, calls)
			}

			debug, _ := filepath.Glob(filepath.Join(logs, "tofu-*.log"))
			addresses, tlsSetups := 0, 0
			for _, f := range debug {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				tlsSetups += strings.Count(string(b), "configuring client automatic mTLS")
				for _, m := range pluginAddress.FindAllStringSubmatch(string(b), -1) {
					addresses++
					if !mtls && !strings.HasPrefix(m[1], sockets+"/r") {
						t.Errorf("a provider listened at %s, outside the command's socket directory", m[1])
					}
				}
			}
			if addresses == 0 {
				t.Fatal("no provider was started (no plugin address in tofu's logs)")
			}
			if mtls != (tlsSetups > 0) {
				t.Errorf("provider_mtls=%v, but %d of %d provider starts set up mTLS", mtls, tlsSetups, addresses)
			}
			if entries, err := os.ReadDir(sockets); !mtls && (err != nil || len(entries) != 0) {
				t.Errorf("socket directories left after the commands ended: %v %v", entries, err)
			}
		})
	}
}
