package main

import (
	"strings"
	"testing"
)

func TestRedactDSN(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ dsn, want string }{
		{"postgres://shop:s3cret@db:5432/shop?sslmode=disable", "postgres://shop:xxxxx@db:5432/shop?sslmode=disable"},
		{"postgresql://shop@db/shop?password=s3cret&sslmode=disable", "postgresql://shop@db/shop?password=xxxxx&sslmode=disable"},
		{"postgres://shop@db/shop", "postgres://shop@db/shop"},
		{"host=db user=shop password=s3cret dbname=shop", "host=db user=shop password=xxxxx dbname=shop"},
		{"host=db password = 's3 cr\\'et' dbname=shop", "host=db password=xxxxx dbname=shop"},
	} {
		got := redactDSN(c.dsn)
		if got != c.want || strings.Contains(got, "s3") {
			t.Errorf("redactDSN(%q) = %q, want %q", c.dsn, got, c.want)
		}
	}
}

func TestWithSearchPath(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ dsn, want string }{
		{"postgres://shop@db/shop?sslmode=disable", "postgres://shop@db/shop?search_path=shop_app&sslmode=disable"},
		{"postgres://shop@db/shop?search_path=public", "postgres://shop@db/shop?search_path=shop_app"},
		{"host=db dbname=shop", "host=db dbname=shop search_path=shop_app"},
	} {
		if got := withSearchPath(c.dsn, "shop_app"); got != c.want {
			t.Errorf("withSearchPath(%q) = %q, want %q", c.dsn, got, c.want)
		}
	}
}
