package sqlitepubsub_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/conveyorgo/conveyor/sqlitepubsub"
)

func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	ps, err := sqlitepubsub.Open(filepath.Join(dir, "app.db"), sqlitepubsub.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ps.Close()
	orders := ps.Topic("orders")
	if err := orders.Enqueue(ctx, []byte(`{"id":1}`)); err != nil {
		fmt.Println(err)
		return
	}
	m, err := orders.Dequeue(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(m.Data()))
	fmt.Println(m.Ack(ctx))
	// Output:
	// {"id":1}
	// <nil>
}
