package dbpubsub_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/di"
	"github.com/conveyorgo/conveyor/migrations"
	"github.com/conveyorgo/conveyor/pubsub"
)

// The examples need a PostgreSQL server, so they are compiled but not run;
// the tests beside them run the same code against a real server.

func Example() {
	ctx := context.Background()
	db, err := dbpubsub.Open(os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := migrations.Migrate(ctx, db); err != nil {
		log.Fatal(err)
	}
	ps, err := dbpubsub.New(db, dbpubsub.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer ps.Close()

	orders := ps.Topic("orders")
	if err := orders.Enqueue(ctx, []byte(`{"id":1}`)); err != nil {
		log.Fatal(err)
	}
	m, err := orders.Dequeue(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s (attempt %d)\n", m.Data(), pubsub.Attempt(m))
	if err := m.Ack(ctx); err != nil {
		log.Fatal(err)
	}
}

func ExampleWithTx() {
	ctx := context.Background()
	db, err := dbpubsub.Open(os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ps, err := dbpubsub.New(db, dbpubsub.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer ps.Close()
	orders := ps.Topic("orders")

	// The message exists if and only if the order does.
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewRaw("INSERT INTO orders (id) VALUES (?)", 1).Exec(ctx); err != nil {
			return err
		}
		return orders.Enqueue(dbpubsub.WithTx(ctx, tx), []byte(`{"id":1}`))
	})
	if err != nil {
		log.Fatal(err)
	}
}

func ExampleRegister() {
	ctx := di.NewContext(context.Background())
	db, err := dbpubsub.Open(os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	if err := di.RegisterBorrowed(ctx, db); err != nil { // the app closes db
		log.Fatal(err)
	}
	if err := dbpubsub.Register(ctx); err != nil { // was: channelpubsub.Register(ctx)
		log.Fatal(err)
	}
	defer db.Close()
	defer di.Shutdown(ctx)
	ps, err := di.Resolve[pubsub.PubSub](ctx)
	if err != nil {
		log.Fatal(err)
	}
	_ = ps.Topic("orders")
}
