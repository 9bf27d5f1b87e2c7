package reliability

import (
	"context"
	"os"
	"time"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/migrations"
)

// migrateDSNEnv is the DSN a migrate child migrates.
const migrateDSNEnv = "RELIABILITY_MIGRATE_DSN"

// childMigrate is a process of the concurrent-migration case: it runs
// migrations.Migrate on its DSN, then Verify.
func childMigrate() error {
	db, err := dbpubsub.Open(os.Getenv(migrateDSNEnv))
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := migrations.Migrate(ctx, db); err != nil {
		return err
	}
	return migrations.Verify(ctx, db)
}
