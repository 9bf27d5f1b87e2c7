package reliability

import (
	"net"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
)

// serverOf returns the host:port of dsn's server.
func serverOf(t *testing.T, dsn string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("parse DSN: %v", err)
	}
	return net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
}
