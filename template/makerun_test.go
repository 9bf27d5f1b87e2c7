package template_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conveyorgo/conveyor/internal/pgtest"
	"github.com/conveyorgo/conveyor/internal/syncbuf"
	"github.com/conveyorgo/conveyor/sqlitepubsub"
)

// TestMakeRun runs `make run` as a user does and presses Ctrl-C: SIGINT
// to its whole process group, as a terminal sends it. The app must stop
// cleanly and make must not report an error.
func TestMakeRun(t *testing.T) {
	t.Run("Mem", func(t *testing.T) {
		t.Parallel()
		p := startMake(t, "BACKEND=mem")
		p.ctrlC(t)
	})
	t.Run("MemSignalToApp", func(t *testing.T) {
		// SIGINT to the app alone (as kill -INT does): its exit status,
		// 0 after a clean stop, is make's.
		t.Parallel()
		p := startMake(t, "BACKEND=mem")
		app := p.app(t)
		if err := syscall.Kill(app, syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		p.wait(t)
		if p.err != nil {
			t.Errorf("make exited with %v after the app's clean stop, want exit status 0\n%s", p.err, p.stderr)
		}
		p.checkStopped(t)
	})
	t.Run("DB", func(t *testing.T) {
		// On PostgreSQL the app keeps its tables in a schema of its own,
		// says which, and never logs the DSN's password.
		t.Parallel()
		dsn, password := newDatabase(t)
		p := startMake(t, "BACKEND=db", "DATABASE_URL="+dsn)
		p.ctrlC(t)

		log := p.stderr.String()
		u, _ := url.Parse(dsn)
		ready := regexp.MustCompile(`msg="database ready" database=` + regexp.QuoteMeta(strings.TrimPrefix(u.Path, "/")) + ` schema=conveyor_template dsn=\S*xxxxx`)
		if !ready.MatchString(log) {
			t.Errorf("the app did not log the database, the schema conveyor_template and the redacted DSN it uses:\n%s", log)
		}
		if strings.Contains(log, password) {
			t.Errorf("the app logged the DSN's password:\n%s", log)
		}
		conn := connect(t, dsn)
		var inSchema, inPublic int
		if err := conn.QueryRow(context.Background(), `SELECT
			count(*) FILTER (WHERE schemaname = 'conveyor_template'),
			count(*) FILTER (WHERE schemaname = 'public')
			FROM pg_tables WHERE tablename LIKE 'conveyor%'`).Scan(&inSchema, &inPublic); err != nil {
			t.Fatal(err)
		}
		if inSchema == 0 || inPublic != 0 {
			t.Errorf("%d conveyor tables in the schema conveyor_template and %d in public: want them all in conveyor_template", inSchema, inPublic)
		}
	})
	t.Run("DBThrowaway", func(t *testing.T) {
		// No server given: scripts/with-postgres.sh starts a throwaway
		// cluster, and removes it after the app's clean stop.
		t.Parallel()
		if !haveInitdb() {
			t.Skip("initdb is not installed: scripts/with-postgres.sh cannot start a throwaway cluster")
		}
		p := startMake(t, "BACKEND=db", "PGPORT_FORCE_THROWAWAY=1")
		p.ctrlC(t)
		if !strings.Contains(p.stderr.String(), `msg="database ready" database=postgres schema=conveyor_template`) {
			t.Errorf("the app did not log that it uses the schema conveyor_template:\n%s", p.stderr)
		}
	})
	t.Run("SQLite", func(t *testing.T) {
		// No CONVEYOR_SQLITE_PATH: the file is $TMPDIR/conveyor-template.db,
		// which the run prints, and keeps with its tables after the stop.
		t.Parallel()
		p := startMake(t, "BACKEND=sqlite")
		p.ctrlC(t)
		file := filepath.Join(p.tmp, "conveyor-template.db")
		if log := p.stderr.String(); !strings.Contains(log, "messages in the SQLite file "+file) ||
			!strings.Contains(log, `msg="SQLite file" path=`+file) {
			t.Errorf("the run did not print the file %s it uses:\n%s", file, log)
		}
		db, err := sqlitepubsub.OpenDB(file, "")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := sqlitepubsub.Verify(context.Background(), db); err != nil {
			t.Errorf("the file after the run: %v", err)
		}
	})
	t.Run("NATSThrowaway", func(t *testing.T) {
		// No server given: scripts/with-nats.sh starts a throwaway
		// nats-server, and removes it after the app's clean stop.
		t.Parallel()
		p := startMake(t, "BACKEND=nats", "NATS_FORCE_THROWAWAY=1")
		p.ctrlC(t)
		log := p.stderr.String()
		if !regexp.MustCompile(`msg="NATS ready" server=nats://127\.0\.0\.1:\d+ prefix=conveyor_template`).MatchString(log) {
			t.Errorf("the app did not log the throwaway server and the prefix conveyor_template:\n%s", log)
		}
	})
	t.Run("KafkaThrowaway", func(t *testing.T) {
		// No cluster given: scripts/with-kafka.sh starts a throwaway kfake
		// cluster of three brokers, which the app uses, and stops it
		// after the app's clean stop.
		t.Parallel()
		p := startMake(t, "BACKEND=kafka", "KAFKA_FORCE_THROWAWAY=1")
		p.ctrlC(t)
		log := p.stderr.String()
		m := regexp.MustCompile(`msg="Kafka cluster" brokers=(127\.0\.0\.1:\d+,127\.0\.0\.1:\d+,127\.0\.0\.1:\d+) prefix=conveyor_template\n`).FindStringSubmatch(log)
		if m == nil {
			t.Fatalf("the app did not log a throwaway cluster of three brokers and the prefix conveyor_template:\n%s", log)
		}
		for _, b := range strings.Split(m[1], ",") {
			if c, err := net.DialTimeout("tcp", b, 5*time.Second); err == nil {
				c.Close()
				t.Errorf("the throwaway broker %s still answers after the run", b)
			}
		}
		if left, _ := filepath.Glob(filepath.Join(p.tmp, "with-kafka.*")); len(left) > 0 {
			t.Errorf("scripts/with-kafka.sh left its directory behind: %v", left)
		}
	})
}

// makeProcess is `make run` running, in a process group of its own.
type makeProcess struct {
	cmd    *exec.Cmd
	stderr *syncbuf.Buffer // make's and the app's
	exited chan struct{}
	err    error  // Wait's error, once exited is closed
	tmp    string // make's TMPDIR, where the recipe builds the app
}

// startMake starts `make run` with the make variables and environment
// settings in args (NAME=value; the environment has no CONVEYOR_ setting
// but CONVEYOR_ADDR, a free 127.0.0.1 port) and returns once the app
// listens.
func startMake(t *testing.T, args ...string) *makeProcess {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is not installed")
	}
	cmd := exec.Command("make", "--no-print-directory", "-C", "..", "run", "GO="+goCommand())
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "CONVEYOR_"), name == "DATABASE_URL", name == "PORT", name == "PGPORT_FORCE_THROWAWAY", name == "TMPDIR",
			name == "NATS_URL", name == "NATS_FORCE_THROWAWAY", name == "KAFKA_BROKERS", name == "KAFKA_FORCE_THROWAWAY",
			name == "MAKEFLAGS", name == "MFLAGS", name == "MAKELEVEL", name == "BACKEND":
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	tmp := buildDir(t)
	cmd.Env = append(cmd.Env, "CONVEYOR_ADDR=127.0.0.1:0", "TMPDIR="+tmp)
	cmd.Env = append(cmd.Env, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a terminal's foreground group
	p := &makeProcess{cmd: cmd, stderr: &syncbuf.Buffer{}, exited: make(chan struct{}), tmp: tmp}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadString('\n')
			if strings.HasPrefix(line, "listening on ") || err != nil {
				lines <- line
				break
			}
		}
		io.Copy(io.Discard, r)
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
		}
		if t.Failed() {
			t.Logf("make run's stderr:\n%s", p.stderr)
		}
	})
	select {
	case line := <-lines:
		if !strings.HasPrefix(line, "listening on http://127.0.0.1:") {
			t.Fatalf("make run did not say where the app listens (%q)", line)
		}
	case <-time.After(3 * time.Minute): // it builds the app first
		t.Fatal("make run did not say where the app listens within 3 minutes")
	}
	return p
}

