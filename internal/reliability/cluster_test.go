package reliability

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// cluster is a throwaway PostgreSQL cluster owned by one test, the Go
// twin of scripts/with-postgres.sh: initdb into a temporary directory,
// trust authentication, fsync off, listening on 127.0.0.1 only on a free
// port, run as user nobody when the test runs as root (PostgreSQL refuses
// root), stopped and removed in t.Cleanup.
type cluster struct {
	dir   string
	pgctl string
	port  int
	cred  *syscall.Credential
	DSN   string
}

const installHint = "install PostgreSQL's server binaries (Debian/Ubuntu: apt-get install postgresql; " +
	"initdb and pg_ctl are then in /usr/lib/postgresql/<version>/bin)"

// findPGBin returns the path of a PostgreSQL server program: from PATH,
// else the newest /usr/lib/postgresql/*/bin.
func findPGBin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH nor in /usr/lib/postgresql/*/bin", name)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startCluster starts a throwaway cluster for t. It fails t, never skips
// it, when PostgreSQL's server programs are missing.
func startCluster(t testing.TB) *cluster {
	t.Helper()
	initdb, err := findPGBin("initdb")
	if err != nil {
		t.Fatalf("this test restarts a PostgreSQL server of its own: %v; %s", err, installHint)
	}
	pgctl, err := findPGBin("pg_ctl")
	if err != nil {
		t.Fatalf("this test restarts a PostgreSQL server of its own: %v; %s", err, installHint)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "reliability-pg-")
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{dir: dir, pgctl: pgctl, port: port}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			t.Fatalf("running as root, the cluster must run as nobody: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := c.run(2*time.Minute, initdb, "-D", c.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	if out, err := c.ctl(2*time.Minute, "start"); err != nil {
		t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, c.log())
	}
	t.Cleanup(func() { _, _ = c.run(time.Minute, c.pgctl, "-D", c.data(), "-m", "immediate", "-w", "stop") })
	c.DSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return c
}

func (c *cluster) data() string { return filepath.Join(c.dir, "data") }

func (c *cluster) log() string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// ctl runs pg_ctl action (start, restart) with the cluster's options.
func (c *cluster) ctl(timeout time.Duration, action string, args ...string) ([]byte, error) {
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c synchronous_commit=off "+
		"-c full_page_writes=off -c max_connections=100", c.port, c.dir)
	all := append([]string{"-D", c.data(), "-l", filepath.Join(c.dir, "server.log"), "-w", "-t", "60", "-o", opts}, args...)
	return c.run(timeout, c.pgctl, append(all, action)...)
}

// restart restarts the server the way an operator does: pg_ctl restart -m
// fast (connections are terminated, transactions rolled back).
func (c *cluster) restart() error {
	out, err := c.ctl(2*time.Minute, "restart", "-m", "fast")
	if err != nil {
		return fmt.Errorf("pg_ctl restart: %v\n%s\n%s", err, out, c.log())
	}
	return nil
}

func (c *cluster) run(timeout time.Duration, prog string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = c.dir
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return out, fmt.Errorf("%s timed out after %v: %v", filepath.Base(prog), timeout, err)
	}
	return out, err
}
