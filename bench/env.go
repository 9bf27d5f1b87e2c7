package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Env is the servers the systems of the run share: PostgreSQL, where each
// instance works in a schema (or database) of its own, and NATS, where each
// works under a stream prefix of its own (env_nats.go). A server is only
// connected to when a system of the run needs it.
type Env struct {
	DSN   string        // base DSN, from DATABASE_URL
	Admin *pgxpool.Pool // for creating and dropping schemas; nil without PostgreSQL
	NATS  *NATSEnv      // nil without NATS
	Kafka *KafkaEnv     // nil without Kafka
}

// localDSN is tried when DATABASE_URL is not set.
const localDSN = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// newEnv connects to the servers the systems of the given kinds need:
// PostgreSQL for KindPostgres, NATS for KindNATS.
func newEnv(ctx context.Context, kinds ...Kind) (*Env, error) {
	env := &Env{}
	if slices.Contains(kinds, KindPostgres) {
		dsn, admin, err := connectPostgres(ctx)
		if err != nil {
			return nil, err
		}
		env.DSN, env.Admin = dsn, admin
	}
	if slices.Contains(kinds, KindNATS) {
		n, err := connectNATS(ctx)
		if err != nil {
			env.Close()
			return nil, err
		}
		env.NATS = n
	}
	if slices.Contains(kinds, KindKafka) {
		k, err := connectKafka(ctx)
		if err != nil {
			env.Close()
			return nil, err
		}
		env.Kafka = k
	}
	return env, nil
}

// connectPostgres connects to $DATABASE_URL (or the local server), refusing
// any host that is not a loopback address.
func connectPostgres(ctx context.Context) (string, *pgxpool.Pool, error) {
	dsn := os.Getenv("DATABASE_URL")
	if dsn == "" {
		dsn = localDSN
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "", nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	hosts := []string{cfg.Host}
	for _, fb := range cfg.Fallbacks {
		hosts = append(hosts, fb.Host)
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); (ip == nil || !ip.IsLoopback()) && h != "localhost" {
			return "", nil, fmt.Errorf("refusing host %q: the benchmark only talks to a server on 127.0.0.1 (run it with scripts/with-postgres.sh)", h)
		}
	}
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return "", nil, err
	}
	pcfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return "", nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return "", nil, fmt.Errorf("no PostgreSQL server answers at DATABASE_URL (%v); run through scripts/with-postgres.sh", err)
	}
	return dsn, pool, nil
}

func (e *Env) Close() {
	if e.Admin != nil {
		e.Admin.Close()
	}
	if e.NATS != nil {
		e.NATS.Close()
	}
	if e.Kafka != nil {
		e.Kafka.Close()
	}
}

// Schema is a schema made for one instance.
type Schema struct {
	Name string
	DSN  string // the base DSN with search_path set to the schema
	env  *Env
}

// NewSchema creates a fresh schema named bench_<prefix>_<random>.
func (e *Env) NewSchema(ctx context.Context, prefix string) (*Schema, error) {
	if e.Admin == nil {
		return nil, errors.New("no PostgreSQL server in this run")
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "bench_" + prefix + "_" + hex.EncodeToString(b[:])
	if _, err := e.Admin.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		return nil, fmt.Errorf("create schema %s: %w", name, err)
	}
	return &Schema{Name: name, DSN: withParam(e.DSN, "search_path", name), env: e}, nil
}

// Drop drops the schema and everything in it.
func (s *Schema) Drop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := s.env.Admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+s.Name+" CASCADE")
	return err
}

// withParam sets a connection parameter in a URL or keyword/value DSN.
func withParam(dsn, key, value string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err == nil {
			q := u.Query()
			q.Set(key, value)
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	return dsn + " " + key + "=" + value
}

// settings returns the server's version and the settings that matter for
// queue throughput.
func (e *Env) settings(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	var v string
	if err := e.Admin.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return nil, err
	}
	out["server_version"] = v
	for _, name := range []string{"fsync", "synchronous_commit", "full_page_writes", "wal_level",
		"shared_buffers", "work_mem", "max_connections", "max_wal_size", "checkpoint_timeout",
		"autovacuum", "shared_preload_libraries"} {
		if err := e.Admin.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}
