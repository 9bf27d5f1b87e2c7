package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgbench -N (the TPC-B-like script without the branch and teller
// updates: one UPDATE, one SELECT, one INSERT per transaction) on the same
// server, in a database of its own: the commit rate this server gives a
// one-transaction-per-message design.
type pgbenchRef struct{}

func init() { register(pgbenchRef{}) }

func (pgbenchRef) Name() string   { return "reference: pgbench -N" }
func (pgbenchRef) Kind() Kind     { return KindPostgres }
func (pgbenchRef) Baseline() bool { return false }
func (pgbenchRef) Config(cfg Config) string {
	return fmt.Sprintf("pgbench -i -s 1, then pgbench -N -M prepared -c %d -j %d -T %s (tps, transactions of 3 statements)",
		cfg.W, pgbenchThreads(cfg), pgbenchSeconds(cfg))
}

func pgbenchThreads(cfg Config) int { return max(1, min(cfg.W, runtime.NumCPU())) }

// pgbenchSeconds is how long pgbench runs: half of MaxRun, at least 1 s
// and at most 10 s.
func pgbenchSeconds(cfg Config) string {
	s := int(min(max(cfg.MaxRun/2, time.Second), 10*time.Second) / time.Second)
	return strconv.Itoa(s)
}

func (pgbenchRef) Open(context.Context, *Env, Config) (Instance, error) {
	return nil, fmt.Errorf("pgbench is a reference, not a queue")
}

var (
	tpsRE = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)
	txRE  = regexp.MustCompile(`number of transactions actually processed: ([0-9]+)`)
)

func (pgbenchRef) Measure(ctx context.Context, env *Env, cfg Config) (float64, int64, error) {
	bin, err := exec.LookPath("pgbench")
	if err != nil {
		return 0, 0, fmt.Errorf("pgbench is not installed (Debian: apt-get install postgresql-client): %w", err)
	}
	pc, err := pgx.ParseConfig(env.DSN)
	if err != nil {
		return 0, 0, err
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	dbname := "bench_pgbench_" + hex.EncodeToString(b[:])
	if _, err := env.Admin.Exec(ctx, "CREATE DATABASE "+dbname); err != nil {
		return 0, 0, fmt.Errorf("create database: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = env.Admin.Exec(dctx, "DROP DATABASE IF EXISTS "+dbname+" WITH (FORCE)")
	}()
	conn := []string{"-h", pc.Host, "-p", strconv.Itoa(int(pc.Port)), "-U", pc.User}
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, bin, append(append(args, conn...), dbname)...)
		cmd.Env = append(os.Environ(), "PGPASSWORD="+pc.Password)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if err != nil {
			return out.String(), fmt.Errorf("%s: %w\n%s", cmd, err, out.String())
		}
		return out.String(), nil
	}
	if _, err := run("-i", "-q", "-s", "1"); err != nil {
		return 0, 0, err
	}
	out, err := run("-N", "-M", "prepared", "-c", strconv.Itoa(cfg.W), "-j", strconv.Itoa(pgbenchThreads(cfg)),
		"-T", pgbenchSeconds(cfg))
	if err != nil {
		return 0, 0, err
	}
	m, n := tpsRE.FindStringSubmatch(out), txRE.FindStringSubmatch(out)
	if m == nil || n == nil {
		return 0, 0, fmt.Errorf("no tps in pgbench's output:\n%s", out)
	}
	tps, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, 0, err
	}
	count, err := strconv.ParseInt(n[1], 10, 64)
	return tps, count, err
}