// ctrlC sends SIGINT to the process group, as Ctrl-C in a terminal does,
// and checks that the app stopped cleanly and make reported no error. make
// itself gets the SIGINT too: after its recipe ends it ends as the signal
// says (a shell shows it as status 130, with no message), or with 0.
func (p *makeProcess) ctrlC(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	p.wait(t)
	makeRace := makeWaitRace(p.stderr.String())
	if p.err != nil && !makeRace {
		var exit *exec.ExitError
		ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !errors.As(p.err, &exit) || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
			t.Errorf("make exited with %v on Ctrl-C, want success (or make's own SIGINT)", p.err)
		}
	}
	if strings.Contains(p.stderr.String(), "make: ***") && !makeRace {
		t.Errorf("make reported an error on Ctrl-C:\n%s", p.stderr)
	}
	if makeRace {
		t.Logf("GNU make lost the race between its SIGINT handler and the recipe's exit (make's own message, not the recipe's):\n%s", p.stderr)
	}
	p.checkStopped(t)
}

// makeWaitRace reports whether make's only complaint in log is GNU make's
// own race on Ctrl-C: when the recipe ends at once on the SIGINT that make
// gets too, and make is scheduled late (a loaded machine), its wait returns
// the recipe's status before its SIGINT handler runs; the handler then
// waits for the recipe again, finds no child and says "wait: No child
// processes" (exit status 2). The recipe did nothing wrong, and a user
// who presses Ctrl-C sees that line at worst; every other make error
// fails the test.
func makeWaitRace(log string) bool {
	found := false
	for _, line := range strings.Split(log, "\n") {
		if !strings.HasPrefix(line, "make: ***") {
			continue
		}
		switch strings.TrimSpace(line) {
		case "make: *** wait: No child processes.  Stop.", "make: *** Waiting for unfinished jobs....":
			found = true
		default:
			return false
		}
	}
	return found
}

