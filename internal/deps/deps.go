package deps
import (
 _ "github.com/samber/do/v2"
 _ "github.com/uptrace/bun"
 _ "github.com/uptrace/bun/dialect/pgdialect"
 _ "github.com/uptrace/bun/migrate"
 _ "github.com/jackc/pgx/v5/stdlib"
 _ "go.uber.org/goleak"
)
