package backends

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/lib/pq" // database/sql driver "postgres"

	"github.com/tfccm/tfccm/internal/testkit"
)

// pgUser is the database superuser the tests connect as (trust
// authentication on loopback: the server lives only as long as its test).
const pgUser = "tfccm"

// Postgres is a running PostgreSQL server.
type Postgres struct {
	// ConnStr is a conn_str for the pg backend (database tfccm).
	ConnStr string
	// DB is a connection to the same database, for reading raw rows.
	DB  *sql.DB
	cmd *exec.Cmd
	dir string
}

// pgBinDir finds Debian's PostgreSQL binaries (the newest major version
// installed): hack/tools.sh installs the postgresql package.
func pgBinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi < vj
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "postgres")); err == nil {
			return dirs[i], nil
		}
	}
	return "", fmt.Errorf("no PostgreSQL under /usr/lib/postgresql (make tools installs Debian's postgresql)")
}

// unprivileged is the credential a server runs with: as root, the system
// user name (PostgreSQL refuses to run as root: the Debian package's
// postgres user); nil when not root (the current user).
func unprivileged(name string) (*syscall.Credential, error) {
	if os.Getuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("a server started as root runs as %s, which does not exist: %w", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// serverDir is a temporary directory the server's user owns (t.TempDir's
// parent is not reachable by another user), removed at the test's end.
func serverDir(t testing.TB, prefix string, cred *syscall.Credential) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// freePort returns a loopback TCP port nobody listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// StartPostgres initializes a database cluster in a temporary directory
// and runs PostgreSQL on a loopback port until the test ends (fsync off:
// the data lives as long as the test).
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	if testing.Short() {
		t.Skip("starts PostgreSQL: not with -short")
	}
	bin, err := pgBinDir()
	if err != nil {
		t.Fatal(err)
	}
	cred, err := unprivileged("postgres")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	dir := serverDir(t, "tfccm-pg-", cred)
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", pgUser, "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	port := freePort(t)
	log, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	p := &Postgres{dir: dir}
	p.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-k", dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	p.cmd.Stdout, p.cmd.Stderr = log, log
	// The server goes with the test binary, however it ends.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-exited
		}
	})
	admin := fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable", pgUser, port)
	db, err := sql.Open("postgres", admin)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = testkit.Poll(context.Background(), 50*time.Millisecond, time.Minute, "PostgreSQL accepts connections", func(ctx context.Context) error {
		select {
		case err := <-exited:
			exited <- err
			return testkit.Stop(fmt.Errorf("postgres exited: %v\n%s", err, readTail(log.Name())))
		default:
		}
		return db.PingContext(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE DATABASE tfccm"); err != nil {
		t.Fatal(err)
	}
	p.ConnStr = fmt.Sprintf("postgres://%s@127.0.0.1:%d/tfccm?sslmode=disable", pgUser, port)
	if p.DB, err = sql.Open("postgres", p.ConnStr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.DB.Close() })
	t.Logf("PostgreSQL (%s) ready in %s", filepath.Base(filepath.Dir(bin)), time.Since(start).Round(10*time.Millisecond))
	return p
}

// States returns the raw rows of the pg backend's states table in schema:
// workspace name → data, exactly as stored.
func (p *Postgres) States(t testing.TB, schema string) map[string]string {
	t.Helper()
	rows, err := p.DB.Query(fmt.Sprintf("SELECT name, data FROM %q.states", schema))
	if err != nil {
		t.Fatalf("read %s.states: %v", schema, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, data string
		if err := rows.Scan(&name, &data); err != nil {
			t.Fatal(err)
		}
		out[name] = data
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func readTail(path string) string {
	b, _ := os.ReadFile(path)
	s := string(b)
	if len(s) > 4000 {
		s = s[len(s)-4000:]
	}
	return strings.TrimSpace(s)
}
