package relay_test

import (
	"context"
	"log"
	"os"
	"os/signal"

	"github.com/uptrace/bun"

	"github.com/conveyorgo/conveyor/dbpubsub"
	"github.com/conveyorgo/conveyor/natspubsub"
	"github.com/conveyorgo/conveyor/relay"
)

// The example needs PostgreSQL and NATS servers, so it is compiled but not
// run; TestCrashExactlyOnce runs the same relay against real servers.

// An app enqueues its messages in its own transactions on dbpubsub; the
// relay moves the committed ones to NATS JetStream until interrupted.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	db, err := dbpubsub.Open(os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	// A lost ack only makes a duplicate publish, which the stream drops.
	outbox, err := dbpubsub.New(db, dbpubsub.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer outbox.Close()
	stream, err := natspubsub.Connect(os.Getenv("NATS_URL"), natspubsub.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer stream.Close()

	// The app's side: the message exists if and only if the order does.
	orders := outbox.Topic("orders")
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewRaw("INSERT INTO orders (id) VALUES (?)", 1).Exec(ctx); err != nil {
			return err
		}
		return orders.Enqueue(dbpubsub.WithTx(ctx, tx), []byte(`{"id":1}`))
	})
	if err != nil {
		log.Fatal(err)
	}

	// The relay's side, in this process or another.
	r, err := relay.New(orders, stream.Topic("orders"), relay.Options{})
	if err != nil {
		log.Fatal(err)
	}
	if err := r.Run(ctx); err != nil {
		log.Fatal(err)
	}
	log.Printf("relay stopped: %+v", r.Stats())
}