func (p *makeProcess) wait(t *testing.T) {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		t.Fatal("make run did not exit within 60s of SIGINT")
	}
}

// checkStopped checks that the app logged its clean stop and no error.
func (p *makeProcess) checkStopped(t *testing.T) {
	t.Helper()
	log := p.stderr.String()
	if !strings.Contains(log, "msg=stopped") || strings.Contains(log, "level=ERROR") {
		t.Errorf("the app did not log a clean stop:\n%s", log)
	}
	// The recipe removes the directory it built the app in, on a signal too.
	left, _ := filepath.Glob(filepath.Join(p.tmp, "conveyor-run.*"))
	if len(left) > 0 {
		t.Errorf("make run left its build directory behind: %v", left)
	}
}

// buildDir returns a new directory for make's TMPDIR, open to the user a
// throwaway PostgreSQL server runs as (scripts/with-postgres.sh makes its
// data directory there), removed at the end of the test.
func buildDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "makerun-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// app returns the pid of the app's binary: the process named app under
// make.
func (p *makeProcess) app(t *testing.T) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, pid := range descendants(p.cmd.Process.Pid) {
			if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil && filepath.Base(exe) == "app" {
				return pid
			}
		}
	}
	t.Fatal("no process named app under make")
	return 0
}

// descendants returns the pids of the processes under pid (from /proc).
func descendants(pid int) []int {
	children := map[int][]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:])
		child, err := strconv.Atoi(strings.Fields(s)[0])
		if len(fields) < 2 || err != nil {
			continue
		}
		if parent, err := strconv.Atoi(fields[1]); err == nil {
			children[parent] = append(children[parent], child)
		}
	}
	var out []int
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return out
}

// newDatabase creates a database of its own on the test server, dropped
// in t.Cleanup, and returns a URL DSN for it with a password (the test
// server's, or a made-up one that trust authentication ignores) and that
// password.
func newDatabase(t *testing.T) (dsn, password string) {
	t.Helper()
	base := pgtest.DSN(t)
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("the test server's DSN is not a URL: %v", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "conveyor_makerun_" + hex.EncodeToString(b[:])
	conn := connect(t, base)
	if _, err := conn.Exec(context.Background(), "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err == nil {
			defer c.Close(ctx)
			_, err = c.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)")
		}
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	password, ok := u.User.Password()
	if !ok || password == "" {
		password = "not-logged-" + hex.EncodeToString(b[:])
	}
	u.User = url.UserPassword(u.User.Username(), password)
	u.Path = "/" + name
	return u.String(), password
}

// connect opens a connection to dsn, closed in t.Cleanup.
func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// haveInitdb reports whether scripts/with-postgres.sh can find initdb.
func haveInitdb() bool {
	if _, err := exec.LookPath("initdb"); err == nil {
		return true
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	return len(found) > 0
}

// TestMakeWaitRace: only GNU make's own lines of the race pass; a failed
// recipe does not.
func TestMakeWaitRace(t *testing.T) {
	race := "time=15:16:20.942 level=INFO msg=stopped handled=map[] failed=map[]\n" +
		"make: *** wait: No child processes.  Stop.\nmake: *** Waiting for unfinished jobs....\nmake: *** wait: No child processes.  Stop.\n"
	for _, tc := range []struct {
		log  string
		want bool
	}{
		{race, true},
		{"msg=stopped\n", false},
		{race + "make: *** [Makefile:35: run] Error 1\n", false},
		{"make: *** [Makefile:35: run] Interrupt\n", false},
	} {
		if got := makeWaitRace(tc.log); got != tc.want {
			t.Errorf("makeWaitRace(%q) = %v, want %v", tc.log, got, tc.want)
		}
	}
}
