// Package pgtest gives tests a real PostgreSQL schema of their own.
//
// The server is $DATABASE_URL when set, else the one answering on
// 127.0.0.1:5432 (user postgres, database postgres). When neither answers
// the test fails, saying to run `make test` or scripts/with-postgres.sh
// (which start a throwaway server) or to set DATABASE_URL: database tests
// are never skipped. Only loopback servers are used.
//
// scripts/with-postgres.sh sets DATABASE_URL for the command it runs; with
// PGPORT_FORCE_THROWAWAY=1 it starts a throwaway cluster even when a server
// answers on 127.0.0.1:5432.
//
//	dsn, db := pgtest.NewSchema(t) // fresh schema, dropped in t.Cleanup
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
)

// LocalDSN is the server tried when DATABASE_URL is not set.
const LocalDSN = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// EnvVar is the environment variable holding the base DSN.
const EnvVar = "DATABASE_URL"

const howTo = "run the tests with `make test` or `scripts/with-postgres.sh go test ./...` " +
	"(they start a throwaway PostgreSQL server), or set DATABASE_URL to a PostgreSQL server on 127.0.0.1"

var (
	baseOnce sync.Once
	baseDSN  string
	baseErr  error
)

// DSN returns the base DSN of the test server, checking once per process
// that it answers. It fails t, never skips it, when no server answers.
func DSN(t testing.TB) string {
	t.Helper()
	baseOnce.Do(func() { baseDSN, baseErr = findServer() })
	if baseErr != nil {
		t.Fatalf("pgtest: %v; %s", baseErr, howTo)
	}
	return baseDSN
}

func findServer() (string, error) {
	dsn := os.Getenv(EnvVar)
	if dsn == "" {
		dsn = LocalDSN
	}
	if err := checkLoopback(dsn); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		if os.Getenv(EnvVar) == "" {
			return "", fmt.Errorf("DATABASE_URL is not set and no PostgreSQL server answers at %s (%v)", LocalDSN, err)
		}
		return "", fmt.Errorf("the server of DATABASE_URL does not answer: %v", err)
	}
	dropStale(ctx, conn)
	return dsn, conn.Close(ctx)
}

// schemaPrefix starts the name of every schema NewSchema creates.
const schemaPrefix = "pgtest_"

// staleAfter is the age past which a test schema is taken for the leftover
// of a killed test process.
const staleAfter = 6 * time.Hour

// dropStale drops the test schemas older than staleAfter, best effort.
func dropStale(ctx context.Context, conn *pgx.Conn) {
	rows, err := conn.Query(ctx, "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'pgtest\\_%'")
	if err != nil {
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, name := range names {
		var unix int64
		if _, err := fmt.Sscanf(strings.TrimPrefix(name, schemaPrefix), "%d_", &unix); err != nil {
			continue
		}
		if time.Since(time.Unix(unix, 0)) > staleAfter {
			_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE")
		}
	}
}

// checkLoopback refuses a DSN whose host is not a loopback address.
func checkLoopback(dsn string) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("parse %s: %v", EnvVar, err)
	}
	hosts := []string{cfg.Host}
	for _, fb := range cfg.Fallbacks {
		hosts = append(hosts, fb.Host)
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); (ip == nil || !ip.IsLoopback()) && h != "localhost" {
			return fmt.Errorf("refusing to use host %q: tests only connect to a server on 127.0.0.1", h)
		}
	}
	return nil
}

// NewSchema creates a schema with a random name on the test server and
// returns a DSN whose search_path is that schema (so every connection made
// from it, pooled or not, uses it) and a *bun.DB opened on that DSN. The
// schema, with everything in it, is dropped and the DB closed in t.Cleanup.
func NewSchema(t testing.TB) (dsn string, db *bun.DB) {
	t.Helper()
	base := DSN(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	// The creation time in the name lets later runs drop what a killed
	// test process left behind.
	schema := fmt.Sprintf("%s%d_%s", schemaPrefix, time.Now().Unix(), hex.EncodeToString(b[:]))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgtest: connect: %v; %s", err, howTo)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	t.Cleanup(func() { dropSchema(t, base, schema) })

	dsn, err = WithSearchPath(base, schema)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	sqldb, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatalf("pgtest: open: %v", err)
	}
	sqldb.SetMaxOpenConns(10)
	sqldb.SetMaxIdleConns(10)
	db = bun.NewDB(sqldb, pgdialect.New())
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("pgtest: close db: %v", err)
		}
	})
	return dsn, db
}

func dropSchema(t testing.TB, base, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Errorf("pgtest: drop schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
		t.Errorf("pgtest: drop schema %s: %v", schema, err)
	}
}

// WithSearchPath returns dsn (a URL or key=value DSN) with search_path set
// to schema.
func WithSearchPath(dsn, schema string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		// key=value form
		return dsn + " search_path=" + schema, nil
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
